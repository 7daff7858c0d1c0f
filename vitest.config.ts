import { statSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The same order on every machine (vitest's default puts failed and slow files first from its cache): integration files
 * largest first (the size of a file is a fair guess at how long it waits), so the long ones start while the short ones
 * fill the gaps, then the unit files by name, in the last integration files' waits.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const size = (f: TestSpecification) => (f.project.name === 'integration' ? statSync(f.moduleId).size : 0);
    const key = (f: TestSpecification) => `${f.project.name}:${f.moduleId}`;
    return [...files].sort((a, b) => size(b) - size(a) || key(a).localeCompare(key(b)));
  }
}

export default defineConfig({
  test: {
    reporters: ['default'],
    sequence: { sequencer: LongestFirst },
    // Integration files run side by side, each on pool nodes it leases (test/integration/pool.ts); most of their time
    // is waiting (grace periods, apt, kubelet restarts), not CPU.
    maxWorkers: 6,
    projects: [
      // Beside the integration files' runs, a unit file's first import (the Pulumi SDK's) can take seconds on 2 cores.
      // Unit files share their workers' module cache (isolate: false): 17 s of CPU instead of 38 s, each import once.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 60_000, isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          // Each file's CPU (its own and its CLIs'), printed as a table at the end (test/integration/cpu.ts).
          setupFiles: ['test/integration/cpu.ts'],
          fileParallelism: true,
          testTimeout: 1_800_000,
          // A fault file's cases each lease a node (onLeasedNode): three at a time, so that 2 cores are not swamped.
          maxConcurrency: 3,
          hookTimeout: 1_800_000,
        },
      },
    ],
  },
});
