import { fleetEnded, type FleetMessage, type LaterNodes, type NodeEnd } from './notify.js';
import { HELD_RESULT, SKIPPED_RESULT } from './undrainable.js';

// What this `pulumi up` did to its nodes, kept in the provider's process (one for every node of the deployment). A
// failed node ends the program at once (the engine stops it, the failed node's registration never answering), so the
// program cannot tell a failed fleet's end: the provider does, when the last node still running has ended.
interface FleetRun {
  running: Set<string>;
  ends: Map<string, NodeEnd>;
  later?: LaterNodes;
}

export class FleetRuns {
  private readonly runs = new Map<string, FleetRun>();

  started(fleet: string, node: string): void {
    const run = this.runs.get(fleet) ?? { running: new Set<string>(), ends: new Map<string, NodeEnd>() };
    this.runs.set(fleet, run);
    run.running.add(node);
  }

  /** The nodes of this fleet whose runs are under way in this process now. */
  running(fleet: string): string[] {
    return [...(this.runs.get(fleet)?.running ?? [])];
  }

  /** The fleet-failed message once a node failed and none is running any more; undefined while the fleet goes on. */
  ended(fleet: string, node: string, end: NodeEnd, later: LaterNodes): FleetMessage | undefined {
    const run = this.runs.get(fleet);
    if (!run) return undefined;
    run.running.delete(node);
    run.ends.set(node, end);
    if (end.error !== undefined) run.later ??= later;
    if (run.later === undefined || run.running.size > 0) return undefined;
    this.runs.delete(fleet);
    const passed = (result: string) => Object.fromEntries([...run.ends].flatMap(([n, e]) => (e.result === result ? [[n, e.reason ?? '']] : [])));
    return fleetEnded(fleet, Object.fromEntries(run.ends), passed(SKIPPED_RESULT), run.later, passed(HELD_RESULT));
  }
}
