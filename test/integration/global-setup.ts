import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync } from 'node:fs';
import type { TestProject } from 'vitest/node';

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
  // Only the kind file uses the kind cluster (it thaws it while it runs); frozen meanwhile, it costs no CPU.
  if (JSON.parse(readFileSync(ENV, 'utf8')).kind) {
    execFileSync('bash', ['testbed/ctl', 'kind-pause'], { stdio: 'inherit' });
    // Thawed without blocking vitest's event loop: the thaw waits for the cluster to settle (10 s and more), and a
    // blocked loop let vitest's 10 s timer for the last workers' exit fire first ("Timeout terminating forks worker").
    return async () => void (await promisify(execFile)('bash', ['testbed/ctl', 'kind-resume']));
  }
  return undefined;
}

declare module 'vitest' {
  export interface ProvidedContext {
    testbed: string;
  }
}
