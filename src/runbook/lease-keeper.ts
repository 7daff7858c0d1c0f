import pRetry, { AbortError } from 'p-retry';
import { isConflict, isNotFound, isTransient, type Cluster } from '../cluster/api.js';
import { JOURNAL_ANNOTATION, judgeHolder, leaseName, leasePath, leaseRecord, microTime, readLease, takenSpec, type LeaseTiming } from '../cluster/lease.js';
import type { Lease } from '../cluster/types.js';
import { RunbookError } from '../errors.js';
import { journalOf, type Journal } from './journal.js';
import { waitUntil } from '../wait.js';

export interface LeaseKeeperOptions extends LeaseTiming {
  namespace: string;
  node: string;
  holder: string;
  /** How long a fenced change waits for a suspended Lease to be renewed again (an API outage) before it gives up. */
  outageToleranceSeconds: number;
  onLine?: (message: string) => void;
  /** An operator's stop: taking the Lease, or waiting for it to be renewed, gives up at once. */
  stop?: AbortSignal;
}

type State = 'idle' | 'held' | 'suspended' | 'lost';

/**
 * Holds the node's Lease for a run, as client-go's leader election holds its own: renewed every retry period; not
 * renewed for the renew deadline, it is suspended and every change to the node waits (the fence); renewed again by a
 * write conditional on the resourceVersion we last wrote, which proves nobody took it meanwhile; lost for good the
 * moment someone else has written it. The journal is written into it, one write at a time.
 */
export class LeaseKeeper {
  private state: State = 'idle';
  private lease?: Lease;
  private lastRenewMs = 0;
  private lostTo = '';
  private timer?: NodeJS.Timeout;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly cluster: Cluster, private readonly options: LeaseKeeperOptions) {}

  /** The journal of the last run on this node, read-only (the dry run's view). */
  async inspect(): Promise<Journal | undefined> {
    return journalOf(await readLease(this.cluster, this.options.namespace, this.options.node));
  }

  /**
   * Takes the Lease and returns the journal it carried. A holder whose record keeps changing is alive: `locked`. One
   * whose record stays the same for a lease duration (by our clock), or a run of this machine whose process is gone,
   * has abandoned it: taken over.
   */
  async acquire(): Promise<Journal | undefined> {
    const { durationSeconds, retryPeriodSeconds, namespace, node, holder, outageToleranceSeconds } = this.options;
    let firstSeen: { record: string; atMs: number } | undefined;
    let previous: Lease | undefined;
    const name = `${namespace}/${leaseName(node)}`;
    await waitUntil(
      `the Lease ${name}`,
      async () => {
        const lease = await pRetry(() => readLease(this.cluster, namespace, node, retryPeriodSeconds * 2500), {
          maxRetryTime: outageToleranceSeconds * 1000,
          shouldRetry: ({ error }) => isTransient(error),
        });
        const verdict = judgeHolder(lease, holder, firstSeen, Date.now(), durationSeconds);
        if (verdict === 'alive') throw new RunbookError('locked', `node ${node} is being maintained by ${lease!.spec.holderIdentity} (Lease ${name} is being renewed)`);
        if (verdict === 'fenced') {
          const declared = lease!.spec.leaseDurationSeconds!;
          const runsOut = new Date((firstSeen?.atMs ?? Date.now()) + declared * 1000).toISOString();
          throw new RunbookError('locked', `node ${node} is held by ${lease!.spec.holderIdentity} (Lease ${name}, leaseDurationSeconds ${declared}, longer than this run waits: ${durationSeconds}s); unless its holder renews it, it runs out at ${runsOut} by this machine's clock (seen now, plus its duration); this run does not wait that out, nor take it then: once nobody holds the node, delete it (kubectl -n ${namespace} delete lease ${leaseName(node)})`);
        }
        if (verdict === 'held') {
          if (!firstSeen) this.options.onLine?.(`the Lease ${name} is held by ${lease!.spec.holderIdentity}; watching it for up to ${durationSeconds}s to see whether its holder still renews`);
          firstSeen ??= { record: leaseRecord(lease), atMs: Date.now() };
          return 'held';
        }
        if (verdict === 'abandoned') this.options.onLine?.(`taking over the Lease from ${lease!.spec.holderIdentity}, which stopped renewing it`);
        try {
          // Held from the moment the take is stored, so that whatever ends the wait next gives it up.
          this.lease = await this.take(lease);
          this.state = 'held';
          this.lastRenewMs = performance.now();
          previous = lease;
          return true;
        } catch (e) {
          // Someone wrote it between our read and our write: look again.
          if (!isConflict(e)) throw e;
          firstSeen = undefined;
          return 'changed while taking it';
        }
      },
      { timeoutMs: (durationSeconds * 2 + outageToleranceSeconds) * 1000, intervalMs: retryPeriodSeconds * 1000, signal: this.options.stop },
    ).catch(async (e: unknown) => {
      // A stop ends the wait even when its last look took the Lease (the take's answer came after the stop): given up
      // again, not left held by a run that ends (it would bar the node to every other machine for its duration).
      await this.release();
      throw e;
    });
    this.timer = setInterval(() => void this.enqueue(() => this.renew()).catch(() => undefined), retryPeriodSeconds * 1000);
    this.timer.unref();
    return journalOf(previous);
  }

  /** Resolves while we hold the Lease; waits while it is suspended; throws `leaseLost` once someone else holds it. */
  async fence(): Promise<void> {
    if (this.current() === 'held' || this.state === 'idle') return;
    this.options.onLine?.('the Lease could not be renewed in time: no change to the node until it is renewed again');
    await waitUntil(
      'the Lease to be renewed',
      async () => {
        if (this.state === 'lost') throw this.lostError();
        return this.current() === 'held' || this.state === 'idle' ? true : 'suspended';
      },
      { timeoutMs: this.options.outageToleranceSeconds * 1000, intervalMs: 250, signal: this.options.stop },
    ).catch((e) => {
      if (e instanceof RunbookError) throw e;
      throw new RunbookError('leaseLost', `node ${this.options.node}: the Lease could not be renewed for ${this.options.outageToleranceSeconds}s; this run stopped changing the node`);
    });
  }

  /** The state as of now: past the renew deadline the Lease is suspended, even while a renewal still hangs. */
  private current(): State {
    if (this.state === 'held' && performance.now() - this.lastRenewMs > this.options.renewDeadlineSeconds * 1000) this.state = 'suspended';
    return this.state;
  }

  get isLost(): boolean {
    return this.state === 'lost';
  }

  /** Writes the journal into the Lease (and renews it). */
  async save(journal: Journal): Promise<void> {
    if (this.state === 'idle') return;
    journal.updatedAt = new Date().toISOString();
    const text = JSON.stringify(journal);
    // A journal write is retried through an outage: it is what a resumed run or a rollback will trust.
    await this.enqueue(() =>
      pRetry(
        async () => {
          if (this.state === 'lost') throw new AbortError(this.lostError());
          if (!(await this.renew(text))) throw new Error('the journal could not be written into the Lease');
        },
        { retries: Number.POSITIVE_INFINITY, factor: 1, minTimeout: this.options.retryPeriodSeconds * 1000, maxRetryTime: this.options.outageToleranceSeconds * 1000 },
      ).catch((e) => {
        if (e instanceof RunbookError) throw e;
        throw new RunbookError('unreachable', `node ${this.options.node}: could not write the journal into the Lease for ${this.options.outageToleranceSeconds}s`);
      }),
    );
  }

  /** Gives the Lease up; the journal stays on it as the record of the last run. */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.state !== 'held' && this.state !== 'suspended') return;
    await this.enqueue(async () => {
      // The Lease as the last renewal or journal write queued before this left it: a copy taken before them would
      // carry an old resourceVersion, be refused (409), and leave the Lease held after a finished run.
      const lease = this.lease;
      // Left held if it cannot be written: a later run of this machine takes it over at once, others after its time.
      if (lease) {
        const free = { ...lease, spec: { ...lease.spec, holderIdentity: null, acquireTime: null, renewTime: microTime() } };
        await pRetry(() => this.put(free), { retries: 4, minTimeout: this.options.retryPeriodSeconds * 1000, shouldRetry: ({ error }) => isTransient(error) }).catch(() => undefined);
      }
      this.state = 'idle';
    });
  }

  /** One renewal attempt: true when the Lease is ours again. Conditional on the resourceVersion we last wrote. */
  private async renew(journal?: string): Promise<boolean> {
    if (!this.lease || this.state === 'lost' || this.state === 'idle') return false;
    const annotations = { ...this.lease.metadata.annotations, ...(journal !== undefined ? { [JOURNAL_ANNOTATION]: journal } : {}) };
    try {
      this.lease = await this.put({ ...this.lease, metadata: { ...this.lease.metadata, annotations }, spec: { ...this.lease.spec, renewTime: microTime() } });
      if (this.state === 'suspended') this.options.onLine?.('the Lease is renewed again: changes to the node go on');
      this.state = 'held';
      this.lastRenewMs = performance.now();
      return true;
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return this.recheck();
      this.current();
      return false;
    }
  }

  /** After a 409: still ours (someone only edited it) or taken by someone else. */
  private async recheck(): Promise<boolean> {
    try {
      const current = await readLease(this.cluster, this.options.namespace, this.options.node, this.options.retryPeriodSeconds * 2500);
      if (current?.spec.holderIdentity === this.options.holder) {
        this.lease = current;
        return false;
      }
      this.lostTo = current?.spec.holderIdentity ?? 'nobody (the Lease was deleted or released)';
      this.state = 'lost';
      if (this.timer) clearInterval(this.timer);
      // Said the moment it is known: a command already under way still finishes, nothing after it starts.
      this.options.onLine?.(`the Lease was taken by ${this.lostTo}: no further change to the node`);
    } catch {
      // not known yet: the next renewal asks again
    }
    return false;
  }

  private take(existing: Lease | undefined): Promise<Lease> {
    const { namespace, node, holder, durationSeconds } = this.options;
    const spec = takenSpec(existing, holder, durationSeconds);
    if (!existing) {
      return this.cluster.request<Lease>('POST', leasePath(namespace), {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: leaseName(node), namespace, labels: { 'app.kubernetes.io/managed-by': 'node-maint' } },
        spec,
      }, undefined, { retry: false });
    }
    return this.put({ ...existing, spec });
  }

  private put(lease: Lease): Promise<Lease> {
    return this.cluster.request<Lease>('PUT', leasePath(this.options.namespace, leaseName(this.options.node)), lease, undefined, {
      retry: false,
      timeoutMs: this.options.retryPeriodSeconds * 2500,
    });
  }

  private lostError(): RunbookError {
    return new RunbookError('leaseLost', `node ${this.options.node}: the Lease was taken by ${this.lostTo}; this run stopped changing the node`);
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }
}
