import * as pulumi from '@pulumi/pulumi';
import { fleetEnded, postMessage } from './notify.js';
import type { NodeRuntimeUpgrade } from './resource.js';
import { SKIPPED_RESULT } from './undrainable.js';

// The stack outputs that wait for every node: the nodes skipped as undrainable, and the fleet's end.

/** The nodes passed by as undrainable, with why, said once more at the end of `pulumi up`. */
export function skippedNodes(resources: Record<string, NodeRuntimeUpgrade>): pulumi.Output<Record<string, string>> {
  const each = Object.entries(resources).map(([name, r]) => pulumi.all([r.result, r.skipped]).apply(([result, why]) => [name, result === SKIPPED_RESULT ? (why ?? '') : undefined] as const));
  return pulumi.all(each).apply((pairs) => {
    const skipped = Object.fromEntries(pairs.filter(([, why]) => why !== undefined)) as Record<string, string>;
    const names = Object.keys(skipped);
    if (names.length > 0) pulumi.log.warn(`${names.length} node(s) skipped as undrainable, left as they were: ${names.map((n) => `${n} (${skipped[n]})`).join('; ')}`);
    return skipped;
  });
}

/**
 * Every node's result once all are done; posted to the webhook on `pulumi up` (never on a preview), counting only the
 * nodes this `pulumi up` ran (`changing`): an unchanged resource keeps the result of an earlier one.
 */
export function fleetEnd(resources: Record<string, NodeRuntimeUpgrade>, skipped: pulumi.Output<Record<string, string>>, { fleet, webhook, changing }: { fleet: string; webhook?: string; changing: string[] }): pulumi.Output<Record<string, string>> {
  const results = pulumi.all(Object.fromEntries(Object.entries(resources).map(([name, r]) => [name, r.result])));
  return pulumi.all([results, skipped]).apply(async ([byNode, passed]) => {
    const ran = (entries: Array<[string, string]>) => entries.filter(([n]) => changing.includes(n));
    const ends = Object.fromEntries(ran(Object.entries(byNode as Record<string, string>)).map(([n, result]) => [n, { result }]));
    if (!pulumi.runtime.isDryRun()) await postMessage(webhook, fleetEnded(fleet, ends, Object.fromEntries(ran(Object.entries(passed)))), (l) => pulumi.log.warn(l));
    return byNode as Record<string, string>;
  });
}
