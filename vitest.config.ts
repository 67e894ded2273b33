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
    // Three files at a time, each in a process of its own. Many files mostly wait (on a broker's
    // timeouts, a camera's reconnection, a lock's heartbeat): with two at a time the suite used
    // about 70 % of a 2-core machine (18.7 CPU minutes in 13.5; 2026-12-07), and its wall time was
    // over the 10 minutes it should take. What files share is made safe for it: each RTSP server,
    // Kafka broker that a test stops and Python environment is a file's own or taken under a lock.
    pool: 'forks',
    maxWorkers: 3,
    minWorkers: 1,
    reporters: ['default', 'json'],
    outputFile: { json: '.test-results/vitest.json' },
  },
});
