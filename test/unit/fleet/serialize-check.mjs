// Run by provider.test.ts under plain node (no test-runner transform), exactly as Pulumi's program process would load
// dist/: constructs one NodeRuntimeUpgrade with mocks and prints what Pulumi serialized.
import * as pulumi from '@pulumi/pulumi';

const captured = [];
pulumi.runtime.setMocks(
  { newResource: (args) => (captured.push({ type: args.type, inputs: args.inputs }), { id: `${args.name}-id`, state: args.inputs }), call: (a) => a.inputs },
  'node-maint-fleet',
  'test',
  true,
);
const { NodeRuntimeUpgrade } = await import('../../../dist/fleet/resource.js');
new NodeRuntimeUpgrade('n1', {
  node: 'n1',
  connection: { kind: 'ssh', host: '127.0.0.1', port: 22, user: 'root', knownHosts: '/k' },
  targets: { containerd: '1' },
  drain: { ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: -1, timeoutSeconds: 60 },
  leaseNamespace: 'kube-system',
  sshKey: pulumi.secret(process.env.TEST_KEY),
});
await new Promise((r) => setTimeout(r, 500));
process.stdout.write(JSON.stringify(captured));
