import * as pulumi from '@pulumi/pulumi';
import { fleetEnded, postMessage } from './notify.js';
import type { NodeRuntimeUpgrade } from './resource.js';
import { HELD_RESULT, SKIPPED_RESULT } from './undrainable.js';

// The stack outputs that wait for every node: the nodes skipped as undrainable, and the fleet's end.

/** The nodes left as they were with `result` (passed by as undrainable, or held), with why, said once more at the end of `pulumi up`. */
function passedNodes(resources: Record<string, NodeRuntimeUpgrade>, result: string, why: (r: NodeRuntimeUpgrade) => pulumi.Output<string | null>, said: string): pulumi.Output<Record<string, string>> {
  const each = Object.entries(resources).map(([name, r]) => pulumi.all([r.result, why(r)]).apply(([res, reason]) => [name, res === result ? (reason ?? '') : undefined] as const));
  return pulumi.all(each).apply((pairs) => {
    const passed = Object.fromEntries(pairs.filter(([, reason]) => reason !== undefined)) as Record<string, string>;
    const names = Object.keys(passed);
    if (names.length > 0) pulumi.log.warn(`${names.length} node(s) ${said}: ${names.map((n) => `${n} (${passed[n]})`).join('; ')}`);
    return passed;
  });
}

/** The nodes passed by as undrainable, with why. */
export const skippedNodes = (resources: Record<string, NodeRuntimeUpgrade>) => passedNodes(resources, SKIPPED_RESULT, (r) => r.skipped, 'skipped as undrainable, left as they were');

/** The nodes the window or the pause held, with why: not a failure, the next `pulumi up` does them. */
export const heldNodes = (resources: Record<string, NodeRuntimeUpgrade>) => passedNodes(resources, HELD_RESULT, (r) => r.held, 'held, not started (the next `pulumi up` does them)');

/**
 * Every node's result once all are done; posted to the webhook on `pulumi up` (never on a preview), counting only the
 * nodes this `pulumi up` ran (`changing`): an unchanged resource keeps the result of an earlier one.
 */
export function fleetEnd(
  resources: Record<string, NodeRuntimeUpgrade>,
  { skipped, held }: { skipped: pulumi.Output<Record<string, string>>; held: pulumi.Output<Record<string, string>> },
  { fleet, webhook, changing }: { fleet: string; webhook?: string; changing: string[] },
): pulumi.Output<Record<string, string>> {
  const results = pulumi.all(Object.fromEntries(Object.entries(resources).map(([name, r]) => [name, r.result])));
  return pulumi.all([results, skipped, held]).apply(async ([byNode, passed, holding]) => {
    const ran = (byName: Record<string, string>) => Object.fromEntries(Object.entries(byName).filter(([n]) => changing.includes(n)));
    const ends = Object.fromEntries(Object.entries(ran(byNode as Record<string, string>)).map(([n, result]) => [n, { result }]));
    if (!pulumi.runtime.isDryRun()) await postMessage(webhook, fleetEnded(fleet, ends, ran(passed), undefined, ran(holding)), (l) => pulumi.log.warn(l));
    return byNode as Record<string, string>;
  });
}
