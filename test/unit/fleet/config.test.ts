import { describe, expect, it } from 'vitest';
import { parseFleetConfig } from '../../../src/fleet/config/index.js';
import { planFleetWaves, planWaves } from '../../../src/fleet/waves.js';

// As the engine lists secret keys to the program: node-maint:sshKey when set with `pulumi config set --secret`.
const SECRET = { secretKeys: ['node-maint:sshKey'] };
const PLAIN = { secretKeys: [] };
/** The webhook and the hooks set with --secret. */
const SECRETS = { secretKeys: ['node-maint:webhook', 'node-maint:hooks'] };
// A real key's shape (ssh-keygen -t ed25519), its body cut: only the armour is checked.
const KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n';

const base = {
  'node-maint:nodes': '["real-node","fleet-1","fleet-2","fleet-3"]',
  'node-maint:targets': '{"containerd":"1.6.20~ds1-1+deb12u3"}',
  'node-maint:maxUnavailable': '2',
};

describe('fleet stack config', () => {
  it('reads a valid config with defaults', () => {
    const c = parseFleetConfig({ ...base, 'node-maint:ssh': '{"user":"maint","hosts":{"real-node":"127.0.0.1:2222"}}', 'aws:region': 'x' }, PLAIN);
    expect(c).toMatchObject({ nodes: ['real-node', 'fleet-1', 'fleet-2', 'fleet-3'], maxUnavailable: 2, leaseNamespace: 'kube-system', ssh: { user: 'maint', port: 22, hosts: { 'real-node': '127.0.0.1:2222' } } });
    expect(c.drain).toMatchObject({ ignoreDaemonSets: false, gracePeriodSeconds: -1, skipWaitForDeleteTimeoutSeconds: 0 });
    expect(c.allowControlPlane).toBe(false);
    expect(c.allowNoRollback).toBe(false);
    expect(c.createRbac).toBe(false);
    expect(parseFleetConfig({ ...base, 'node-maint:createRbac': 'true' }, PLAIN).createRbac).toBe(true);
    // kured's PreferNoSchedule taint on the nodes still to do: on unless turned off.
    expect(c.preferNoScheduleWhileWaiting).toBe(true);
    expect(parseFleetConfig({ ...base, 'node-maint:preferNoScheduleWhileWaiting': 'false' }, PLAIN).preferNoScheduleWhileWaiting).toBe(false);
  });

  it.each([
    [{ 'node-maint:maxUnavailble': '2' }, /node-maint:maxUnavailble: unknown key \(did you mean node-maint:maxUnavailable\?\)/],
    [{ 'node-maint:maxUnavailable': '"two"' }, /node-maint:maxUnavailable: must be a whole number >= 1/],
    [{ 'node-maint:maxUnavailable': '0' }, /maxUnavailable: must be a whole number >= 1/],
    [{ 'node-maint:targets': '{"containerd":"latest"}' }, /node-maint:targets: malformed version "latest"/],
    [{ 'node-maint:nodes': '["ok","bad;node"]' }, /node-maint:nodes: invalid node name/],
    [{ 'node-maint:drain': '{"ignoreDaemonset":true}' }, /node-maint:drain.ignoreDaemonset: unknown setting \(did you mean drain.ignoreDaemonSets\?\)/],
    [{ 'node-maint:drain': '{"skipWaitForDeleteTimeoutSeconds":-5}' }, /node-maint:drain.skipWaitForDeleteTimeoutSeconds: must be 0 \(wait for every pod\) or a whole number of seconds/],
    [{ 'node-maint:ssh': '{"port":70000}' }, /node-maint:ssh.port: must be 1-65535/],
    [{ 'node-maint:sshKey': 'hunter2' }, /node-maint:sshKey: must be a private key/],
    [{ 'node-maint:nodeSelector': 'a=b' }, /set nodes or nodeSelector, not both/],
    [{ 'node-maint:allowControlPlane': '"yes"' }, /node-maint:allowControlPlane: must be true or false/],
    [{ 'node-maint:allowNoRollback': '1' }, /node-maint:allowNoRollback: must be true or false/],
    [{ 'node-maint:createRbac': '"yes"' }, /node-maint:createRbac: must be true or false/],
    [{ 'node-maint:leaseNamespace': 'kube-system\nkind: ClusterRole' }, /node-maint:leaseNamespace: invalid lease namespace/],
    // A node name may have dots and 253 characters; a namespace is a DNS label.
    [{ 'node-maint:leaseNamespace': 'maint.blue' }, /node-maint:leaseNamespace: invalid lease namespace "maint.blue": expected a namespace name/],
    [{ 'node-maint:leaseNamespace': 'm'.repeat(64) }, /node-maint:leaseNamespace: invalid lease namespace/],
    [{ 'node-maint:dockerExec': '{"dockerHost":"unix:///run/docker.sock"}' }, /node-maint:dockerExec.containers: is missing: a map of node name to container name/],
    [{ 'node-maint:access': '"kubectl"' }, /node-maint:access: must be ssh or agent \(got "kubectl"\)/],
    [{ 'node-maint:access': '"agent"', 'node-maint:hooks': '{"beforeDrain":"echo hi"}' }, /node-maint:hooks: does not go with access: agent \(a hook is a command; the agent runs only the runbook\)/],
    [{ 'node-maint:access': '"agent"', 'node-maint:reboot': '"always"', 'node-maint:rebootCommand': '"reboot -f"' }, /node-maint:rebootCommand: does not go with access: agent/],
    [{ 'node-maint:access': '"agent"', 'node-maint:metrics': '{"textfileDir":"/var/lib/node-exporter"}' }, /node-maint:metrics: does not go with access: agent \(a folder written as root/],
    [{ 'node-maint:agent': '{"image":"node-maint/agent:1"}' }, /node-maint:agent: is read only with access: agent/],
    [{ 'node-maint:access': '"agent"', 'node-maint:agent': '{"image":"agent; rm -rf /"}' }, /node-maint:agent.image: must be an image reference/],
    [{ 'node-maint:access': '"agent"', 'node-maint:agent': '{"image":"a:1","imagePullPolicy":"Sometimes"}' }, /node-maint:agent.imagePullPolicy: must be Always, IfNotPresent, Never/],
    [{ 'node-maint:access': '"agent"', 'node-maint:agent': '{"image":"a:1","env":{"NODE_NAME":"x"}}' }, /node-maint:agent.env: "NODE_NAME" is not a variable the stack may set/],
    [{ 'node-maint:access': '"agent"', 'node-maint:agent': '{"image":"a:1","nodeSelecter":{}}' }, /node-maint:agent.nodeSelecter: unknown setting \(did you mean agent.nodeSelector\?\)/],
  ])('names the key of a bad setting: %j', (override, message) => {
    expect(() => parseFleetConfig({ ...base, ...override }, SECRET)).toThrow(message);
  });

  it('reads the reboot keys; targets may then be left out, and a sentinel command goes only with if-required', () => {
    const nodes = { 'node-maint:nodes': base['node-maint:nodes'] };
    expect(parseFleetConfig(base, PLAIN).reboot).toEqual({ policy: 'never', timeoutSeconds: 600 });
    expect(parseFleetConfig({ ...nodes, 'node-maint:reboot': '"if-required"', 'node-maint:rebootSentinelCommand': '"test -e /run/patched"', 'node-maint:rebootTimeoutSeconds': '900' }, PLAIN)).toMatchObject({
      targets: {},
      reboot: { policy: 'if-required', sentinelCommand: 'test -e /run/patched', timeoutSeconds: 900 },
    });
    expect(() => parseFleetConfig({ ...base, 'node-maint:reboot': '"sometimes"' }, PLAIN)).toThrow(/node-maint:reboot: must be one of never, always, if-required \(got "sometimes"\)/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:reboot': '"always"', 'node-maint:rebootSentinelCommand': '"true"' }, PLAIN)).toThrow(/node-maint:rebootSentinelCommand: is read only with reboot: if-required/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:reboot': '"always"', 'node-maint:rebootTimeoutSeconds': '0' }, PLAIN)).toThrow(/node-maint:rebootTimeoutSeconds: must be a positive whole number/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:rebooot': '"always"' }, PLAIN)).toThrow(/did you mean node-maint:reboot\?/);
    // The CLI's --reboot-command, for a fleet (a node without systemd, a BMC's power cycle).
    expect(parseFleetConfig({ ...base, 'node-maint:reboot': '"always"', 'node-maint:rebootCommand': '"shutdown -r now"' }, PLAIN).reboot).toEqual({ policy: 'always', command: 'shutdown -r now', timeoutSeconds: 600 });
    expect(() => parseFleetConfig({ ...base, 'node-maint:reboot': '"always"', 'node-maint:rebootCommand': '" "' }, PLAIN)).toThrow(/node-maint:rebootCommand: must be a command/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:rebootCommand': '"reboot"' }, PLAIN)).toThrow(/node-maint:rebootCommand: is read only with reboot: always or if-required/);
  });

  it("reads pendingUpgrades (all, or one origin's) instead of targets; never beside them, nor through the agents", () => {
    const nodes = { 'node-maint:nodes': base['node-maint:nodes'] };
    expect(parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': 'true' }, PLAIN)).toMatchObject({ targets: {}, pendingUpgrades: {} });
    expect(parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': '{"origin":"Debian-Security"}' }, PLAIN).pendingUpgrades).toEqual({ origin: 'Debian-Security' });
    expect(parseFleetConfig(base, PLAIN).pendingUpgrades).toBeUndefined();
    expect(() => parseFleetConfig({ ...base, 'node-maint:pendingUpgrades': 'true' }, PLAIN)).toThrow(/node-maint:pendingUpgrades: is instead of targets: give one of them/);
    expect(() => parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': '{"origin":"a b; reboot"}' }, PLAIN)).toThrow(/node-maint:pendingUpgrades.origin: must be an origin as apt-get -s prints it/);
    expect(() => parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': '{"orign":"Debian"}' }, PLAIN)).toThrow(/orign/);
    expect(() => parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': '"yes"' }, PLAIN)).toThrow(/node-maint:pendingUpgrades: must be true or/);
    expect(() => parseFleetConfig({ ...nodes, 'node-maint:pendingUpgrades': 'true', 'node-maint:access': '"agent"' }, PLAIN)).toThrow(/node-maint:pendingUpgrades: is read over SSH as the fleet is planned, and not through the agents/);
  });

  it('reads a blocking pod selector (node scope, 600 s by default); its scope and wait only with it', () => {
    expect(parseFleetConfig({ ...base, 'node-maint:blockingPodSelector': '"app in (backup, batch)"' }, PLAIN).blockingPods).toEqual({ selector: 'app in (backup, batch)', scope: 'node', timeoutSeconds: 600 });
    expect(parseFleetConfig({ ...base, 'node-maint:blockingPodSelector': '"app=backup"', 'node-maint:blockingPodScope': '"cluster"' }, PLAIN).blockingPods?.scope).toBe('cluster');
    expect(() => parseFleetConfig({ ...base, 'node-maint:blockingPodScope': '"cluster"' }, PLAIN)).toThrow(/node-maint:blockingPodScope: is read only with blockingPodSelector/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:blockingPodSelector': '"app=backup&watch=1"' }, PLAIN)).toThrow(/node-maint:blockingPodSelector: invalid label selector/);
    expect(() => parseFleetConfig({ ...base, 'node-maint:blockingPodSelector': '"app=backup"', 'node-maint:blockingPodScope': '"zone"' }, PLAIN)).toThrow(/must be node or cluster/);
  });

  it('requires nodes or a selector, and targets', () => {
    expect(() => parseFleetConfig({ 'node-maint:targets': base['node-maint:targets'] }, PLAIN)).toThrow(/node-maint:nodes: set either nodes/);
    expect(() => parseFleetConfig({ 'node-maint:nodes': base['node-maint:nodes'] }, PLAIN)).toThrow(/node-maint:targets: required/);
  });
});

describe('maintenanceWindow and order in stack config', () => {
  it('reads a window (UTC unless a zone is given) and an order; fewest-pods by default', () => {
    const c = parseFleetConfig({ ...base, 'node-maint:maintenanceWindow': '{"schedule":"0 22 * * 6","duration":"1h30m"}' }, PLAIN);
    expect(c.maintenanceWindow).toEqual({ schedule: '0 22 * * 6', durationMinutes: 90, timeZone: 'UTC' });
    expect(c.order).toBe('fewest-pods');
    const zoned = '{"schedule":"30 1 * * 1-5","duration":"4h","timeZone":"Europe/Berlin"}';
    expect(parseFleetConfig({ ...base, 'node-maint:maintenanceWindow': zoned }, PLAIN).maintenanceWindow).toEqual({ schedule: '30 1 * * 1-5', durationMinutes: 240, timeZone: 'Europe/Berlin' });
    // `pulumi config set node-maint:order as-listed` stores the bare word; a list is stored as JSON.
    expect(parseFleetConfig({ ...base, 'node-maint:order': 'as-listed' }, PLAIN).order).toBe('as-listed');
    expect(parseFleetConfig({ ...base, 'node-maint:order': '"fewest-pods"' }, PLAIN).order).toBe('fewest-pods');
    expect(parseFleetConfig({ ...base, 'node-maint:order': '["fleet-2","real-node"]' }, PLAIN).order).toEqual({ first: ['fleet-2', 'real-node'] });
    expect(parseFleetConfig(base, PLAIN).maintenanceWindow).toBeUndefined();
  });

  it('reads what an undrainable node does: stop by default, or skip', () => {
    expect(parseFleetConfig(base, PLAIN).undrainable).toBe('stop');
    expect(parseFleetConfig({ ...base, 'node-maint:undrainable': 'skip' }, PLAIN).undrainable).toBe('skip');
  });

  it('reads gates (workloads back within 15m by default, no soak, no alert gate), hooks, metrics and a webhook', () => {
    expect(parseFleetConfig(base, PLAIN)).toMatchObject({ gates: { workloadsTimeoutSeconds: 900, soakSeconds: 0 }, hooks: {} });
    const c = parseFleetConfig(
      {
        ...base,
        'node-maint:gates': JSON.stringify({ soak: '2m', workloadsTimeout: '10m', alerts: { prometheus: 'http://127.0.0.1:9090', names: ['NodeMaintLeakedIPs'], labels: { severity: 'critical' } } }),
        'node-maint:hooks': JSON.stringify({ beforeDrain: 'local:echo hi', afterUncordon: '/usr/local/bin/check' }),
        'node-maint:metrics': JSON.stringify({ textfileDir: '/var/lib/prometheus/node-exporter' }),
        'node-maint:webhook': 'https://hooks.example.com/services/T0/B0/x',
      },
      SECRETS,
    );
    expect(c.gates).toEqual({ soakSeconds: 120, workloadsTimeoutSeconds: 600, alerts: { prometheus: 'http://127.0.0.1:9090/', names: ['NodeMaintLeakedIPs'], labels: { severity: 'critical' }, holdTimeoutSeconds: 1800 } });
    expect(c.hooks).toEqual({ beforeDrain: 'local:echo hi', afterUncordon: '/usr/local/bin/check' });
    expect(c.metrics).toEqual({ textfileDir: '/var/lib/prometheus/node-exporter' });
    expect(c.webhook).toBe('https://hooks.example.com/services/T0/B0/x');
    expect(c.hooksSecret).toBe(true);
    expect(parseFleetConfig({ ...base, 'node-maint:hooks': '{"beforeDrain":"true"}' }, PLAIN).hooksSecret).toBe(false);
  });

  it('refuses a webhook URL in plain text, as the SSH key: Slack\'s carries its token, and the stack file is shared', () => {
    expect(() => parseFleetConfig({ ...base, 'node-maint:webhook': 'https://hooks.slack.com/services/T0/B0/token' }, PLAIN)).toThrow(
      'config node-maint:webhook: is in the stack file in plain text, not a secret; run `pulumi config rm node-maint:webhook`, then `pulumi config set --secret node-maint:webhook URL` (and revoke the URL if the stack file was shared)',
    );
  });

  const window = (w: Record<string, unknown>) => ({ 'node-maint:maintenanceWindow': JSON.stringify({ schedule: '0 22 * * 6', duration: '4h', ...w }) });
  it.each([
    [{ 'node-maint:maintenanceWindw': '{}' }, /^config node-maint:maintenanceWindw: unknown key \(did you mean node-maint:maintenanceWindow\?\)/],
    [{ 'node-maint:ordr': 'as-listed' }, /^config node-maint:ordr: unknown key \(did you mean node-maint:order\?\)/],
    [window({ timezone: 'UTC' }), /^config node-maint:maintenanceWindow.timezone: unknown setting \(did you mean maintenanceWindow.timeZone\?\); known: schedule, duration, timeZone/],
    [window({ schedul: '0 1 * * *' }), /maintenanceWindow.schedul: unknown setting \(did you mean maintenanceWindow.schedule\?\)/],
    [{ 'node-maint:maintenanceWindow': 'saturdays' }, /^config node-maint:maintenanceWindow: must be an object/],
    [{ 'node-maint:maintenanceWindow': '{"duration":"4h"}' }, /^config node-maint:maintenanceWindow.schedule: required: a 5-field cron expression/],
    [window({ schedule: '61 22 * * 6' }), /^config node-maint:maintenanceWindow.schedule: "61 22 \* \* 6": Constraint error, got value 61 expected range 0-59/],
    [window({ schedule: '0 0 22 * * 6' }), /maintenanceWindow.schedule: .*must be a 5-field cron expression .* got 6 fields/],
    [window({ schedule: '0 22 *' }), /maintenanceWindow.schedule: .*got 3 fields/],
    [window({ schedule: '0 22 * * sat-' }), /^config node-maint:maintenanceWindow.schedule: /],
    [window({ duration: '0h' }), /^config node-maint:maintenanceWindow.duration: must be a positive duration .* \(got "0h"\)/],
    [window({ duration: '4 hours' }), /maintenanceWindow.duration: must be a positive duration/],
    [window({ duration: 240 }), /maintenanceWindow.duration: must be a positive duration .* \(got 240\)/],
    [window({ duration: undefined }), /maintenanceWindow.duration: must be a positive duration .* \(got undefined\)/],
    [window({ timeZone: 'Europe/Berln' }), /^config node-maint:maintenanceWindow.timeZone: unknown time zone "Europe\/Berln"/],
    [window({ timeZone: 1 }), /maintenanceWindow.timeZone: must be an IANA time zone name/],
    [{ 'node-maint:order': 'fewest-pod' }, /^config node-maint:order: unknown order "fewest-pod" \(did you mean fewest-pods\?\); known: fewest-pods, as-listed, or a list of node names/],
    [{ 'node-maint:order': '[]' }, /^config node-maint:order: must be fewest-pods or as-listed, or a non-empty list of node names/],
    [{ 'node-maint:order': '{"first":["a"]}' }, /node-maint:order: must be fewest-pods or as-listed/],
    [{ 'node-maint:order': '["fleet-1","Fleet_2"]' }, /^config node-maint:order: invalid node name "Fleet_2"/],
    [{ 'node-maint:order': '["fleet-1","fleet-2","fleet-1"]' }, /^config node-maint:order: lists fleet-1 more than once/],
    [{ 'node-maint:undrainable': 'skp' }, /^config node-maint:undrainable: unknown behaviour "skp" \(did you mean skip\?\); known: stop .*, skip/],
    [{ 'node-maint:undrainable': 'true' }, /^config node-maint:undrainable: unknown behaviour true; known: stop/],
    [{ 'node-maint:gates': '"5m"' }, /^config node-maint:gates: must be an object, e.g. \{"soak": "5m"/],
    [{ 'node-maint:gates': '{"sok":"5m"}' }, /^config node-maint:gates.sok: unknown setting \(did you mean gates.soak\?\)/],
    [{ 'node-maint:gates': '{"soak":"5 minutes"}' }, /^config node-maint:gates.soak: must be a duration such as "30s"/],
    [{ 'node-maint:gates': '{"workloadsTimeout":"0s"}' }, /^config node-maint:gates.workloadsTimeout: must be a positive duration/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"http://p:9090"}}' }, /^config node-maint:gates.alerts: needs names or labels/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"prometheus:9090","names":["A"]}}' }, /^config node-maint:gates.alerts.prometheus: must be an http:\/\/ or https:\/\/ URL/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"http://u:secret@p:9090","names":["A"]}}' }, /gates.alerts.prometheus: must be .* without credentials in it \(got "http:\/\/\*\*\*@p:9090"\)/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"http://p:9090","names":["bad name"]}}' }, /^config node-maint:gates.alerts.names: must be a list of alert names/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"http://p:9090","labels":{"severity":1}}}' }, /^config node-maint:gates.alerts.labels: must be a map/],
    [{ 'node-maint:gates': '{"alerts":{"prometheus":"http://p:9090","names":["A"],"holdTimout":"5m"}}' }, /gates.alerts.holdTimout: unknown setting \(did you mean gates.alerts.holdTimeout\?\)/],
    [{ 'node-maint:hooks': '{"beforeDrian":"true"}' }, /^config node-maint:hooks.beforeDrian: unknown setting \(did you mean hooks.beforeDrain\?\)/],
    [{ 'node-maint:hooks': '{"afterUpgrade":"local:  "}' }, /^config node-maint:hooks.afterUpgrade: must be a command/],
    [{ 'node-maint:metrics': '{"textfileDir":"var/lib/x"}' }, /^config node-maint:metrics.textfileDir: must be an absolute path/],
    [{ 'node-maint:metrics': '{"textfileDir":"/var/lib/../etc"}' }, /metrics.textfileDir: must be an absolute path/],
    [{ 'node-maint:metrics': '{"textfileDir":"/var/lib/x;reboot"}' }, /metrics.textfileDir: must be an absolute path/],
    [{ 'node-maint:webhook': 'hooks.slack.com/services/T0/B0/token' }, /^config node-maint:webhook: must be an http:\/\/ or https:\/\/ URL without credentials in it \(got a value not shown\)$/],
    [{ 'node-maint:webhook': '{"url":"http://x"}' }, /^config node-maint:webhook: must be a URL string/],
  ])('names the key of a bad setting: %j', (override, message) => {
    let error: Error | undefined;
    try {
      parseFleetConfig({ ...base, ...override }, SECRETS);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.name).toBe('ConfigError');
    expect(error?.message).toMatch(message);
  });
});

describe('the SSH key in stack config', () => {
  it('accepts a key set with --secret', () => {
    expect(parseFleetConfig({ ...base, 'node-maint:sshKey': KEY }, SECRET).sshKey).toBe(KEY);
  });

  it.each([
    // what is set, a part of it no message may show
    ['a real key', KEY, 'b3BlbnNzaC1rZXkt'],
    ['a malformed value', 'hunter2', 'hunter2'],
  ])('refuses %s set in plain text, naming the fix and never the value', (_, value, secretPart) => {
    let error: Error | undefined;
    try {
      parseFleetConfig({ ...base, 'node-maint:sshKey': value }, PLAIN);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.name).toBe('ConfigError');
    expect(error?.message).toMatch(/^config node-maint:sshKey: is in the stack file in plain text, not a secret; /);
    expect(error?.message).toContain('`pulumi config rm node-maint:sshKey`, then `cat KEY | pulumi config set --secret node-maint:sshKey`');
    expect(error?.message).not.toContain(secretPart);
  });

  it('is refused in plain text before any other setting is looked at', () => {
    expect(() => parseFleetConfig({ 'node-maint:sshKey': KEY }, { secretKeys: ['node-maint:kubeconfig'] })).toThrow(/sshKey: is in the stack file in plain text/);
  });

  it('asks nothing of a stack without an SSH key', () => {
    expect(parseFleetConfig(base, PLAIN).sshKey).toBeUndefined();
  });
});

describe('waves', () => {
  it('never puts more than maxUnavailable nodes in one wave, in order', () => {
    expect(planWaves(['a', 'b', 'c', 'd', 'e'], 2)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(planWaves(['a'], 3)).toEqual([['a']]);
    // Control-plane nodes after every worker, one per wave.
    expect(planFleetWaves(['w1', 'w2', 'w3'], ['cp1', 'cp2'], 2)).toEqual([['w1', 'w2'], ['w3'], ['cp1'], ['cp2']]);
    expect(() => planWaves(['a'], 0)).toThrow();
  });
});
