import type { Cluster } from '../cluster/api.js';
import { isEnded, runsPath, type MaintenanceRun } from './run-object.js';

// An idle agent's one request: a watch on its node's MaintenanceRun, held for half an hour to an hour (spread, so a
// fleet's agents do not come back together), resumed from the last version seen, listed again only when the API has
// forgotten that version. Its own status writes come back as events and are passed over: they need no look.

/** Whether the run needs its node's agent: not ended yet, or ended with its unit still on the node. */
export const needsAgent = (run: MaintenanceRun | undefined) => !!run && (!isEnded(run) || (!!run.status?.unit && !run.status.unitRemoved));

export class RunWatch {
  private version?: string;

  constructor(
    private readonly cluster: Cluster,
    private readonly node: string,
    private readonly timeoutSeconds = () => 1800 + Math.floor(Math.random() * 1800),
  ) {}

  private get selector() {
    return `fieldSelector=${encodeURIComponent(`metadata.name=${this.node}`)}`;
  }

  /** Returns once the node's MaintenanceRun needs the agent (or was deleted: its unit may need tidying). */
  async untilWork(): Promise<void> {
    for (;;) {
      if (!this.version) {
        const list = await this.cluster.get<{ metadata: { resourceVersion: string }; items: MaintenanceRun[] }>(`${runsPath}?${this.selector}`);
        this.version = list.metadata.resourceVersion;
        if (list.items.some(needsAgent)) return;
      }
      let work = false;
      const path = `${runsPath}?watch=1&allowWatchBookmarks=true&${this.selector}&resourceVersion=${this.version}&timeoutSeconds=${this.timeoutSeconds()}`;
      const watch = this.cluster.watch<MaintenanceRun>(path, (type, object) => {
        // 410 Gone (the version is older than the API keeps): list again.
        if (type === 'ERROR') {
          this.version = undefined;
          return watch.stop();
        }
        if (object?.metadata?.resourceVersion) this.version = object.metadata.resourceVersion;
        if (type === 'DELETED' || (type !== 'BOOKMARK' && needsAgent(object))) {
          work = true;
          watch.stop();
        }
      });
      try {
        await watch.done;
      } catch (e) {
        this.version = undefined;
        throw e;
      }
      if (work) return;
    }
  }
}
