/**
 * A worker that gets no frame from a camera of its slots for cluster.unreachableAfterMs (its
 * network cannot reach it) reports the slot in its member data and asks the group once to
 * rebalance, so that the leader gives the slot to a worker that can run it. Before, it kept the
 * slot and retried for ever: the camera stayed dark. Drives the worker without a broker, on a
 * virtual clock (performance.now).
 */
import { AssignerProtocol } from 'kafkajs';
import type { Observable } from 'rxjs';
import { filter, Subject, takeUntil } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { assignSlots } from '../../src/cluster/assign.js';
import { readGroup } from '../../src/cluster/kafkajs-membership.js';
import { HOLLOW_ATTEMPTS, UNREACHABLE_FORGET_MAX_MS, UNREACHABLE_FORGET_MS } from '../../src/cluster/worker.js';
import type { SourceState } from '../../src/sources/health.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  c: { unreachableAfterMs: number };
  assigned: Set<number>;
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
});
afterEach(() => vi.restoreAllMocks());

async function worker() {
  const lines: { msg: string; level?: string }[] = [];
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg, _f, level) => lines.push({ msg, level }) });
  let asked = 0;
  (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => void asked++;
  // Each chain's gate, by camera: calling it is a frame from the camera.
  const frame = new Map<string, () => boolean>();
  i.pipeline = {
    stats: [],
    attach: (src: { id: string }, stop$: Observable<void>, admit: () => boolean) => {
      frame.set(src.id, admit);
      return stop$.pipe(filter(() => false));
    },
  };
  const state = (source: string, s: SourceState) => w.publishesStatus({ source, state: s, previous: 'starting', reason: s, at: Date.now(), attempt: 1 });
  const at = async (ms: number) => {
    now = 1_000_000 + ms;
    await settle();
  };
  const reported = () => w.memberInfo().unreachable;
  return { w, i, settle, write, asked: () => asked, frame: (id: string) => frame.get(id)!(), state, at, reported, lines };
}

describe('Worker: a camera of its slots that gives it no frame', () => {
  it('is reported (its slot in the member data) after unreachableAfterMs, logged, and the group asked to rebalance once', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    expect(h.w.cameras().map((c) => c.id)).toEqual(['cam0']);
    h.state('cam0', 'reconnecting');
    await h.at(29_000);
    h.state('cam0', 'reconnecting'); // a retry failed again, 29 s on: not yet unreachableAfterMs
    await h.at(30_500);
    expect(h.asked()).toBe(0);
    expect(h.reported()).toEqual([]);
    h.state('cam0', 'reconnecting'); // and again past it: reported
    await h.settle();
    expect(h.asked()).toBe(1);
    expect(h.lines.some((l) => l.level === 'warn' && /cam0 \(slot 0\) gave w1 no frame for 31 s \(reconnecting\): reported unreachable/.test(l.msg))).toBe(true);
    expect((h.w.health().cluster as { unreachable: unknown }).unreachable).toEqual([{ id: 'cam0', slot: 0, here: true }]);
    expect(h.w.counters.unreachableReports).toBe(1);
    // The next join (the rebalance asked for) tells the group: not asked again, however long it stays.
    expect(h.reported()).toEqual([0]);
    await h.at(60_000);
    await h.at(600_000);
    expect(h.asked()).toBe(1);
  });

  it('an edit of its cost or placement alone keeps the report (where its slot went, and here); an edit of its source ends it', async () => {
    // Its connection is what its source says, and cost and placement leave that as it is (a
    // running camera so edited runs on). The report was withdrawn at any edit: a re-weigh of the
    // cameras let the slot come back at the next rebalance to the worker that cannot reach it,
    // dark again for unreachableAfterMs before it moved once more.
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'reconnecting');
    await h.at(30_500);
    h.state('cam0', 'reconnecting');
    await h.settle();
    expect(h.reported()).toEqual([0]);
    // Still its slot: re-weighed, it stays reported.
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x', cost: 2 });
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    // Its slot gone to a worker that reaches it.
    h.i.assigned = new Set();
    await h.at(32_000);
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x', cost: 3, placement: { labels: {} } });
    await h.at(33_000);
    expect(h.reported()).toEqual([0]);
    expect(h.lines.some((l) => /was edited; no longer reported/.test(l.msg))).toBe(false);
    // Its address edited: perhaps reachable now.
    h.write('cam0', { uri: 'rtsp://10.9.9.10/x', cost: 3, placement: { labels: {} } });
    await h.at(34_000);
    expect(h.reported()).toEqual([]);
  });

  it('a camera waiting out a retry delay, its cost edited meanwhile, is not reported by time alone', async () => {
    // Its chain runs on through the edit (no new connect): what its attempts told still holds.
    // The edit made its record of attempts anew, as for a new chain whose first attempt hangs: 30 s
    // on, it was reported (its slot moved, with its healthy cameras) though no attempt had failed.
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x', reconnect: { maxDelayMs: 60_000 } });
    await h.at(0);
    h.state('cam0', 'reconnecting'); // its first attempt failed; the next in up to 60 s
    await h.at(1000);
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x', reconnect: { maxDelayMs: 60_000 }, cost: 2 });
    await h.at(2000);
    for (let t = 5000; t <= 50_000; t += 5000) await h.at(t);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(0);
    // Its next attempt fails too, past unreachableAfterMs: reported, as without the edit.
    h.state('cam0', 'reconnecting');
    await h.at(51_000);
    expect(h.reported()).toEqual([0]);
  });

  it('asks again only when the rebalance it asked for did not tell the group (no join came within 10 s)', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.asked()).toBe(1);
    await h.at(35_000);
    expect(h.asked()).toBe(1);
    await h.at(41_500);
    expect(h.asked()).toBe(2);
  });

  it('a frame again ends the report; a camera that streamed counts its time from its last frame', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(20_000);
    h.frame('cam0'); // a frame at 20 s
    await h.at(45_000);
    expect(h.reported()).toEqual([]);
    await h.at(50_500);
    expect(h.reported()).toEqual([0]);
    h.frame('cam0');
    await h.at(51_000);
    expect(h.reported()).toEqual([]);
    expect(h.lines.some((l) => /cam0 reaches w1 again/.test(l.msg))).toBe(true);
  });

  it('a connection that is up (streaming) is not reported, however long between frames', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.frame('cam0');
    h.state('cam0', 'streaming');
    await h.at(120_000);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(0);
  });

  it('its slot gone elsewhere, the report stays for 10 min after it was last found (the slot is not given back meanwhile), then ends', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]); // the leader gave slot 0 to another worker
    await h.at(32_000);
    await h.at(31_000 + UNREACHABLE_FORGET_MS - 1000);
    expect(h.reported()).toEqual([0]);
    await h.at(31_000 + UNREACHABLE_FORGET_MS);
    expect(h.reported()).toEqual([]);
  });

  it('back here while the report stands (every worker reported it: it stayed), it is not asked about again; the report ends once the camera is edited', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]);
    await h.at(40_000);
    h.i.assigned = new Set([0]);
    await h.at(100_000);
    expect(h.reported()).toEqual([0]);
    expect(h.asked()).toBe(1);
    h.write('cam0', { uri: 'rtsp://10.9.9.10/x' }); // a fixed address
    await h.at(101_000);
    expect(h.reported()).toEqual([]);
  });

  it('unreachableAfterMs 0: never reported', async () => {
    const h = await worker();
    h.i.c.unreachableAfterMs = 0;
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(3_600_000);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(0);
  });
});

describe('Worker: no false report (a camera its worker can reach, or has not tried, is not reported)', () => {
  it('an edit that ends a report counts afresh: the fixed camera is not reported again before it has had unreachableAfterMs', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.write('cam0', { uri: 'rtsp://10.9.9.10/x' }); // the address fixed: restarted under the new record
    await h.at(32_000);
    await h.at(33_000);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(1);
    // The new record's own time: reported once it too gives no frame for unreachableAfterMs.
    await h.at(62_500);
    expect(h.reported()).toEqual([0]);
  });

  it('a camera waiting for its claim (a planned move: the old owner still streams a one-session camera) is not reported while it waits', async () => {
    const h = await worker();
    const owners = 'argus.owners';
    (h.i as unknown as { c: { releaseWaitMs?: number } }).c.releaseWaitMs = 60_000;
    const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
    h.i.view.ingest(owners, 0, 'cam0', rec({ type: 'claim', camera: 'cam0', owner: 'w0', incarnation: 'i0', at: 1 }), '0');
    (h.i as unknown as { members: Set<string> }).members = new Set(['w0/i0', `w1/${h.w.incarnation}`]);
    h.write('cam0', { uri: 'rtsp://h/x' });
    await h.at(0);
    h.state('cam0', 'reconnecting'); // refused: w0 holds its one session
    await h.at(31_000);
    await h.at(55_000);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(0);
  });

  it('a camera whose claim cannot be written (no chain runs for it) is not reported: nothing tried to reach it', async () => {
    const h = await worker();
    const claim = (h.i.owners as { claim: unknown }).claim;
    (h.i.owners as { claim: unknown }).claim = async () => {
      throw new Error('NOT_LEADER_FOR_PARTITION');
    };
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    await h.at(40_000);
    expect(h.reported()).toEqual([]);
    // The claims written again: its time counts from its start here.
    (h.i.owners as { claim: unknown }).claim = claim;
    await h.at(41_000);
    expect(h.w.cameras().map((c) => c.id)).toEqual(['cam0']);
    await h.at(70_000);
    expect(h.reported()).toEqual([]);
    await h.at(71_500);
    expect(h.reported()).toEqual([0]);
  });

  it('the time its lease did not hold does not count (a broker outage with no camera running here)', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.frame('cam0');
    h.i.running.clear(); // its chain ended, nothing running when the lease lapsed
    const m = h.i.membership as { lastAlive: number };
    m.lastAlive = now - 10_000; // the lease lapsed: no reconciliation does anything
    await h.at(40_000);
    m.lastAlive = Infinity; // back
    await h.at(41_000);
    expect(h.reported()).toEqual([]);
  });

  it('its own event loop held (a long GC, SIGSTOP for 40 s) does not count: on waking, before the frames it missed arrive, nothing is reported', async () => {
    const h = await worker();
    (h.i as unknown as { c: { sessionTimeoutMs: number } }).c.sessionTimeoutMs = 120_000; // its lease outlasts the stop
    const beat = () => (h.i as unknown as { beat: () => void }).beat();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    beat();
    h.frame('cam0');
    h.state('cam0', 'streaming');
    now = 1_000_000 + 40_000; // SIGSTOP for 40 s, then SIGCONT: the source's watchdog fires first
    h.state('cam0', 'stalled');
    await h.settle();
    beat();
    await h.settle();
    expect(h.reported()).toEqual([]);
    h.frame('cam0'); // the frames it missed
    // A camera that is really dark from then on is still reported, unreachableAfterMs after the wake.
    h.state('cam0', 'reconnecting');
    for (let t = 40_000; t <= 71_000; t += 100) {
      now = 1_000_000 + t;
      beat();
    }
    h.state('cam0', 'reconnecting'); // a retry that failed 31 s after the wake
    await h.settle();
    expect(h.reported()).toEqual([0]);
  });
});

describe('Worker: the slots whose holder reports them too (down for all), as read of the group', () => {
  it('keep its own report of such a slot 160 min; a read of another generation (lacking its own slots) changes nothing', async () => {
    const h = await worker();
    type OnMembers = (m: undefined, held: Set<number> | undefined, u: boolean, dark: Set<number>) => void;
    const onMembers = (held: number[], dark: number[]) => (h.w as unknown as { onMembers: OnMembers }).onMembers(undefined, new Set(held), false, new Set(dark));
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'starting');
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]); // moved; its new holder reports it too
    onMembers([0, 1], [0]);
    await h.at(32_000);
    // A read while the group rebalanced again (this worker's slot 1 not in it): not this generation's.
    onMembers([0], []);
    await h.at(31_000 + UNREACHABLE_FORGET_MS + 60_000);
    expect(h.reported()).toEqual([0]);
    await h.at(31_000 + UNREACHABLE_FORGET_MAX_MS - 1000);
    expect(h.reported()).toEqual([0]);
    await h.at(31_000 + UNREACHABLE_FORGET_MAX_MS);
    expect(h.reported()).toEqual([]);
  });

  it('a settled read where the holder no longer reports it (it got a frame): the report counts down as usual again', async () => {
    const h = await worker();
    type OnMembers = (m: undefined, held: Set<number> | undefined, u: boolean, dark: Set<number>) => void;
    const onMembers = (held: number[], dark: number[]) => (h.w as unknown as { onMembers: OnMembers }).onMembers(undefined, new Set(held), false, new Set(dark));
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'starting');
    await h.at(31_000);
    h.i.assigned = new Set([1]);
    onMembers([0, 1], [0]);
    await h.at(20 * 60_000);
    expect(h.reported()).toEqual([0]);
    onMembers([0, 1], []);
    await h.at(20 * 60_000 + 1000);
    expect(h.reported()).toEqual([]);
  });
});

describe('Worker: only failed connection attempts tell (no report of a camera whose path works)', () => {
  it('an input ffmpeg opened whose first frame comes later than unreachableAfterMs (a 10 s GOP, a low setting) is not reported', async () => {
    const h = await worker();
    h.i.c.unreachableAfterMs = 5000;
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'starting');
    await h.at(300);
    h.w.sourceOpened('cam0'); // ffmpeg reported the video stream; the key frame is 10 s away
    for (let t = 1000; t < 10_000; t += 1000) await h.at(t);
    expect(h.reported()).toEqual([]);
    // Its first frame at 10 s, within the attempt: never reported.
    h.frame('cam0');
    h.state('cam0', 'streaming');
    for (let t = 10_000; t < 60_000; t += 5000) await h.at(t);
    expect(h.reported()).toEqual([]);
    expect(h.asked()).toBe(0);
  });

  it(`attempts that open the input and end with no frame (an MTU black hole past the stream's description): reported at the ${HOLLOW_ATTEMPTS}rd in a row, not before; before, never`, async () => {
    const h = await worker();
    h.i.c.unreachableAfterMs = 5000;
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'starting');
    await h.at(300);
    h.w.sourceOpened('cam0'); // the stream described; no picture ever comes
    // Its start timeout (8 s) ends each attempt; the next opens the input again a second on.
    for (let k = 1; k <= HOLLOW_ATTEMPTS; k++) {
      const t0 = k * 10_000;
      for (let t = t0 - 9000; t < t0; t += 1000) await h.at(t);
      expect([k, h.reported()]).toEqual([k, []]);
      await h.at(t0);
      h.state('cam0', 'reconnecting');
      await h.settle();
      if (k < HOLLOW_ATTEMPTS) {
        expect([k, h.reported()]).toEqual([k, []]);
        await h.at(t0 + 1000);
        h.w.sourceOpened('cam0');
      }
    }
    expect(h.reported()).toEqual([0]);
    expect(h.asked()).toBe(1);
    // An opening ends no such report; a frame does.
    await h.at(HOLLOW_ATTEMPTS * 10_000 + 1000);
    h.w.sourceOpened('cam0');
    await h.at(HOLLOW_ATTEMPTS * 10_000 + 2000);
    expect(h.reported()).toEqual([0]);
    h.frame('cam0');
    h.state('cam0', 'streaming');
    await h.at(HOLLOW_ATTEMPTS * 10_000 + 3000);
    expect(h.reported()).toEqual([]);
  });

  it('an attempt that gave frames and then stalled is no hollow one: a camera that streams between its outages is not reported for them', async () => {
    const h = await worker();
    h.i.c.unreachableAfterMs = 5000;
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    for (let k = 0; k < 2 * HOLLOW_ATTEMPTS; k++) {
      const t0 = k * 10_000;
      await h.at(t0 + 500);
      h.w.sourceOpened('cam0');
      await h.at(t0 + 1000);
      h.frame('cam0');
      h.state('cam0', 'streaming');
      await h.at(t0 + 2000);
      h.state('cam0', 'reconnecting'); // a stall after its frames
      await h.at(t0 + 9000);
    }
    expect(h.reported()).toEqual([]);
  });

  it('a retry delay (reconnect.maxDelayMs) as long as unreachableAfterMs does not count: the camera is reported only when an attempt fails after it', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.frame('cam0');
    h.state('cam0', 'streaming');
    await h.at(1000);
    h.state('cam0', 'reconnecting'); // a blip: retry in 30 s
    for (let t = 2000; t <= 31_000; t += 1000) await h.at(t);
    expect(h.reported()).toEqual([]);
    // The retry connects: reachable, never reported.
    h.w.sourceOpened('cam0');
    await h.at(31_500);
    h.frame('cam0');
    h.state('cam0', 'streaming');
    await h.at(32_000);
    expect(h.reported()).toEqual([]);
    // Another outage whose retry, 30 s on, fails too: that is a failed attempt past unreachableAfterMs.
    await h.at(40_000);
    h.state('cam0', 'reconnecting');
    await h.at(70_500);
    expect(h.reported()).toEqual([]);
    h.state('cam0', 'reconnecting');
    await h.settle();
    expect(h.reported()).toEqual([0]);
  });

  it("the worker's own wait before starting an ended chain again does not count; its next failed attempt does", async () => {
    const h = await worker();
    const ends: Subject<never>[] = [];
    h.i.pipeline = {
      stats: [],
      attach: (_src: unknown, stop$: Observable<void>) => {
        const end = new Subject<never>();
        ends.push(end);
        return end.pipe(takeUntil(stop$));
      },
    };
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(25_000);
    ends[0].complete(); // its source gave up at 25 s; the worker starts it again 10 s on
    for (let t = 26_000; t <= 37_000; t += 500) {
      await h.at(t);
      expect([t, ends.length, h.reported()]).toEqual([t, ends.length, []]);
    }
    expect(ends.length).toBe(2);
    ends[1].complete(); // the new chain's attempts failed too
    await h.at(37_100);
    expect(h.reported()).toEqual([0]);
  });

  it('a first attempt that neither opens the input nor fails (a connect that hangs) is reported after unreachableAfterMs', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    h.state('cam0', 'starting');
    await h.at(29_000);
    expect(h.reported()).toEqual([]);
    await h.at(30_500);
    expect(h.reported()).toEqual([0]);
  });
});

describe('Worker: a report moves the whole slot', () => {
  it('the warning names the healthy cameras of the slot that move with the unreachable one', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    h.write('cam1', { uri: 'rtsp://10.1.1.1/x' }); // same slot (0), reachable
    await h.at(0);
    for (let t = 1000; t <= 31_000; t += 1000) {
      h.frame('cam1');
      await h.at(t);
    }
    expect(h.reported()).toEqual([0]);
    const warn = h.lines.find((l) => l.level === 'warn' && /cam0 \(slot 0\) gave w1 no frame/.test(l.msg));
    expect(warn?.msg).toMatch(/slot 0's other camera\(s\) cam1 move with it/);
  });
});

describe('Worker: a camera down for every worker does not flap', () => {
  it('a camera reported again under the same record, with no frame here between, is kept reported twice as long each time (10, 20, 40 min …)', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]); // moved to the other worker, which cannot reach it either
    await h.at(32_000);
    await h.at(31_000 + UNREACHABLE_FORGET_MS);
    expect(h.reported()).toEqual([]); // the first report: 10 min
    // Back here at the next rebalance (the other worker's report stands): tried again, still dark.
    const back = 31_000 + UNREACHABLE_FORGET_MS + 60_000;
    h.i.assigned = new Set([0]);
    await h.at(back);
    await h.at(back + 31_000);
    expect(h.reported()).toEqual([0]);
    expect(h.lines.some((l) => l.level === 'warn' && /report 2 from here, kept 20 min/.test(l.msg))).toBe(true);
    h.i.assigned = new Set([1]);
    await h.at(back + 32_000);
    await h.at(back + 31_000 + UNREACHABLE_FORGET_MS + 1000);
    expect(h.reported()).toEqual([0]); // the second: 20 min
    await h.at(back + 31_000 + 2 * UNREACHABLE_FORGET_MS);
    expect(h.reported()).toEqual([]);
  });

  it('an edit of its cost or placement alone keeps the count: its source is what was reported', async () => {
    // Before, the count was kept by the record's text: a re-weigh between two reports (the
    // operator balancing load while the camera was down) made the next one a first, kept 10 min,
    // and the dark camera came back every 10 min with its slot's healthy cameras.
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]);
    await h.at(32_000);
    await h.at(31_000 + UNREACHABLE_FORGET_MS);
    expect(h.reported()).toEqual([]);
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x', cost: 3 });
    await h.at(31_000 + UNREACHABLE_FORGET_MS + 1000);
    const back = 31_000 + UNREACHABLE_FORGET_MS + 60_000;
    h.i.assigned = new Set([0]);
    await h.at(back);
    await h.at(back + 31_000);
    expect(h.reported()).toEqual([0]);
    expect(h.lines.some((l) => l.level === 'warn' && /report 2 from here, kept 20 min/.test(l.msg))).toBe(true);
    // An edit of its source counts afresh.
    h.write('cam0', { uri: 'rtsp://10.9.9.8/x', cost: 3 });
    await h.at(back + 32_000);
    await h.at(back + 64_000);
    expect(h.reported()).toEqual([0]);
    expect(h.lines.filter((l) => l.level === 'warn' && /report 1 from here, kept 10 min/.test(l.msg))).toHaveLength(2);
  });

  it('a frame here forgets the count: the next report is kept 10 min again', async () => {
    const h = await worker();
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await h.at(0);
    await h.at(31_000);
    expect(h.reported()).toEqual([0]);
    h.frame('cam0'); // it reaches this worker again
    await h.at(32_000);
    expect(h.reported()).toEqual([]);
    await h.at(63_000);
    expect(h.reported()).toEqual([0]);
    h.i.assigned = new Set([1]);
    await h.at(64_000);
    await h.at(63_000 + UNREACHABLE_FORGET_MS);
    expect(h.reported()).toEqual([]);
  });
});

/**
 * Two workers and one camera (slot 0; slot 1 empty), a rebalance every minute (joins, leaves,
 * other workers' reports) and at once when a worker asks; after each, every worker reads the
 * group as KafkajsMembership does (readGroup: the slots whose holder reports them). `reaches(k, t)`:
 * whether worker k gets frames from the camera at t ms. Returns the minutes of each move.
 */
async function twoWorkers(hours: number, reaches: (k: number, t: number) => boolean) {
  const a = await worker();
  const b = await worker();
  for (const h of [a, b]) h.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
  a.i.assigned = new Set([0]);
  b.i.assigned = new Set([1]);
  const owner = () => (a.i.assigned.has(0) ? 'a' : 'b');
  const moves: number[] = [];
  let asked = 0;
  const rebalance = () => {
    const before = owner();
    const members = [a, b].map((h, k) => ({ memberId: 'ab'[k], workerId: `w${k}`, capacity: 1, owned: [...h.i.assigned], unreachable: h.w.memberInfo().unreachable }));
    const plan = assignSlots(members, [0, 1], (s) => (s === 0 ? 1 : 0));
    a.i.assigned = new Set(plan.get('a'));
    b.i.assigned = new Set(plan.get('b'));
    const group = readGroup(
      members.map((m) => ({
        memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['t'], userData: Buffer.from(JSON.stringify({ ...m, incarnation: m.workerId, labels: {}, placement: true })) }),
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { t: plan.get(m.memberId)! }, userData: Buffer.alloc(0) }),
      })),
      't',
    );
    for (const h of [a, b]) (h.w as unknown as { onMembers: (m: undefined, held: undefined, u: boolean, dark: Set<number>) => void }).onMembers(undefined, undefined, false, group.dark);
    if (owner() !== before) moves.push(Math.round(now / 60_000 - 1_000_000 / 60_000));
  };
  for (let t = 0; t <= hours * 3_600_000; t += 1000) {
    await a.at(t);
    await b.settle();
    [a, b].forEach((h, k) => {
      if (h.i.assigned.has(0) && reaches(k, t)) {
        h.frame('cam0');
        h.state('cam0', 'streaming');
      } else if (h.i.assigned.has(0) && t % 2000 === 0) h.state('cam0', 'reconnecting'); // a retry every 2 s fails
    });
    if (t % 60_000 === 0 || a.asked() + b.asked() > asked) rebalance();
    asked = a.asked() + b.asked();
  }
  return { moves, a, b };
}

describe('a camera down for both of two workers, over virtual hours', () => {
  it('its slot moves once in its first 30 min (was 3: at 0.5, 11 and 21 min), and once per UNREACHABLE_FORGET_MAX_MS after (was 7 times in 3 h)', async () => {
    const { moves } = await twoWorkers(3, () => false);
    expect(moves.filter((m) => m <= 30)).toEqual([1]);
    expect(moves).toEqual([1, 1 + UNREACHABLE_FORGET_MAX_MS / 60_000]);
  });

  it('a camera only one worker cannot reach still moves, and that report then expires after 10 min as before (the holder reports nothing)', async () => {
    const { moves, a } = await twoWorkers(0.5, (k) => k === 1);
    expect(moves).toEqual([1]);
    expect(a.reported()).toEqual([]);
  });
});

describe('Worker: a camera whose chain ends by itself again and again', () => {
  it('is still reported: its restarts (a claim each, pending a moment) do not count its time afresh', async () => {
    const h = await worker();
    const ends: Subject<never>[] = [];
    h.i.pipeline = {
      stats: [],
      attach: (_src: unknown, stop$: Observable<void>) => {
        const end = new Subject<never>();
        ends.push(end);
        return end.pipe(takeUntil(stop$));
      },
    };
    h.write('cam0', { uri: 'rtsp://10.9.9.9/x' }); // its source fails after its attempts: the chain ends
    await h.at(0);
    for (let t = 1000; t <= 40_000; t += 1000) {
      if (t % 5000 === 0) ends[ends.length - 1].complete(); // ended; started again 10 s on
      await h.at(t);
    }
    expect(ends.length).toBeGreaterThan(2);
    expect(h.reported()).toEqual([0]);
  });
});

describe('Worker: a group with a member of a release before unreachable reports (readGroup reportsUnaware)', () => {
  it('warns once per such stretch, and says what it means: a reported slot may stay until a worker of this version leads the group (such a leader moves it at once)', async () => {
    const h = await worker();
    type OnMembersAll = (m: Set<string> | undefined, held?: Set<number>, placementUnaware?: boolean, dark?: Set<number>, reportsUnaware?: boolean) => void;
    const onMembers = (unaware: boolean) => (h.w as unknown as { onMembers: OnMembersAll }).onMembers(new Set(['w1/i', 'old/i']), new Set([0]), false, new Set(), unaware);
    const warned = () => h.lines.filter((l) => l.level === 'warn' && l.msg.includes('before unreachable reports'));
    onMembers(true);
    onMembers(true);
    expect(warned().length).toBe(1);
    // Not "moves at the first rebalance after every member runs this version": a leader of this
    // version moves it while the older member is still in the group.
    expect(warned()[0].msg).toMatch(/may stay until a worker of this version leads the group/);
    expect(warned()[0].msg).not.toMatch(/after every member runs this version/);
    // The older one left; another joins later: said again.
    onMembers(false);
    onMembers(true);
    expect(warned().length).toBe(2);
  });
});
