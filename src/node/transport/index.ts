import { RunbookError } from '../../errors.js';
import { DockerExecTransport } from './docker-exec.js';
import { LocalTransport } from './local.js';
import { SshTransport, type SshOptions } from './ssh.js';
import type { Transport } from './types.js';

export type TransportSpec =
  | ({ kind: 'ssh' } & SshOptions)
  | { kind: 'docker-exec'; container: string; dockerHost?: string }
  | { kind: 'local' };

/** `deferIfUnreachable`: see SshTransport.connect (the other transports connect per command). */
export async function openTransport(spec: TransportSpec, deferIfUnreachable?: () => Promise<boolean>): Promise<Transport> {
  switch (spec.kind) {
    case 'ssh':
      return SshTransport.connect(spec, deferIfUnreachable);
    case 'docker-exec':
      return DockerExecTransport.connect(spec);
    case 'local':
      return new LocalTransport();
    default:
      throw new RunbookError('usage', `unknown transport ${(spec as { kind: string }).kind}`);
  }
}

export type { Transport, ExecResult, ExecOptions } from './types.js';
export { run, CommandError } from './types.js';
export { quote, command } from './quote.js';
