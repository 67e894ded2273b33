import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.js';
import { pipelineBaseDir } from '../../src/pipeline/pipeline.js';
import { runPipeline } from '../../src/pipeline/run.js';
import '../helpers/assets.js';
import { assertValidMessage } from '../helpers/schema.js';

const ROOT = resolve(__dirname, '../..');

// Each test plays a whole video through the real model at `rate: fast` (every frame is
// processed, so the results do not depend on the machine's speed). That takes 50–85 s idle and
// many minutes on a busy 2-core machine: the bounds below (~20× idle) only end a hang.
const SAFETY_ZONE_TIMEOUT = 1_800_000;
const CONVEYOR_TIMEOUT = 1_200_000;

async function runFile(pipelineFile: string) {
  const file = resolve(ROOT, pipelineFile);
  const config = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'fast', ARGUS_SNAPSHOTS: 'embed' });
  const out = join(mkdtempSync(join(tmpdir(), 'argus-rules-')), 'out.jsonl');
  const summary = await runPipeline(config, { baseDir: pipelineBaseDir(file), jsonl: out, status: false });
  const msgs = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  return { summary, msgs, alerts: msgs.filter((m) => m.type === 'alert'), frames: msgs.filter((m) => m.type === 'detections') };
}

describe('safety-zone.yaml on the person video', () => {
  it('raises one alert per person who steps into the zone, each with a snapshot', async () => {
    const { alerts, frames } = await runFile('pipelines/safety-zone.yaml');
    // Ground truth, from contact sheets of the video at one frame per second (looked at by
    // eye): six people walk in one at a time and step up to the table at about these times.
    // Each window runs from the second the person appears at the bottom edge until they stand
    // at the table; the zone is the floor in front of the table.
    const arrivals: [number, number][] = [[6, 10], [23, 27], [50, 54], [75, 79], [92, 96], [124, 128]];
    // In pts order: an alert reaches the file once its snapshot is rendered, and renders of
    // alerts close together may finish in either order.
    const enters = alerts.filter((a) => a.alert.rule === 'person-in-zone').sort((a, b) => a.seq - b.seq);
    expect(enters).toHaveLength(6);
    enters.forEach((a, i) => {
      expect(a.pts, `alert ${i}`).toBeGreaterThanOrEqual(arrivals[i][0]);
      expect(a.pts, `alert ${i}`).toBeLessThanOrEqual(arrivals[i][1]);
    });
    expect(new Set(enters.map((a) => a.alert.trackId)).size).toBe(6);
    for (const a of alerts) {
      assertValidMessage(a);
      expect(a.alert.severity).toBeTypeOf('string');
      expect(a.stamps.published).toBeGreaterThan(a.stamps.captured);
      const jpeg = Buffer.from(a.alert.snapshot.data, 'base64');
      expect(jpeg.length).toBeLessThanOrEqual(150_000);
      const meta = await sharp(jpeg).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', a.alert.snapshot.width, a.alert.snapshot.height]);
      // At the camera's resolution (768x432, under maxWidth 832), not the model's 416x234.
      expect([meta.width, meta.height]).toEqual([768, 432]);
      // The triggering detection is in the alert, with its track id.
      expect(a.detections.some((d: { trackId?: number }) => d.trackId === a.alert.trackId)).toBe(true);
    }
    // Occupancy is in every detections message; someone is in the zone while standing at the table.
    expect(frames.every((f) => typeof f.analytics.zones['table-area'].occupancy === 'number')).toBe(true);
    expect(frames.find((f) => f.pts === 100).analytics.zones['table-area'].occupancy).toBe(1);
    expect(frames.find((f) => f.pts === 3).analytics.zones['table-area'].occupancy).toBe(0);
    // Track ids appear in the messages.
    expect(frames.some((f) => f.detections.some((d: { trackId?: number }) => d.trackId !== undefined))).toBe(true);
  }, SAFETY_ZONE_TIMEOUT);
});

describe('conveyor.yaml on the bottle video', () => {
  it('counts the bottles set down and taken away, and flags hands reaching in', async () => {
    const { alerts, frames } = await runFile('pipelines/conveyor.yaml');
    // Ground truth, from contact sheets at one frame per second and the detector's own
    // positions at 2 per second (looked at by eye): three bottles stand on the line at the
    // start; bottles are taken away at ~6.5 s (left), ~17.5 s (left and middle) and ~31.5 s
    // (right) — four removals — and set down at ~11.5 s (left), ~22.5 s (middle), ~27.5 s
    // (left) and ~35 s (right) — four arrivals from above; three stand there at the end.
    const last = frames.at(-1).analytics;
    expect(last.lines['drop-line']).toEqual({ in: { bottle: 4 }, out: { bottle: 4 } });
    expect(last.zones.belt).toEqual({ occupancy: 3, entered: 7 }); // 3 at the start + 4 set down
    // A hand reaching in is detected as a person: the foreign-object rule fires near those times.
    const hands = [6.5, 12.3, 16.6, 23.3, 28.2];
    const foreign = alerts.filter((a) => a.alert.rule === 'foreign-object');
    expect(foreign.length).toBeGreaterThanOrEqual(4);
    for (const a of foreign) expect(hands.some((t) => Math.abs(a.pts - t) < 1.5), `alert at ${a.pts}`).toBe(true);
    for (const a of alerts) assertValidMessage(a);
  }, CONVEYOR_TIMEOUT);
});
