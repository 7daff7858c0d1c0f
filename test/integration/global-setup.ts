import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { bedCpu, bedCpuLines, bedCpuSpent } from './bed-cpu.js';

const ENV = '/var/lib/node-maint-testbed/env.json';

/**
 * Brings the local test cluster up unless it already runs (testbed/up is idempotent), and hands its env to tests; the
 * kind cluster is left as it was found, running.
 */
export default function setup(project: TestProject) {
  let up = existsSync(ENV);
  if (up) {
    try {
      execFileSync('bash', ['testbed/status'], { stdio: 'ignore' });
    } catch {
      up = false;
    }
  }
  if (!up) execFileSync('bash', ['testbed/up'], { stdio: 'inherit' });
  project.provide('testbed', readFileSync(ENV, 'utf8'));
  const cpuLog = join(tmpdir(), `node-maint-suite-cpu-${process.pid}.jsonl`);
  project.provide('cpuLog', cpuLog);
  const machine = machineCpu();
  const dockerHost = (JSON.parse(readFileSync(ENV, 'utf8')) as { bedDockerHost: string }).bedDockerHost;
  const bed = bedCpu(dockerHost);
  const accounting = startAccounting(join(tmpdir(), `node-maint-suite-acct-${process.pid}`));
  const report = () => {
    printCpuTable(cpuLog, machineCpu() - machine, [...bedCpuLines(bedCpuSpent(bed, bedCpu(dockerHost))), accounting()]);
    rmSync(cpuLog, { force: true });
  };
  // Only the kind file uses the kind cluster (it thaws it while it runs); frozen meanwhile, it costs no CPU.
  if (JSON.parse(readFileSync(ENV, 'utf8')).kind) {
    execFileSync('bash', ['testbed/ctl', 'kind-pause'], { stdio: 'inherit' });
    // Thawed without blocking vitest's event loop: the thaw waits for the cluster to settle (10 s and more), and a
    // blocked loop let vitest's 10 s timer for the last workers' exit fire first ("Timeout terminating forks worker").
    return async () => {
      report();
      await promisify(execFile)('bash', ['testbed/ctl', 'kind-resume']);
    };
  }
  return report;
}

/**
 * Busy CPU seconds of the whole machine since boot (/proc/stat's first line: user, nice, system, irq and softirq). Not
 * steal: a hypervisor may count a VM's idle time as stolen, which is no work of the suite's.
 */
function machineCpu(): number {
  const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq!) / 100;
}

/**
 * Process accounting (acct's accton) for the suite's run: at its end, the CPU of every process that ended meanwhile,
 * by command, wherever it ran (the tests' CLIs, vitest's own workers, what ran in the nodes), which the table's other
 * lines cannot see; daemons that run on are in those lines. A line that says so when accounting cannot be had.
 */
function startAccounting(file: string): () => string {
  try {
    writeFileSync(file, '');
    execFileSync('accton', [file], { stdio: 'ignore' });
  } catch (e) {
    return () => `  processes by command: no process accounting (accton: ${(e as Error).message.split('\n')[0]})`;
  }
  return () => {
    try {
      execFileSync('accton', ['off'], { stdio: 'ignore' });
      // sa's totals, in CPU minutes: "CALLS REre CPUcp AVIOavio MEMk COMMAND"; the first line is the sum of all.
      const rows = execFileSync('sa', ['-a', file], { encoding: 'utf8' }).trim().split('\n').slice(1)
        .map((l) => /^\s*(\d+)\s+\S+re\s+([\d.]+)cp\s.*\s(\S+)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ command: m[3]!, calls: Number(m[1]), seconds: Number(m[2]) * 60 }))
        .sort((a, b) => b.seconds - a.seconds);
      const total = rows.reduce((n, r) => n + r.seconds, 0);
      const top = rows.slice(0, 15).map((r) => `${r.command} ${r.seconds.toFixed(0)} (${r.calls})`).join(', ');
      return `  processes that ended meanwhile, each counted whole (since it started), by command (CPU s, runs): ${total.toFixed(0)} s: ${top}`;
    } catch (e) {
      return `  processes by command: could not be read (${(e as Error).message.split('\n')[0]})`;
    } finally {
      rmSync(file, { force: true });
    }
  };
}

/** The integration files by CPU (their own process and the CLIs they ran), beside the machine's whole busy time. */
function printCpuTable(log: string, machineSeconds: number, bedLines: string[]): void {
  if (!existsSync(log)) return;
  const rows = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { file: string; own: number; clis: number; wall: number });
  const total = rows.reduce((n, r) => n + r.own + r.clis, 0);
  const line = (r: (typeof rows)[number]) => `  ${(r.own + r.clis).toFixed(0).padStart(5)} s CPU (own ${r.own.toFixed(0)}, CLIs ${r.clis.toFixed(0)}), ${r.wall.toFixed(0).padStart(4)} s wall  ${r.file}`;
  console.log([
    `Where the CPU went: ${total.toFixed(0)} s in the integration files and the CLIs they ran, of ${machineSeconds.toFixed(0)} s the machine was busy (the rest: the bed's daemons, kubelets, runtimes, vitest)`,
    ...rows.sort((a, b) => b.own + b.clis - (a.own + a.clis)).slice(0, 10).map(line),
    "Where the bed's CPU went meanwhile:",
    ...bedLines,
  ].join('\n'));
}

declare module 'vitest' {
  export interface ProvidedContext {
    testbed: string;
    cpuLog: string;
  }
}
