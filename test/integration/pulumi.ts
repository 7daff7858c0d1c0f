import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { bed } from './bed.js';
import type { TestNode } from './pool.js';

// The real Pulumi CLI the bed built, on a local file backend, with a private PULUMI_HOME and a throwaway stack.
const exec = promisify(execFile);

export interface PulumiStack {
  dir: string;
  configFile: string;
  run(args: string[], options?: { allowFailure?: boolean }): Promise<{ code: number; stdout: string; stderr: string; ms: number }>;
  /** Starts a command and lets the test read its output while it runs, signal it, or kill it (its plugins too) as a lost runner would be. */
  start(args: string[]): Started;
  /** A secret through `pulumi config set --secret`; a plain value written to the config file, as that command writes it. */
  set(key: string, value: string, secret?: boolean): Promise<void>;
  /** Keys removed from the config file, as `pulumi config rm` removes them. */
  unset(...keys: string[]): void;
  /** Several keys in one `pulumi config set-all` (a CLI start costs a third of a CPU second). */
  setAll(plain: Record<string, string>, secret?: Record<string, string>): Promise<void>;
  stateText(): string;
  /** The stack's outputs as `pulumi stack output --json` gives them, read from its state (no CLI start; none is secret). */
  outputs(): Record<string, any>;
}

export interface Started {
  pid: number;
  output: () => string;
  done: Promise<number>;
  /** SIGKILL to the whole tree, plugins included: a runner machine lost. */
  kill: () => void;
  /** A signal to the `pulumi` process alone, as a terminal's Ctrl-C (SIGINT) or a CI job's timeout (SIGTERM) or kill -9 send it. */
  signal: (name: NodeJS.Signals) => void;
  /** The processes under it now (the language host, the program, the providers), from /proc. */
  descendants: () => Array<{ pid: number; args: string }>;
}

export async function newStack(name: string): Promise<PulumiStack> {
  const dir = mkdtempSync('/tmp/node-maint-pulumi-');
  mkdirSync(join(dir, 'state'));
  const env = {
    ...process.env,
    PATH: `${bed().pulumiDir}:${process.env.PATH}`,
    PULUMI_HOME: join(dir, 'home'),
    PULUMI_BACKEND_URL: `file://${join(dir, 'state')}`,
    PULUMI_CONFIG_PASSPHRASE: 'node-maint-test',
    PULUMI_SKIP_UPDATE_CHECK: 'true',
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
  };
  // @pulumi/kubernetes's plugin as `pulumi plugin install --file` would put it, linked rather than copied (167 MB).
  const { plugin, version } = bed().pulumiKubernetes;
  const pluginDir = join(dir, 'home', 'plugins', `resource-kubernetes-v${version}`);
  mkdirSync(pluginDir, { recursive: true });
  symlinkSync(plugin, join(pluginDir, 'pulumi-resource-kubernetes'));
  const configFile = join(dir, `Pulumi.${name}.yaml`);
  const argv = (args: string[]) => [...args, '--non-interactive', ...(['preview', 'up', 'refresh', 'destroy'].includes(args[0]!) ? ['--config-file', configFile] : [])];
  const run: PulumiStack['run'] = async (args, options = {}) => {
    const t0 = Date.now();
    try {
      const { stdout, stderr } = await exec('pulumi', argv(args), { env, maxBuffer: 64 * 2 ** 20, timeout: 1_800_000 });
      return { code: 0, stdout, stderr, ms: Date.now() - t0 };
    } catch (e) {
      const err = e as { code?: number; stdout?: string; stderr?: string };
      if (!options.allowFailure) throw new Error(`pulumi ${args.join(' ')} failed: ${err.stdout}\n${err.stderr}`);
      return { code: err.code ?? 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '', ms: Date.now() - t0 };
    }
  };
  await run(['stack', 'init', name]);
  // stack init writes the stack's settings (its secrets salt) beside Pulumi.yaml; the throwaway stack keeps them in
  // its own directory instead, so no test leaves files in the checkout.
  if (existsSync(`Pulumi.${name}.yaml`)) moveFile(`Pulumi.${name}.yaml`, configFile);
  const start: PulumiStack['start'] = (args) => {
    const child = spawn('pulumi', argv(args), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const done = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
    // The engine starts its plugins in process groups of their own: the tree is found from the parent PIDs first.
    const kill = () =>
      descendants(child.pid!).forEach((pid) => {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      });
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(child.pid!, name);
      } catch {
        // gone already
      }
    };
    return { pid: child.pid!, output: () => output, done, kill, signal, descendants: () => descendants(child.pid!).slice(1).map((pid) => ({ pid, args: commandLine(pid) })) };
  };
  const stack: PulumiStack = {
    dir,
    configFile,
    run,
    start,
    async set(key, value, secret = false) {
      if (!secret) return editConfig(configFile, (config) => (config[`node-maint:${key}`] = value));
      const child = execFile('pulumi', ['config', 'set', '--secret', '--config-file', configFile, `node-maint:${key}`], { env });
      child.stdin!.end(value);
      await new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(null) : reject(new Error(`config set ${key}: ${code}`)))));
    },
    unset: (...keys) => editConfig(configFile, (config) => keys.forEach((k) => delete config[`node-maint:${k}`])),
    async setAll(plain, secret = {}) {
      const pairs = (flag: string, values: Record<string, string>) => Object.entries(values).flatMap(([k, v]) => [flag, `node-maint:${k}=${v}`]);
      await exec('pulumi', ['config', 'set-all', '--config-file', configFile, ...pairs('--plaintext', plain), ...pairs('--secret', secret)], { env });
    },
    stateText: () => readFileSync(join(dir, 'state', '.pulumi', 'stacks', 'node-maint', `${name}.json`), 'utf8'),
    outputs: () => JSON.parse(stack.stateText()).checkpoint.latest.resources.find((r: { type: string }) => r.type === 'pulumi:pulumi:Stack').outputs ?? {},
  };
  return stack;
}

/**
 * The stack's config file edited in process: a plain value is a string under `config`, as `pulumi config set` writes it
 * (each CLI start costs a third of a CPU second, some 70 a suite); the salt and secrets are left as they are.
 */
function editConfig(configFile: string, edit: (config: Record<string, unknown>) => void): void {
  const doc = (yaml.load(readFileSync(configFile, 'utf8')) ?? {}) as { config?: Record<string, unknown> };
  edit((doc.config ??= {}));
  writeFileSync(configFile, yaml.dump(doc, { lineWidth: -1 }));
}

/** The bed's nodes as stack config: every node over SSH as the non-root user, the key as a secret, in the order given. */
export async function configureBedFleet(stack: PulumiStack, nodes: string[], maxUnavailable: number): Promise<void> {
  const b = bed();
  const plain = {
    nodes: JSON.stringify(nodes),
    // The tests name which node is in which wave; fewest-pods (the default) would follow the bed's pods.
    order: 'as-listed',
    targets: JSON.stringify({ containerd: b.containerd.new }),
    maxUnavailable: String(maxUnavailable),
    kubeconfig: b.kubeconfig,
    ssh: JSON.stringify({ user: b.sshUser, knownHosts: b.knownHosts, hosts: Object.fromEntries(b.nodes.map((n) => [n.name, `127.0.0.1:${n.sshPort}`])) }),
    drain: JSON.stringify({ ignoreDaemonSets: true, deleteEmptyDirData: true, force: true, gracePeriodSeconds: 5 }),
  };
  await stack.setAll(plain, { sshKey: readFileSync(b.sshKey, 'utf8') });
}

/** The containerd version dpkg has on the node. */
export const containerdOn = async (t: TestNode) => (await t.sh("dpkg-query -W -f='${Version}' containerd")).trim();

/** A process and all its descendants, from /proc. */
function descendants(root: number): number[] {
  const parents = new Map<number, number[]>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), pid]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]!) ?? []));
  return tree;
}

/** A process's command line, '' once it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** A process's resident memory in KiB, undefined once it is gone (or a zombie, which has none). */
export function residentKiB(pid: number): number | undefined {
  try {
    const kib = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? undefined : Number(kib);
  } catch {
    return undefined;
  }
}

/** Moves a file, also across filesystems. */
function moveFile(from: string, to: string): void {
  writeFileSync(to, readFileSync(from));
  rmSync(from);
}
