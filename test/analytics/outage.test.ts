/**
 * A camera's outage through the tracker and the zone rules together: detections without ids,
 * ByteTracker, then the analyzer, on virtual time.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { OUTAGE_MS } from '../../src/core/clock.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

const W = 640, H = 480;
/** A person whose feet are at (400, 400): inside the zone (the right half of the floor). */
const person = () => new Detections(Float32Array.from([380, 300, 420, 400]), Float32Array.from([0.9]), Int32Array.from([0]));

function scene() {
  const a = new SourceAnalyzer(
    SourceSchema.parse({
      id: 'cam',
      uri: '/x.mp4',
      zones: [{ id: 'z', polygon: [[0.5, 0.625], [1, 0.625], [1, 1], [0.5, 1]], dwellLimitSec: 60 }],
      rules: [
        { id: 'in', type: 'zone-enter', zone: 'z' },
        { id: 'out', type: 'zone-exit', zone: 'z' },
        { id: 'stay', type: 'zone-dwell', zone: 'z' },
      ],
    }),
    ['person'],
    'sources[0]',
  );
  a.init(W, H);
  const tracker = new ByteTracker({ frameRateHint: 10 });
  const alerts: { event: string; trackId?: number; t: number }[] = [];
  const play = (from: number, to: number) => {
    for (let t = from; t < to; t += 100) for (const x of a.process(tracker.update(person(), t), t).alerts) alerts.push({ event: x.event as string, trackId: x.trackId as number | undefined, t });
  };
  return { alerts, play };
}

describe('a camera outage, tracker and zones together', () => {
  it('someone standing where a person stood before a 10-minute outage enters (an alert), with no dwell of 10 minutes; the one before has left', () => {
    const { alerts, play } = scene();
    play(0, 5000);
    play(605_000, 610_000); // the camera was down for 10 minutes
    expect(alerts.map((x) => [x.event, x.trackId])).toEqual([
      ['zone.enter', 1],
      ['zone.exit', 1],
      ['zone.enter', 2],
    ]);
    // (Before, the newcomer kept id 1 and raised "has stayed 604.6 s", and no entry.)
    expect(alerts.some((x) => x.event === 'zone.dwell')).toBe(false);
  });

  it('a stall within OUTAGE_MS is no evidence: the person keeps the id, the stay goes on, no new entry', () => {
    const { alerts, play } = scene();
    play(0, 5000);
    play(5000 + OUTAGE_MS - 200, 10_000 + OUTAGE_MS);
    expect(alerts.map((x) => [x.event, x.trackId])).toEqual([['zone.enter', 1]]);
  });
});

describe('a source whose own pace is slower than OUTAGE_MS', () => {
  const run = (times: number[]) => {
    const a = new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: 'rtsp://cam/x',
        fps: 0.1,
        zones: [{ id: 'z', polygon: [[0.5, 0.625], [1, 0.625], [1, 1], [0.5, 1]], exitDelayMs: 60_000 }],
        rules: [
          { id: 'in', type: 'zone-enter', zone: 'z' },
          { id: 'out', type: 'zone-exit', zone: 'z' },
        ],
      }),
      ['person'],
      'sources[0]',
    );
    a.init(W, H);
    const tracker = new ByteTracker({ frameRateHint: 0.1, lostTrackBufferMs: 30_000 });
    const alerts: [string, number | undefined][] = [];
    for (const t of times) for (const x of a.process(tracker.update(person(), t), t).alerts) alerts.push([x.event as string, x.trackId as number | undefined]);
    return alerts;
  };

  it('fps 0.05 (a frame every 20 s, its usual pace): the person standing in the zone enters once and stays', () => {
    expect(run(Array.from({ length: 12 }, (_, k) => k * 20_000))).toEqual([['zone.enter', 1]]);
  });

  it('fps 0.1 with arrival jitter (gaps of 9.98 to 10.02 s): still one track, one entry', () => {
    expect(run(Array.from({ length: 12 }, (_, k) => k * 10_000 + (k % 2 ? 20 : -20)))).toEqual([['zone.enter', 1]]);
  });

  it('at that pace a real outage (10 minutes) is still one', () => {
    const times = Array.from({ length: 8 }, (_, k) => k * 20_000);
    for (let k = 0; k < 8; k++) times.push(800_000 + k * 20_000);
    expect(run(times)).toEqual([['zone.enter', 1], ['zone.exit', 1], ['zone.enter', 2]]);
  });
});
