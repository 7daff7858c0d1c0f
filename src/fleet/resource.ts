import * as pulumi from '@pulumi/pulumi';
import { nodeUpgradeProvider } from './provider.js';
import type { NodeConnection } from './apply.js';
import type { DrainOptions } from '../cluster/drain/filters.js';

export interface NodeRuntimeUpgradeArgs {
  node: string;
  connection: NodeConnection;
  kubeconfig?: string;
  context?: string;
  targets: Record<string, string>;
  drain: DrainOptions;
  leaseNamespace: string;
  observed?: Record<string, string>;
  sshKey?: pulumi.Input<string>;
}

const LIBRARY = new URL('./apply.js', import.meta.url).href;

/** One node's container runtime upgrade (pulumi-nodejs:dynamic/node-maint:NodeRuntimeUpgrade). */
export class NodeRuntimeUpgrade extends pulumi.dynamic.Resource {
  declare readonly result: pulumi.Output<string>;
  declare readonly versionsBefore: pulumi.Output<Record<string, string>>;
  declare readonly versionsAfter: pulumi.Output<Record<string, string>>;
  declare readonly steps: pulumi.Output<Array<{ name: string; status: string; summary: string; durationMs: number }>>;
  declare readonly audit: pulumi.Output<unknown>;
  declare readonly durationMs: pulumi.Output<number>;

  constructor(name: string, args: NodeRuntimeUpgradeArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      nodeUpgradeProvider(LIBRARY),
      name,
      { ...args, result: undefined, versionsBefore: undefined, versionsAfter: undefined, steps: undefined, audit: undefined, durationMs: undefined },
      { ...opts, additionalSecretOutputs: ['sshKey'] },
      'node-maint',
      'NodeRuntimeUpgrade',
    );
  }
}
