import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          // One real node, one cluster: integration files run one at a time (vitest orders them; each sets up its own start).
          fileParallelism: false,
          sequence: { shuffle: false },
          testTimeout: 600_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
