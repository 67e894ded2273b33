import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { runPipeline } from '../../src/pipeline/run.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox, strandedAlerts } from '../../src/sinks/outbox.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';

/** A journal in `dir` left with `n` undelivered alerts by a run that stopped (its lock released). */
async function leave(dir: string, n: number): Promise<void> {
  const outbox = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
  for (let i = 0; i < n; i++) {
    const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id: `${dir}-${i}` } } as unknown as AlertMessage;
    await outbox.append(a, JSON.stringify(a));
  }
  await outbox.close();
}

describe('undelivered alerts in a journal no run opens (a pipeline renamed, a worker whose id changed)', () => {
  let detector: Detector;
  let clip: string;
  beforeAll(async () => {
    ({ detector } = await fakeDetector());
    clip = join(mkdtempSync(join(tmpdir(), 'argus-stranded-clip-')), 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '3', '-pix_fmt', 'yuv420p', clip]);
  });
  afterAll(async () => {
    await detector?.release();
  });

  it('strandedAlerts names the other folders of the state directory whose journals hold alerts and that no argus holds', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-stranded-'));
    await leave(join(root, 'worker-local'), 2);
    await leave(join(root, 'mine'), 1); // the run's own: not another's
    await leave(join(root, 'busy'), 3);
    writeFileSync(join(root, 'busy', 'outbox.lock'), '{}\n'); // held (or its holder died holding it): not said
    await leave(join(root, 'delivered'), 0);
    mkdirSync(join(root, 'no-journal'));
    writeFileSync(join(root, 'a-file'), 'x');
    expect(Object.fromEntries(await strandedAlerts(join(root, 'mine')))).toEqual({ 'worker-local': 2 });
  });

  it('a run with the default outbox folder logs them, naming the folder and what sends them', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-stranded-run-'));
    await leave(join(root, 'worker-local'), 2);
    await leave(join(root, 'old-name'), 1);
    const config = parseConfigText(`name: worker-vm\nsources:\n  - {id: cam, uri: ${clip}, rate: fast}\noutbox: { enabled: true }\n`, PipelineSchema, 'p.yaml', {});
    const errors: string[] = [];
    await runPipeline(config, { detector, status: false, env: { ARGUS_STATE_DIR: root }, log: (m, _f, level) => void (level === 'error' && errors.push(m)) });
    // The check runs in the background: waited for (up to a minute on a busy machine).
    for (let t = 0; t < 600 && errors.filter((e) => e.startsWith('outbox:')).length < 2; t++) await new Promise((r) => setTimeout(r, 100));
    expect(errors).toContain(`outbox: ${join(root, 'worker-local')} holds 2 undelivered alert(s) that no argus has open; a worker whose id changed (its default is the machine's name): a worker run with ARGUS_WORKER_ID=local sends them (or a run of a pipeline named "worker-local")`);
    expect(errors).toContain(`outbox: ${join(root, 'old-name')} holds 1 undelivered alert(s) that no argus has open; a pipeline renamed: a run of it under the name "old-name" sends them`);
  });
});
