import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { afterAll, beforeAll, expect, inject } from 'vitest';

// Where the suite's CPU goes (issue 45): each integration file's own process and the CLIs it ran (children it waited
// for), beside its wall time, one line per file into the run's log; the global teardown prints the table.
const TICKS_PER_SECOND = 100; // Linux's USER_HZ, what /proc/PID/stat counts in

/** This process's CPU and its waited-for children's, in seconds (/proc/self/stat: utime stime cutime cstime). */
export function cpuSeconds(stat = readFileSync('/proc/self/stat', 'utf8')): { own: number; children: number } {
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ').map(Number);
  return { own: (f[11]! + f[12]!) / TICKS_PER_SECOND, children: (f[13]! + f[14]!) / TICKS_PER_SECOND };
}

let start = { own: 0, children: 0, at: 0 };
beforeAll(() => {
  start = { ...cpuSeconds(), at: Date.now() };
});
afterAll(() => {
  const end = cpuSeconds();
  const file = relative(process.cwd(), expect.getState().testPath ?? 'unknown');
  const line = { file, own: end.own - start.own, clis: end.children - start.children, wall: (Date.now() - start.at) / 1000 };
  appendFileSync(inject('cpuLog'), `${JSON.stringify(line)}\n`);
});
