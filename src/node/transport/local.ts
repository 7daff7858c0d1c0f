import { runScript } from './process.js';
import type { ExecOptions, ExecResult, Transport } from './types.js';

/** This machine as the node: sh -c, through sudo -n when not root. */
export class LocalTransport implements Transport {
  readonly target = 'local';
  exec(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
    return runScript(this.target, (shell) => [...sudo, 'sh', '-c', shell], script, options);
  }
  async close(): Promise<void> {}
}
