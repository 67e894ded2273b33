/**
 * A rule's cooldown across a camera's move between workers: the old owner's chain hands over the
 * cooldowns still running (SourceAnalyzer.handover, carried in its release record) and the new
 * owner's chain takes them over (takeOver). A person already alerted, still where they were, is
 * not alerted again by the new owner before the cooldown ends; another person is, and so is
 * everyone on a camera that comes with nothing handed over. Virtual time: frames' pts.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer, type CarriedCooldown } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ClusterView, MAX_HANDOVER_COOLDOWNS, RELEASE_KEY_PREFIX } from '../../src/cluster/view.js';
import { brokerlessAdmin, brokerlessKafka } from '../helpers/worker.js';

const W = 640, H = 480;
const cfg = SourceSchema.parse({
  id: 'cam',
  uri: 'rtsp://127.0.0.1/cam',
  zones: [{ id: 'bay', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]] }],
  rules: [{ id: 'in-bay', type: 'zone-enter', zone: 'bay', cooldownSec: 60 }],
});

/** One frame: the given tracks (id → box). */
function frame(tracks: [number, [number, number, number, number]][]): Detections {
  return new Detections(
    Float32Array.from(tracks.flatMap(([, b]) => b)),
    Float32Array.from(tracks.map(() => 0.9)),
    Int32Array.from(tracks.map(() => 0)),
    Int32Array.from(tracks.map(([id]) => id)),
  );
}

/** A chain of the camera (an owner's analyzer), fed `n` frames at 10 fps from `fromMs` with `tracks`: its alerts' tracks. */
function run(a: SourceAnalyzer, fromMs: number, n: number, tracks: [number, [number, number, number, number]][]): number[] {
  const out: number[] = [];
  for (let k = 0; k < n; k++) for (const al of a.process(frame(tracks), fromMs + k * 100).alerts) out.push(al.trackId as number);
  return out;
}

const chain = () => {
  const a = new SourceAnalyzer(cfg, ['person'], 'camera cam');
  a.init(W, H);
  return a;
};

const alice: [number, number, number, number] = [100, 100, 160, 260];

describe('a zone rule\'s cooldown across a move', () => {
  it('the person alerted on the old owner, still there, is not alerted again by the new owner before the cooldown ends; after it, as without a move', () => {
    const a = chain();
    expect(run(a, 0, 20, [[1, alice]])).toEqual([1]);
    const carried: CarriedCooldown[] = JSON.parse(JSON.stringify(a.handover()));
    expect(carried).toEqual([{ rule: 'in-bay', leftMs: 58_100, box: [alice[0] / W, alice[1] / H, alice[2] / W, alice[3] / H].map((v) => Math.round(v * 1e4) / 1e4) }]);
    // The new owner: its own pts (from 0 again), its tracker's own ids, the person a pixel or two off.
    const b = chain();
    b.takeOver(carried);
    expect(run(b, 0, 50, [[7, [102, 99, 161, 262]]])).toEqual([]);
    // Within the cooldown the person steps out and back in under a new id: still held back (the key went on under id 7).
    expect(run(b, 5000, 10, [])).toEqual([]);
    expect(run(b, 30_000, 10, [[7, [102, 99, 161, 262]]])).toEqual([]);
    // Once 58.1 s have passed from the new owner's first frame: alerted again, as the old owner would have.
    expect(run(b, 58_200, 10, [])).toEqual([]);
    expect(run(b, 60_000, 10, [[7, [102, 99, 161, 262]]])).toEqual([7]);
  });

  it('without a hand-over (a fresh camera, or one the old owner could not release: a kill -9) the person is alerted at once', () => {
    const b = chain();
    expect(run(b, 0, 20, [[7, alice]])).toEqual([7]);
  });

  it('another person, elsewhere in the zone, is alerted by the new owner: a cooldown carried is the alerted person\'s, matched by place', () => {
    const a = chain();
    expect(run(a, 0, 20, [[1, alice]])).toEqual([1]);
    const b = chain();
    b.takeOver(a.handover()!);
    expect(run(b, 0, 20, [[4, [400, 200, 460, 360]], [5, [101, 101, 161, 261]]])).toEqual([4]);
  });

  it('a cooldown that ended on the old owner is not handed over; a rule the new record lacks is not taken', () => {
    const a = chain();
    run(a, 0, 20, [[1, alice]]);
    run(a, 2000, 600, []); // 60 s later
    expect(a.handover()).toEqual([]);
    const b = chain();
    b.takeOver([{ rule: 'gone', leftMs: 30_000, box: [0, 0, 1, 1] }]);
    expect(run(b, 0, 20, [[7, alice]])).toEqual([7]);
  });

  it('a conveyor rule\'s own cooldown goes on from the new owner\'s first frame for what was left', () => {
    const belt = SourceSchema.parse({ id: 'belt', uri: 'rtsp://127.0.0.1/belt', rules: [{ id: 'defect', type: 'conveyor-defect', classes: ['person'], k: 1, n: 1, cooldownSec: 60 }] });
    const mk = () => {
      const x = new SourceAnalyzer(belt, ['person'], 'camera belt');
      x.init(W, H);
      return x;
    };
    const untracked = () => new Detections(Float32Array.from(alice), Float32Array.of(0.9), Int32Array.of(0));
    const alerts = (x: SourceAnalyzer, from: number, n: number) => {
      let c = 0;
      for (let k = 0; k < n; k++) c += x.process(untracked(), from + k * 100).alerts.length;
      return c;
    };
    const a = mk();
    expect(alerts(a, 0, 100)).toBe(1); // 10 s: one alert, 50 s of its cooldown left
    const carried = a.handover();
    expect(carried).toEqual([{ rule: 'defect', leftMs: 50_100 }]);
    const b = mk();
    b.takeOver(carried!);
    expect(alerts(b, 0, 500)).toBe(0); // 50 s
    expect(alerts(b, 50_000, 10)).toBe(1);
    expect(alerts(mk(), 0, 10)).toBe(1); // a fresh camera: at once
  });
});

describe('a carried cooldown is never another person\'s alert', () => {
  it('a person alerted and gone from view before the move hands over nothing: another person entering where they were last seen is alerted by the new owner', () => {
    const a = chain();
    expect(run(a, 0, 20, [[1, alice]])).toEqual([1]);
    // They walk out of the picture (the doorway at alice's box): 5 s unseen before the move.
    run(a, 2000, 50, []);
    expect(a.handover()).toEqual([]);
    const b = chain();
    b.takeOver(a.handover()!);
    run(b, 0, 100, []);
    // Someone else comes in through the same doorway, 10 s into the new owner: the old owner would have alerted them.
    expect(run(b, 10_000, 20, [[7, alice]])).toEqual([7]);
  });

  it('a person still there at the move but not seen by the new owner at its start leaves nothing for someone else who comes to the same place later', () => {
    const a = chain();
    expect(run(a, 0, 20, [[1, alice]])).toEqual([1]);
    const carried = a.handover();
    expect(carried).toHaveLength(1); // seen on the last frame: carried
    const b = chain();
    b.takeOver(carried!);
    // They left as the camera moved: the new owner sees nobody for 20 s, then another person at that place.
    run(b, 0, 200, []);
    expect(run(b, 20_000, 20, [[7, alice]])).toEqual([7]);
  });

  it('a line rule: a second person crossing the door where the alerted one stands is alerted by the new owner', () => {
    const door = SourceSchema.parse({
      id: 'cam',
      uri: 'rtsp://127.0.0.1/cam',
      lines: [{ id: 'door', from: [320, 0], to: [320, 480], units: 'pixel' }],
      rules: [{ id: 'in-door', type: 'line-cross', line: 'door', direction: 'any', cooldownSec: 60 }],
    });
    const mk = () => {
      const x = new SourceAnalyzer(door, ['person'], 'camera cam');
      x.init(W, H);
      return x;
    };
    // Person 1 walks across the door (its box's centre from x 220 to 350) and stops just past it.
    const a = mk();
    const got: number[] = [];
    for (let k = 0; k <= 13; k++) got.push(...run(a, k * 100, 1, [[1, [190 + k * 10, 200, 250 + k * 10, 360]]]));
    expect(got).toEqual([1]);
    got.length = 0;
    for (let k = 0; k < 20; k++) got.push(...run(a, 1400 + k * 100, 1, [[1, [320, 200, 380, 360]]]));
    expect(got).toEqual([]);
    const carried = a.handover();
    expect(carried).toHaveLength(1);
    const b = mk();
    b.takeOver(carried!);
    // The new owner: person 1 (id 3 there) stands still; 10 s on, person 2 (id 4) walks across the door the same way and stops beside them.
    for (let k = 0; k < 100; k++) got.push(...run(b, k * 100, 1, [[3, [320, 200, 380, 360]]]));
    for (let k = 0; k <= 20; k++) got.push(...run(b, 10_000 + k * 100, 1, [[3, [320, 200, 380, 360]], [4, [190 + k * 10, 210, 250 + k * 10, 370]]]));
    expect(got).toEqual([4]);
  });
});

describe('a track whose id switched on the old owner', () => {
  it('hands over its cooldown under its new id, where it is now (a zone\'s stay taken over: reentrySuppressMs)', () => {
    const cfg2 = SourceSchema.parse({ ...cfg, zones: [{ id: 'bay', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]], reentrySuppressMs: 2000 }] });
    const a = new SourceAnalyzer(cfg2, ['person'], 'camera cam');
    a.init(W, H);
    expect(run(a, 0, 20, [[1, alice]])).toEqual([1]);
    run(a, 2000, 3, []); // hidden 0.3 s: found again under id 2 beside where they were, their stay taken over
    const there: [number, number, number, number] = [110, 100, 170, 260];
    expect(run(a, 2300, 20, [[2, there]])).toEqual([]);
    const carried = a.handover()!;
    expect(carried).toEqual([{ rule: 'in-bay', leftMs: expect.any(Number), box: [there[0] / W, there[1] / H, there[2] / W, there[3] / H].map((v) => Math.round(v * 1e4) / 1e4) }]);
    const b = new SourceAnalyzer(cfg2, ['person'], 'camera cam');
    b.init(W, H);
    b.takeOver(carried);
    expect(run(b, 0, 50, [[7, there]])).toEqual([]);
  });
});

describe('a conveyor stoppage announced by the old owner', () => {
  const belt = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'belt', from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: 'starved', type: 'conveyor-rate', line: 'belt', minPerMinute: 30, forSec: 3, windowSec: 10, cooldownSec: 60 }] });
  const mk = () => {
    const x = new SourceAnalyzer(belt, ['person'], 'camera cam');
    x.init(W, H);
    return x;
  };
  /** Frames from `from` to `to` (ms) at 10 fps: one item a second crossing the belt's line while `running(t)`; the alerts' events and seconds. */
  const feed = (x: SourceAnalyzer, from: number, to: number, running: (t: number) => boolean) => {
    const events: string[] = [];
    for (let t = from; t < to; t += 100) {
      const phase = t % 1000;
      const on = running(t - phase) && phase < 500;
      const y = 190 + phase / 5;
      const d = on ? new Detections(Float32Array.of(300, y - 20, 340, y + 20), Float32Array.of(0.9), Int32Array.of(0), Int32Array.of(1000 + Math.floor(t / 1000))) : new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
      for (const al of x.process(d, t).alerts) events.push(`${al.event}@${Math.floor(t / 1000)}`);
    }
    return events;
  };
  const stoppedAtMove = () => {
    const a = mk();
    // Runs 20 s, then stands still: announced at 28 s; the camera moves at 30 s, the belt still stopped.
    expect(feed(a, 0, 30_000, (t) => t < 20_000)).toEqual(['conveyor.stopped@28']);
    const b = mk();
    b.takeOver(a.handover()!);
    return b;
  };

  it('that ends on the new owner is announced there: its resumption follows the old owner\'s "stopped"', () => {
    // The belt starts again 5 s into the new owner (within the carried cooldown). Before, the new owner said nothing: a stoppage announced and never ended.
    expect(feed(stoppedAtMove(), 0, 30_000, (t) => t >= 5000)).toEqual(['conveyor.resumed@10']);
  });

  it('goes with the hand-over before any track\'s cooldown when there are more than 64 to carry', () => {
    const both = SourceSchema.parse({ ...belt, zones: [{ id: 'bay', polygon: [[0, 0], [1, 0], [1, 0.4], [0, 0.4]] }], rules: [...belt.rules, { id: 'in-bay', type: 'zone-enter', zone: 'bay', cooldownSec: 60 }] });
    const a = new SourceAnalyzer(both, ['person'], 'camera cam');
    a.init(W, H);
    expect(feed(a, 0, 30_000, (t) => t < 20_000)).toEqual(['conveyor.stopped@28']);
    // 70 people come into the bay (above the belt) and stand there: each alerted, each in view.
    const crowd: [number, [number, number, number, number]][] = Array.from({ length: 70 }, (_, k) => [5000 + k, [(k % 14) * 45 + 5, Math.floor(k / 14) * 36 + 5, (k % 14) * 45 + 35, Math.floor(k / 14) * 36 + 35]]);
    expect(run(a, 30_000, 20, crowd)).toHaveLength(70);
    const carried = a.handover()!;
    expect(carried).toHaveLength(64);
    expect(carried[0]).toEqual({ rule: 'starved', leftMs: expect.any(Number), open: true });
  });

  it('that goes on is not announced again by the new owner once the cooldown ends; its end is', () => {
    // Before, "stopped" again once the carried cooldown ended (58 s in), for the same stoppage.
    expect(feed(stoppedAtMove(), 0, 120_000, (t) => t >= 100_000)).toEqual(['conveyor.resumed@104']);
  });
});

describe('what the owners topic hands over, as a worker\'s view holds it', () => {
  it('a claim that never ran (a rebalance gave the slot on before its chain analysed a frame) releases without erasing what the camera\'s last chain handed over', async () => {
    const view = new ClusterView(brokerlessKafka().kafka, { cameras: 'c', owners: 'o' }, 'g', {}, undefined, {});
    await view.start(brokerlessAdmin());
    view.ingest('c', 0, 'cam', Buffer.from(JSON.stringify({ id: 'cam', uri: 'rtsp://127.0.0.1/x' })), '0');
    const rec = (r: object) => Buffer.from(JSON.stringify(r));
    const carried = [{ rule: 'in-bay', leftMs: 50_000, box: [0.1, 0.2, 0.3, 0.5] }];
    // w1 ran the camera and hands over; w2 and then w3 claim it (the slot moved twice); w2, which never ran it, releases.
    view.ingest('o', 0, 'cam', rec({ type: 'claim', camera: 'cam', owner: 'w1', incarnation: 'i1', at: 1 }), '10');
    view.ingest('o', 0, `${RELEASE_KEY_PREFIX}cam`, rec({ type: 'release', camera: 'cam', owner: 'w1', incarnation: 'i1', epoch: 10, at: 2, cooldowns: carried }), '11');
    view.ingest('o', 0, 'cam', rec({ type: 'claim', camera: 'cam', owner: 'w2', incarnation: 'i2', at: 3 }), '12');
    view.ingest('o', 0, 'cam', rec({ type: 'claim', camera: 'cam', owner: 'w3', incarnation: 'i3', at: 4 }), '13');
    view.ingest('o', 0, `${RELEASE_KEY_PREFIX}cam`, rec({ type: 'release', camera: 'cam', owner: 'w2', incarnation: 'i2', epoch: 12, at: 5 }), '14');
    expect(view.handovers.get('cam')).toEqual({ epoch: 10, at: 2, cooldowns: carried });
    // w3's chain ran it and had nothing left running at its stop: that release says so (an empty list), and nothing is handed over any more.
    view.ingest('o', 0, `${RELEASE_KEY_PREFIX}cam`, rec({ type: 'release', camera: 'cam', owner: 'w3', incarnation: 'i3', epoch: 13, at: 6, cooldowns: [] }), '15');
    expect(view.handovers.has('cam')).toBe(false);
  });

  it('is read bounded: 64 cooldowns a release at most, well-formed ones only, and MAX_HANDOVER_COOLDOWNS over every camera', async () => {
    const view = new ClusterView(brokerlessKafka().kafka, { cameras: 'c', owners: 'o' }, 'g', {}, undefined, {});
    await view.start(brokerlessAdmin());
    const n = Math.ceil(MAX_HANDOVER_COOLDOWNS / 64) + 50;
    let off = 0;
    for (let k = 0; k < n; k++) view.ingest('c', 0, `cam${k}`, Buffer.from(JSON.stringify({ id: `cam${k}`, uri: 'rtsp://127.0.0.1/x' })), String(k));
    const cooldowns = [
      ...Array.from({ length: 80 }, (_, j) => ({ rule: `r${j}`, leftMs: 60_000, box: [0.1, 0.1, 0.2, 0.3] })),
    ];
    const bad = [{ rule: '', leftMs: 5 }, { rule: 'x', leftMs: -1 }, { rule: 'x', leftMs: 1e12 }, { rule: 'x', leftMs: 5, box: [0, 0, 'a', 1] }, { rule: 'x', leftMs: 5, dir: 'up' }, { rule: 'x', leftMs: 0 }, null, 'x'];
    view.ingest('o', 0, 'cam0', Buffer.from(JSON.stringify({ type: 'claim', camera: 'cam0', owner: 'w1', incarnation: 'i', at: Date.now() })), String(off++));
    view.ingest('o', 0, `${RELEASE_KEY_PREFIX}cam0`, Buffer.from(JSON.stringify({ type: 'release', camera: 'cam0', owner: 'w1', incarnation: 'i', epoch: 0, at: Date.now(), cooldowns: [...bad, { rule: 'ok', leftMs: 5, dir: 'in' }, { rule: 'belt', leftMs: 0, open: true }] })), String(off++));
    expect(view.handovers.get('cam0')!.cooldowns).toEqual([{ rule: 'ok', leftMs: 5, dir: 'in' }, { rule: 'belt', leftMs: 0, open: true }]);
    for (let k = 0; k < n; k++) {
      const epoch = off;
      view.ingest('o', 0, `cam${k}`, Buffer.from(JSON.stringify({ type: 'claim', camera: `cam${k}`, owner: 'w1', incarnation: 'i', at: Date.now() })), String(off++));
      view.ingest('o', 0, `${RELEASE_KEY_PREFIX}cam${k}`, Buffer.from(JSON.stringify({ type: 'release', camera: `cam${k}`, owner: 'w1', incarnation: 'i', epoch, at: Date.now(), cooldowns })), String(off++));
    }
    const held = [...view.handovers.values()].reduce((t, h) => t + h.cooldowns.length, 0);
    expect(held).toBeLessThanOrEqual(MAX_HANDOVER_COOLDOWNS);
    expect(held).toBeGreaterThan(MAX_HANDOVER_COOLDOWNS - 64);
    expect(view.handovers.get(`cam${n - 1}`)!.cooldowns).toHaveLength(64); // the latest kept, the oldest dropped
    expect(view.handovers.has('cam0')).toBe(false);
    // A camera removed: what it handed over is forgotten.
    view.ingest('c', 0, `cam${n - 1}`, null, String(n));
    expect(view.handovers.has(`cam${n - 1}`)).toBe(false);
  });
});
