import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

// The alert rules evaluated by Prometheus' own rule engine (promtool test rules) on series as the audit writes them:
// a host-local range nearly full fires; one full Calico block does not, all of a node's blocks nearly full does.
const exec = promisify(execFile);

const range = (node: string, network: string, cidr: string, usable: number, allocated: number) =>
  [['usable', usable], ['allocated', allocated]].map(([what, value]) =>
    `      - series: 'node_maint_ip_range_${what}{instance="i",node="${node}",network="${network}",range="${cidr}"}'\n        values: '${value}x20'`);

const alert = (name: string, labels: string, annotations: string) =>
  `      - eval_time: 15m\n        alertname: ${name}\n        exp_alerts:\n          - exp_labels: {severity: warning, instance: i, ${labels}}\n            exp_annotations: {${annotations}}`;

it("the nearly-full alerts: a host-local range; a node's Calico blocks taken together, never one block", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rules-'));
  const promtool = (calicoNode: string) => {
    writeFileSync(join(dir, 'test.yml'), [
      'rule_files: [rules.yml]',
      'tests:',
      '  - interval: 1m',
      '    input_series:',
      ...range('kubenet-node', 'kubenet', '10.0.0.0/25', 125, 120),
      // One block full, the other nearly empty: calico-ipam is fine.
      ...range('calico-busy', 'calico-ipam', '10.1.0.0/26', 64, 64),
      ...range('calico-busy', 'calico-ipam', '10.1.0.64/26', 64, 10),
      ...range('calico-full', 'calico-ipam', '10.2.0.0/26', 64, 60),
      ...range('calico-full', 'calico-ipam', '10.2.0.64/26', 64, 60),
      '    alert_rule_test:',
      alert('NodeMaintIPRangeNearlyFull', 'node: kubenet-node, network: kubenet, range: 10.0.0.0/25', 'summary: "kubenet-node: kubenet 10.0.0.0/25 is 96% allocated"'),
      alert('NodeMaintCalicoBlocksNearlyFull', `node: ${calicoNode}`, `summary: "${calicoNode}: its Calico blocks are 93.75% allocated", action: "calicoctl ipam show --show-blocks: is the pool out of free blocks?"`),
      '',
    ].join('\n'));
    return exec('promtool', ['test', 'rules', 'test.yml'], { cwd: dir }).then((r) => r.stdout + r.stderr, (e) => `${e.stdout}${e.stderr}`);
  };
  try {
    copyFileSync('src/metrics/node-maint.rules.yml', join(dir, 'rules.yml'));
    const right = await promtool('calico-full');
    expect(right, right).toContain('SUCCESS');
    // The rule engine's answer is what is compared: the node with one full block expected instead fails.
    expect(await promtool('calico-busy')).toContain('FAILED');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
