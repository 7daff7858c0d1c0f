import { recordedScript } from '../commands.js';
import { NEVER_STOPPED, withinStopGrace } from '../../stop.js';
import { DEFAULT_COMMAND_TIMEOUT_MS, type ExecOptions, type ExecResult, type Transport } from './types.js';

export interface FenceOptions {
  /** Told of every command sent (the context's cached state is then no longer the node's). */
  onCommand?: () => void;
  /** The run whose commands leave a record on the node while they run (node/commands.ts): changes only. */
  recordFor?: string;
  /** An operator's stop: a command under way gets a short grace to answer, then goes on on the node without us. */
  stop?: AbortSignal;
}

/** A transport whose every command waits for the fence first: the run's Lease, held, before anything reaches the node. */
export class FencedTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly fence: () => Promise<void>,
    private readonly options: FenceOptions = {},
  ) {}

  get target(): string {
    return this.inner.target;
  }

  async exec(script: string, options: ExecOptions = {}): Promise<ExecResult> {
    await this.fence();
    this.options.onCommand?.();
    const { recordFor, stop = NEVER_STOPPED } = this.options;
    const sent = recordFor ? recordedScript(recordFor, script, options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS, options.what) : script;
    return withinStopGrace(this.inner.exec(sent, options), stop, `the command on ${this.target}${options.what ? ` (${options.what})` : ''}`);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
