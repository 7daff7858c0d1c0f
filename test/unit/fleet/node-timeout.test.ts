import { describe, expect, it } from 'vitest';
import { parseFleetConfig } from '../../../src/fleet/config/index.js';
import { nodeTimeoutMinutes } from '../../../src/fleet/node-timeout.js';

const base = { 'node-maint:nodes': '["n1"]', 'node-maint:targets': '{"containerd":"1.6.20~ds1-1+deb12u3"}' };
const minutes = (extra: Record<string, string>) => nodeTimeoutMinutes(parseFleetConfig({ ...base, ...extra }, { secretKeys: [] }));

// Pulumi gives up on a resource past its customTimeouts: every wait the config asks for is counted in (issue 36 item 9).
describe("a node's resource timeout", () => {
  it('is an hour for the runbook plus its workloads gate by default', () => {
    expect(minutes({})).toBe(60 + 15);
  });

  it('counts the reboot wait and the blocking pod wait, each only when asked', () => {
    expect(minutes({ 'node-maint:reboot': 'always', 'node-maint:rebootTimeoutSeconds': '1800' })).toBe(60 + 15 + 30);
    expect(minutes({ 'node-maint:reboot': 'never', 'node-maint:rebootTimeoutSeconds': '1800' })).toBe(60 + 15);
    expect(minutes({ 'node-maint:blockingPodSelector': 'app=backup', 'node-maint:blockingPodTimeoutSeconds': '3600' })).toBe(60 + 15 + 60);
    expect(minutes({ 'node-maint:gates': '{"soak":"10m","alerts":{"prometheus":"http://127.0.0.1:9090","names":["A"],"holdTimeout":"20m"}}' })).toBe(60 + 15 + 10 + 20);
  });
});
