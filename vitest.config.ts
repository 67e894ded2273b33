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
    // Two files at a time, each in a process of its own. Many files mostly wait (on a broker's
    // timeouts, a camera's reconnection, a lock's heartbeat), so two at a time take far less than
    // twice one at a time, even on two cores; more would have real ffmpeg and ONNX Runtime work
    // fight over them. What files share is made safe for it: each RTSP server, Kafka broker that a
    // test stops and Python environment is a file's own or taken under a lock.
    pool: 'forks',
    maxWorkers: 2,
    minWorkers: 1,
    reporters: ['default', 'json'],
    outputFile: { json: '.test-results/vitest.json' },
  },
});
