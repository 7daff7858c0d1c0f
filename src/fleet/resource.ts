import * as pulumi from '@pulumi/pulumi';
import { nodeUpgradeProvider } from './provider.js';
import type { NodeUpgradeInputs } from './apply.js';
import type { LaterNodes } from './notify.js';

export interface NodeRuntimeUpgradeArgs extends NodeUpgradeInputs {
  /** Installed versions the program saw when it planned. */
  observed?: Record<string, string>;
  sshKey?: pulumi.Input<string>;
  webhook?: pulumi.Input<string>;
  /** The nodes of later waves, named in the fleet's failure. */
  later?: LaterNodes;
  /** An unfinished run a stopped or killed `pulumi up` left on the node: finished first. */
  unfinished?: string;
  /** Its wave, 0 first: the provider keeps it in the outputs of its last change. */
  wave?: number;
  /** Why this `pulumi up` reboots the node: a change, whatever the versions. */
  rebootWanted?: string;
  /** Why only the node's run can tell whether it needs a reboot: a change, whatever the versions. */
  rebootUnknown?: string;
}

/** What is the same for every node of the fleet, in one input: each top-level input costs the SDK its own outputs and
 * promises, and at 1,000 nodes the fleet-wide ones were a fifth of `pulumi preview`. The node's own inputs, those the
 * diff reads and the secrets (marked by name) stay at the top; the provider unpacks (unpackInputs). */
function packInputs(args: NodeRuntimeUpgradeArgs) {
  const { node, targets, observed, unfinished, rebootWanted, rebootUnknown, wave, later, connection, sshKey, webhook, hooks, ...fleet } = args;
  return { node, targets, observed, unfinished, rebootWanted, rebootUnknown, wave, later, connection, sshKey, webhook, hooks, fleetSettings: fleet };
}

// One provider for every node: Pulumi serializes a provider object once and reuses the text.
const PROVIDER = nodeUpgradeProvider(new URL('./node-provider.js', import.meta.url).href);

/** One node's container runtime upgrade (pulumi-nodejs:dynamic/node-maint:NodeRuntimeUpgrade). */
export class NodeRuntimeUpgrade extends pulumi.dynamic.Resource {
  declare readonly result: pulumi.Output<string>;
  declare readonly versionsBefore: pulumi.Output<Record<string, string>>;
  declare readonly versionsAfter: pulumi.Output<Record<string, string>>;
  declare readonly steps: pulumi.Output<Array<{ name: string; status: string; summary: string; durationMs: number }>>;
  declare readonly audit: pulumi.Output<unknown>;
  declare readonly durationMs: pulumi.Output<number>;
  /** Why the node was passed by (undrainable, with undrainable: skip); null when it was not. */
  declare readonly skipped: pulumi.Output<string | null>;
  /** Why the window or the pause held the node (left as it was, not a failure); null when they did not. */
  declare readonly held: pulumi.Output<string | null>;
  /** The wave it last ran in (0 first); null in the outputs of a version before waves were kept. */
  declare readonly wave: pulumi.Output<number | null>;

  constructor(name: string, args: NodeRuntimeUpgradeArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      PROVIDER,
      name,
      { ...packInputs(args), result: undefined, versionsBefore: undefined, versionsAfter: undefined, steps: undefined, audit: undefined, durationMs: undefined, skipped: undefined, held: undefined },
      { ...opts, additionalSecretOutputs: ['sshKey', 'webhook', ...(args.hooksSecret ? ['hooks'] : [])] },
      'node-maint',
      'NodeRuntimeUpgrade',
    );
  }
}
