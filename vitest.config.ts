import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/helpers/setup-state.ts'],
    // Derived models are made once, before any file (see the file).
    globalSetup: ['test/helpers/global-setup.ts'],
    // A bound that only ends a hang: runs with the real model take minutes on a busy 2-core machine.
    testTimeout: 300_000,
    hookTimeout: 120_000,
    // Real ffmpeg and ONNX Runtime work: two cores, so keep files from fighting over them.
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default', 'json'],
    outputFile: { json: '.test-results/vitest.json' },
  },
});
