import type { ExecOptions, ExecResult, Transport } from './types.js';

/** A transport whose every command waits for the fence first: the run's Lease, held, before anything reaches the node. */
export class FencedTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly fence: () => Promise<void>,
    /** Told of every command sent (the context's cached state is then no longer the node's). */
    private readonly onCommand: () => void = () => undefined,
  ) {}

  get target(): string {
    return this.inner.target;
  }

  async exec(script: string, options?: ExecOptions): Promise<ExecResult> {
    await this.fence();
    this.onCommand();
    return this.inner.exec(script, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
