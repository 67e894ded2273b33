import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/setup-state.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Real ffmpeg and ONNX Runtime work: two cores, so keep files from fighting over them.
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', 'json'],
    outputFile: { json: '.test-results/vitest.json' },
  },
});
