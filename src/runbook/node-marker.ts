import type { Cluster } from '../cluster/api.js';
import type { Node } from '../cluster/types.js';
import { messageOf } from '../errors.js';
import type { RunEvent } from './events.js';
import type { RunReport } from './report.js';

// While a run maintains a node, the node says so where operators look: a label (`kubectl get nodes -L
// node-maint.io/state`), annotations with the run and its versions, and Events (`kubectl describe node`). Marks are
// written through the run's fenced cluster, so none is written without the Lease, and never fail the run.
export const STATE_LABEL = 'node-maint.io/state';
export const RUN_ID_ANNOTATION = 'node-maint.io/run-id';
export const FROM_ANNOTATION = 'node-maint.io/from';
export const TO_ANNOTATION = 'node-maint.io/to';
export const SKIPPED_ANNOTATION = 'node-maint.io/skipped';
const COMPONENT = 'node-maint';

const STATE_OF_STEP: Record<string, string> = {
  preflight: 'preflight',
  cordon: 'draining',
  drain: 'draining',
  'stop-kubelet': 'upgrading',
  'teardown-sandboxes': 'upgrading',
  'clear-state': 'upgrading',
  'upgrade-runtime': 'upgrading',
  'reboot-node': 'rebooting',
  'start-kubelet': 'verifying',
  'prove-node': 'verifying',
  uncordon: 'verifying',
  verify: 'verifying',
};

/** The label's value when a run ends, by its result. */
export function finalState(result: RunReport['result']): string {
  if (['upgraded', 'downgraded', 'changed', 'maintained', 'rebooted', 'nothing-to-do'].includes(result)) return 'done';
  if (result === 'rolled-back') return 'rolled-back';
  if (result === 'stopped') return 'stopped';
  return 'failed';
}

const pairs = (versions: Record<string, string>) => Object.entries(versions).map(([p, v]) => `${p}=${v}`).join(',');

export class NodeMarker {
  private queue: Promise<void> = Promise.resolve();
  private active = false;
  private state = '';
  private warned = false;
  private uid?: string;
  /** A run that changes no package: it reboots the node (a run with neither does nothing and marks nothing). */
  private rebootOnly = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly node: string,
    private readonly runId: string,
    private readonly onLine: (message: string) => void,
  ) {}

  /** From here on the run holds the Lease and changes the node: it is marked. */
  begin(from: Record<string, string>, to: Record<string, string>, state: string): void {
    if (this.active) return;
    this.active = true;
    this.rebootOnly = Object.keys(to).length === 0;
    // A fleet's earlier skip is history once a run changes the node again; a reboot alone has no versions to name.
    const versions = this.rebootOnly ? { [FROM_ANNOTATION]: null, [TO_ANNOTATION]: null } : { [FROM_ANNOTATION]: pairs(from), [TO_ANNOTATION]: pairs(to) };
    this.setState(this.stateOf(state), { [RUN_ID_ANNOTATION]: this.runId, ...versions, [SKIPPED_ANNOTATION]: null });
    this.event('Normal', 'MaintenanceStarted', `node-maint run ${this.runId}: ${this.rebootOnly ? 'a reboot, no package changed' : `${pairs(from)} -> ${pairs(to)}`}`);
  }

  /** A reboot alone is not an upgrade: its steps before the reboot say `rebooting`. */
  private stateOf(state: string): string {
    return this.rebootOnly && state === 'upgrading' ? 'rebooting' : state;
  }

  /** Follows the run's events: the state of each step as it starts, an Event at the milestones. */
  observe(e: RunEvent): void {
    if (!this.active) return;
    if (e.type === 'step' && e.phase === 'start' && STATE_OF_STEP[e.step]) this.setState(this.stateOf(STATE_OF_STEP[e.step]!));
    if (e.type === 'step' && e.phase === 'done' && e.step === 'drain') this.event('Normal', 'Drained', e.summary);
    if (e.type === 'step' && e.phase === 'done' && e.step === 'upgrade-runtime') this.event('Normal', 'RuntimeUpgraded', e.summary);
    if (e.type === 'step' && e.phase === 'done' && e.step === 'reboot-node') this.event('Normal', 'Rebooted', e.summary);
  }

  /** The run's end: the final state, and an Event saying how it ended. Waits for every mark to be written. */
  async finish(report: RunReport): Promise<void> {
    if (this.active) {
      const state = finalState(report.result);
      this.setState(state);
      const why = report.error?.message ?? '';
      if (report.result === 'leaks-found') this.event('Warning', 'LeakFound', `${why}${report.next ? `; ${report.next}` : ''}`);
      else if (state === 'rolled-back') this.event('Warning', 'RolledBack', `rolled back to ${pairs(report.versions.before)}: ${why}`);
      else if (state === 'stopped') this.event('Warning', 'MaintenanceStopped', `${why}${report.next ? `; ${report.next}` : ''}`);
      else if (state === 'failed') this.event('Warning', 'MaintenanceFailed', `${report.result}: ${why}${report.next ? `; ${report.next}` : ''}`);
      else this.event('Normal', 'MaintenanceDone', `${[pairs(report.versions.after), report.reboot?.after ? 'rebooted' : ''].filter(Boolean).join(', ') || 'nothing changed'}, audit clean`);
    }
    await this.queue;
  }

  /** A fleet passed the node by, left as it was (its run ended without changing it, or rolled back): why, on the node. */
  async skipped(reason: string): Promise<void> {
    this.setState('skipped', { [SKIPPED_ANNOTATION]: reason.slice(0, 1000) });
    this.event('Warning', 'MaintenanceSkipped', `passed by, left as it was (undrainable): ${reason}`);
    await this.queue;
  }

  private setState(state: string, annotations: Record<string, string | null> = {}): void {
    if (state === this.state && Object.keys(annotations).length === 0) return;
    this.state = state;
    this.write(async () => {
      const node = await this.cluster.mergePatch<Node>(`/api/v1/nodes/${encodeURIComponent(this.node)}`, { metadata: { labels: { [STATE_LABEL]: state }, annotations } });
      this.uid = node.metadata.uid;
    });
  }

  private event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.write(async () => {
      const now = new Date().toISOString();
      await this.cluster.request('POST', '/api/v1/namespaces/default/events', {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${this.node}.node-maint.`, namespace: 'default' },
        involvedObject: { apiVersion: 'v1', kind: 'Node', name: this.node, ...(this.uid ? { uid: this.uid } : {}) },
        reason,
        message: message.slice(0, 1000),
        type,
        source: { component: COMPONENT },
        reportingComponent: COMPONENT,
        reportingInstance: this.runId,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    });
  }

  /** In order, one at a time, in the background: a mark that cannot be written is said once and never fails the run. */
  private write(fn: () => Promise<void>): void {
    this.queue = this.queue.then(fn).catch((e) => {
      if (!this.warned) this.onLine(`could not mark the node (${messageOf(e)}); the run goes on`);
      this.warned = true;
    });
  }
}
