import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Each test file gets an outbox state folder of its own (inherited by the argus processes it
// spawns), so one file's undelivered alerts are never replayed into another file's topics.
if (!process.env.ARGUS_TEST_KEEP_STATE_DIR) process.env.ARGUS_STATE_DIR = mkdtempSync(join(tmpdir(), 'argus-state-'));
