/**
 * A camera moved between two workers mid-cooldown: the old owner's planned stop writes its rules'
 * cooldowns still running into its release record, and the new owner's chain takes them over
 * before its first analysed frame. Two workers driven without a broker (test/helpers/worker.ts):
 * the old owner's release record, as it wrote it, is read by the new owner's view, as the owners
 * topic would carry it. Real analyzers; their frames are fed by the test (virtual time: pts).
 */
import { Observable } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { RELEASE_KEY_PREFIX, type OwnersRecord } from '../../src/cluster/view.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
const nobody = () => new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

const W = 640, H = 480;
const record = { uri: 'rtsp://127.0.0.1/cam', zones: [{ id: 'bay', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]] }], rules: [{ id: 'in-bay', type: 'zone-enter', zone: 'bay', cooldownSec: 60 }] };
const person = (id: number, box = [100, 100, 160, 260]) => new Detections(Float32Array.from(box), Float32Array.of(0.9), Int32Array.of(0), Int32Array.of(id));

/** A worker whose camera `cam` runs a real analyzer; `frame()` passes one frame through its chain's gate (what the pipeline does before analysis); `owners` records are kept in `written`. */
async function worker(name: string) {
  const d = await drivenWorker<DrivenInternals>();
  const { i } = d;
  const topic = 'argus.owners';
  const analyzer = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', ...record }), ['person'], 'camera cam');
  analyzer.init(W, H);
  let gate: (() => boolean) | undefined;
  i.pipeline = {
    stats: [],
    analyzers: new Map([['cam', analyzer]]),
    attach: (_src: unknown, stop$: Observable<void>, admit: () => boolean) =>
      new Observable<never>((sub) => {
        gate = admit;
        const s = stop$.subscribe({ complete: () => sub.complete() });
        return () => s.unsubscribe();
      }),
  };
  const written: OwnersRecord[] = [];
  let offset = 100;
  const w = d.w as unknown as { incarnation: string };
  const put = (key: string, rec: OwnersRecord) => {
    written.push(rec);
    i.view.ingest(topic, 0, key, Buffer.from(JSON.stringify(rec)), String(offset));
    return offset++;
  };
  i.owners = {
    claim: async (ids: string[]) => ids.map((camera) => put(camera, { type: 'claim', camera, owner: name, incarnation: w.incarnation, at: Date.now() })),
    release: async (camera: string, epoch: number, cooldowns?: unknown[]) => void put(`${RELEASE_KEY_PREFIX}${camera}`, JSON.parse(JSON.stringify({ type: 'release', camera, owner: name, incarnation: w.incarnation, epoch, at: Date.now(), ...(cooldowns ? { cooldowns } : {}) }))),
    ready: async () => {},
  };
  /** Frames through the gate and, admitted, the analyzer: the alerts' tracks. */
  const frames = (fromMs: number, n: number, id: number) => {
    const out: number[] = [];
    for (let k = 0; k < n; k++) if (gate?.()) for (const a of analyzer.process(person(id), fromMs + k * 100).alerts) out.push(a.trackId as number);
    return out;
  };
  return { ...d, analyzer, frames, written, topic };
}

describe('a camera moved mid-cooldown between workers', () => {
  it('the new owner does not alert the person again before the cooldown ends; a fresh camera does at once', async () => {
    const a = await worker('w1');
    a.write('cam', record);
    await a.settle();
    a.frames(0, 1, 1); // the standby's first frame: the claim is taken
    await a.settle();
    expect(a.frames(0, 20, 1)).toEqual([1]); // alerted on the old owner
    // The slot goes to w2, whose connection delivers frames ("ready"): a planned stop, then the release.
    a.i.assigned = new Set();
    await a.settle(); // it runs on, handing off
    a.i.view.ingest(a.topic, 0, 'ready/cam', Buffer.from(JSON.stringify({ type: 'ready', camera: 'cam', owner: 'w2', incarnation: 'x', at: Date.now() })), '500');
    await a.settle();
    await new Promise((r) => setTimeout(r, 50));
    await a.settle();
    const release = a.written.find((r) => r.type === 'release');
    expect(release).toMatchObject({ type: 'release', camera: 'cam', cooldowns: [{ rule: 'in-bay', leftMs: 58_100, box: [0.1563, 0.2083, 0.25, 0.5417] }] });

    // The new owner reads w1's claim and release from the owners topic, then claims the camera itself.
    const b = await worker('w2');
    const claim = a.written.find((r) => r.type === 'claim')!;
    b.write('cam', record);
    b.i.view.ingest(b.topic, 0, 'cam', Buffer.from(JSON.stringify(claim)), '10');
    b.i.view.ingest(b.topic, 0, `${RELEASE_KEY_PREFIX}cam`, Buffer.from(JSON.stringify({ ...release, epoch: 10 })), '11');
    await b.settle();
    b.frames(0, 1, 9);
    await b.settle();
    // Its own pts and track ids: the person still there is not alerted again.
    expect(b.frames(0, 100, 9)).toEqual([]);

    // Without what w1 handed over (a camera new to the cluster): alerted at once.
    const c = await worker('w3');
    c.write('cam', record);
    await c.settle();
    c.frames(0, 1, 9);
    await c.settle();
    expect(c.frames(0, 20, 9)).toEqual([9]);
  });

  afterEach(() => void vi.useRealTimers());

  it('what is left is counted to the first frame the new owner analyses, not to its claim: a source that delivers its first frame 25 s after the claim takes 5 s of 30', async () => {
    // Only the wall clock is faked (the release's `at`, read against the new owner's); timers run.
    vi.useFakeTimers({ toFake: ['Date'] });
    const b = await worker('w2');
    b.write('cam', record);
    const at = Date.now();
    b.i.view.ingest(b.topic, 0, 'cam', Buffer.from(JSON.stringify({ type: 'claim', camera: 'cam', owner: 'w1', incarnation: 'i1', at })), '10');
    b.i.view.ingest(b.topic, 0, `${RELEASE_KEY_PREFIX}cam`, Buffer.from(JSON.stringify({ type: 'release', camera: 'cam', owner: 'w1', incarnation: 'i1', epoch: 10, at, cooldowns: [{ rule: 'in-bay', leftMs: 30_000, box: [0.1563, 0.2083, 0.25, 0.5417] }] })), '11');
    await b.settle(); // claimed, and the claim holds
    expect(b.written.map((r) => r.type)).toEqual(['claim']);
    // Its source gives its first frame 25 s later (a reconnect): 5 s of the cooldown are left then.
    vi.setSystemTime(at + 25_000);
    expect(b.frames(0, 10, 9)).toEqual([]); // the person, still there: theirs
    const seen: number[] = [];
    for (let k = 0; k < 30; k++) if (b.analyzer.process(nobody(), 1000 + k * 100).alerts.length) seen.push(k);
    expect(seen).toEqual([]);
    // Back 6 s after that first frame: the 5 s left have passed, alerted as the old owner would have. Before, 30 s were counted from it.
    expect(b.frames(6000, 10, 9)).toEqual([9]);
  });
});
