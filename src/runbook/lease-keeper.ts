import { acquireLease, heldByOther, readLease, releaseLease, renewLease, JOURNAL_ANNOTATION, type LeaseOptions } from '../cluster/lease.js';
import type { Cluster } from '../cluster/api.js';
import { RunbookError } from './errors.js';
import { parseJournal, type Journal } from './journal.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Holds the node's Lease for a run: renews it in the background and writes the journal into it, one write at a time. */
export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  private chain: Promise<unknown> = Promise.resolve();
  private lost?: Error;
  private held = false;

  constructor(private readonly cluster: Cluster, private readonly options: LeaseOptions) {}

  /** The journal of the last run on this node, and who holds the lease now (if anyone else does). */
  async inspect(): Promise<{ journal?: Journal; holder?: string; expiresInMs: number }> {
    const lease = await readLease(this.cluster, this.options.namespace, this.options.node);
    const holder = heldByOther(lease, this.options.holder);
    const renewed = Date.parse(lease?.spec.renewTime ?? '');
    const expiresInMs = holder ? renewed + (lease?.spec.leaseDurationSeconds ?? 0) * 1000 - Date.now() : 0;
    return { journal: parseJournal(lease?.metadata.annotations?.[JOURNAL_ANNOTATION]), holder, expiresInMs };
  }

  /**
   * Takes the lease. A holder that left an unfinished journal and stopped renewing (a killed run) is waited out,
   * for at most one lease duration; a live holder keeps renewing, and we give up with `locked`.
   */
  async acquire(waitForDeadHolder: boolean): Promise<void> {
    const deadline = Date.now() + (this.options.durationSeconds + 3) * 1000;
    for (;;) {
      try {
        await acquireLease(this.cluster, this.options);
        break;
      } catch (e) {
        if (!(e instanceof RunbookError && e.code === 'locked') || !waitForDeadHolder || Date.now() > deadline) throw e;
        await sleep(1_000);
      }
    }
    this.held = true;
    const every = Math.max(1_000, (this.options.durationSeconds * 1000) / 3);
    this.timer = setInterval(() => void this.enqueue(() => renewLease(this.cluster, this.options)).catch((e) => (this.lost = e)), every);
    this.timer.unref();
  }

  async save(journal: Journal): Promise<void> {
    if (!this.held) return;
    if (this.lost) throw this.lost;
    journal.updatedAt = new Date().toISOString();
    await this.enqueue(() => renewLease(this.cluster, this.options, JSON.stringify(journal)));
  }

  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (!this.held) return;
    this.held = false;
    await this.enqueue(() => releaseLease(this.cluster, this.options));
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }
}
