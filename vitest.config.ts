import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/** Files in the order of their names on every machine: vitest's default puts failed and slow files first from its
 *  cache (larger files first without one), so CI and a warm machine would run the bed's tests in different orders. */
class ByFileName extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const key = (f: TestSpecification) => `${f.project.name}:${f.moduleId}`;
    return [...files].sort((a, b) => key(a).localeCompare(key(b)));
  }
}

export default defineConfig({
  test: {
    reporters: ['default'],
    sequence: { sequencer: ByFileName },
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          // One real node, one cluster: integration files run one at a time (in name order; each sets up its own start).
          fileParallelism: false,
          sequence: { shuffle: false },
          testTimeout: 600_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
