import { describe, expect, it } from 'vitest';
import { appendOutput, OUTPUT_KEPT, readExchange, requestArgs, validateRequest, writeExchange } from '../../../src/agent/protocol.js';

describe("a request to a node's agent", () => {
  it('carries the run flags and leaves the caller its own: how it reaches the cluster and the node', () => {
    expect(requestArgs(['n1', '--via', 'agent', '--to', 'containerd=2', '--kubeconfig', '/home/op/.kube/config', '--ssh-key=/k', '--context', 'prod', '--reboot', '--ignore-daemonsets'])).toEqual([
      'n1', '--to', 'containerd=2', '--reboot', '--ignore-daemonsets',
    ]);
  });

  it('refuses by name what would let a request choose a command or a folder written as root', () => {
    expect(() => requestArgs(['n1', '--via', 'agent', '--hook-before-drain', 'curl x'])).toThrow('--hook-before-drain does not go with --via agent');
    expect(() => requestArgs(['n1', '--hook-after-uncordon=true'])).toThrow('--hook-after-uncordon does not go with --via agent');
    expect(() => requestArgs(['n1', '--reboot', '--reboot-command', 'curl x | sh'])).toThrow('--reboot-command does not go with --via agent: it is a command');
    expect(() => requestArgs(['n1', '--reboot-if-required', '--reboot-sentinel-command=true'])).toThrow('--reboot-sentinel-command does not go with --via agent: it is a command');
    expect(() => requestArgs(['n1', '--textfile-dir', '/etc/cron.d'])).toThrow('--textfile-dir does not go with --via agent: it is a folder the run would write in as root');
  });

  it('is checked again by the agent: its own node, a known command, no flag that reaches elsewhere', () => {
    const ok = { id: 'abc123', command: 'upgrade-node', args: ['n1', '--to', 'containerd=2'], by: 'op', at: 't' };
    expect(validateRequest(ok, 'n1')).toEqual(ok);
    expect(() => validateRequest(ok, 'n2')).toThrow('the request names node "n1", and this agent runs on n2');
    expect(() => validateRequest({ ...ok, command: 'sh' }, 'n1')).toThrow('the agent runs upgrade-node and audit-node only, not "sh"');
    expect(() => validateRequest({ ...ok, args: ['n1', '--kubeconfig', '/etc/kubernetes/admin.conf'] }, 'n1')).toThrow('flags that only a caller may give');
    expect(() => validateRequest({ ...ok, args: ['n1', '--hook-before-drain', 'rm -rf /'] }, 'n1')).toThrow('--hook-before-drain does not go with --via agent');
    expect(() => validateRequest({ ...ok, id: 'a;b' }, 'n1')).toThrow('no valid id');
    expect(() => validateRequest({ ...ok, args: 'n1 --reboot' }, 'n1')).toThrow('not a list of strings');
  });
});

describe("the agent's ConfigMap", () => {
  it('reads back what was written', () => {
    const x = { request: { id: 'a1', command: 'audit-node' as const, args: ['n1'], by: 'op', at: 't' }, stop: 'SIGINT', stopSent: true, unit: { name: 'u', boot: 'b', starts: 2 }, output: 'line\n', outputFrom: 10, read: 5, exit: 18, report: 'r', delivered: true };
    expect(readExchange(writeExchange(x))).toEqual(x);
    expect(readExchange({ request: 'not json', exit: 'x' })).toMatchObject({ request: undefined, exit: undefined, output: '', outputFrom: 0 });
  });

  it("keeps the output's tail within a ConfigMap's size, and counts what it dropped", () => {
    const line = `${'x'.repeat(1023)}\n`;
    let x = { output: '', outputFrom: 0 };
    for (let i = 0; i < 300; i++) x = appendOutput(x as never, line);
    expect(Buffer.byteLength(x.output)).toBe(OUTPUT_KEPT);
    expect(x.outputFrom + Buffer.byteLength(x.output)).toBe(300 * 1024);
  });
});
