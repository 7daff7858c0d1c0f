import { runProcess } from './process.js';
import type { ExecOptions, ExecResult, Transport } from './types.js';

/** This machine as the node: sh -c, through sudo -n when not root. */
export class LocalTransport implements Transport {
  readonly target = 'local';
  exec(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    const shell = ['sh', '-c', 'eval "$(cat)"'];
    return runProcess(process.getuid?.() === 0 ? shell : ['sudo', '-n', ...shell], { ...options, stdin: script });
  }
  async close(): Promise<void> {}
}
