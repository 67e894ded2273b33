import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  argusOutput,
  argusPipelineYaml,
  argusSummary,
  checkYoloxDemo,
  medianOf,
  parsePeerBenchArgs,
  parseProcStat,
  parseProcStatus,
  peerOutput,
  peerTable,
  peerTargets,
  pythonFunction,
  resultsPerSecond,
  roundOrder,
  runFigures,
  schedule,
  rssLines,
  summarize,
  treeUsage,
  yoloxImports,
  type FrameRecord,
  type PeerJson,
  type Program,
  type RunSample,
  type ScenarioName,
} from '../../src/bench/peer.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { ErrorCodes } from '../../src/core/errors.js';
import { inferenceThreads } from '../../src/pipeline/pipeline.js';

/** bench:peer's pure parts (src/bench/peer.ts); scripts/bench-peer.ts runs the programs around them. */

const configError = (fn: () => unknown, text: RegExp) => {
  expect(fn).toThrow(text);
  try {
    fn();
  } catch (e) {
    expect((e as { code?: string }).code).toBe(ErrorCodes.CONFIG);
  }
};

describe('bench:peer arguments', () => {
  it('defaults to 3 rounds of 20 s with 2 threads; --json is required', () => {
    expect(parsePeerBenchArgs(['--json', 'out.json'])).toEqual({ json: 'out.json', rounds: 3, seconds: 20, threads: 2 });
    configError(() => parsePeerBenchArgs([]), /--json FILE is required/);
  });

  it('reads each flag as `--name value` and as `--name=value`', () => {
    expect(parsePeerBenchArgs(['--rounds', '5', '--json=f.json', '--seconds=2.5', '--threads', '1'])).toEqual({ json: 'f.json', rounds: 5, seconds: 2.5, threads: 1 });
  });

  it('names the flag that is wrong', () => {
    configError(() => parsePeerBenchArgs(['--json', 'f', '--rounds', '0']), /--rounds: expected a whole number from 1 to 100, got "0"/);
    configError(() => parsePeerBenchArgs(['--json', 'f', '--threads', '1.5']), /--threads: expected a whole number/);
    configError(() => parsePeerBenchArgs(['--json', 'f', '--threads', '65']), /--threads: expected a whole number from 1 to 64/);
    configError(() => parsePeerBenchArgs(['--json', 'f', '--seconds', '-1']), /--seconds: expected a number of seconds above 0/);
    configError(() => parsePeerBenchArgs(['--json', 'f', '--secs', '3']), /unknown argument "--secs"/);
    configError(() => parsePeerBenchArgs(['--json', 'f', '--rounds']), /--rounds needs a value/);
    configError(() => parsePeerBenchArgs(['--rounds', '--json', 'f']), /--rounds needs a value/);
  });
});

describe('bench:peer schedule', () => {
  it('rotates the programs each round', () => {
    expect([0, 1, 2, 3].map(roundOrder)).toEqual([
      ['argus', 'peerA', 'peerB'],
      ['peerA', 'peerB', 'argus'],
      ['peerB', 'argus', 'peerA'],
      ['argus', 'peerA', 'peerB'],
    ]);
  });

  it('runs every program on every scenario once per round, the three in turn, the round order throughout the round', () => {
    const plan = schedule(3);
    expect(plan).toHaveLength(27);
    expect(plan.slice(0, 6).map((p) => `${p.scenario}/${p.program}`)).toEqual(['live1080/argus', 'live1080/peerA', 'live1080/peerB', 'fast1080/argus', 'fast1080/peerA', 'fast1080/peerB']);
    for (let r = 0; r < 3; r++) {
      const round = plan.filter((p) => p.round === r);
      for (const s of ['live1080', 'fast1080', 'fast432']) expect(round.filter((p) => p.scenario === s).map((p) => p.program)).toEqual(roundOrder(r));
    }
    // Runs of a round are together: the rounds never interleave.
    expect(plan.map((p) => p.round)).toEqual([...plan.map((p) => p.round)].sort());
  });
});

describe('bench:peer argus pipeline', () => {
  it('is a valid pipeline: one file source at the rate asked, no loop, the model file and threads given, a JSONL sink, the demo NMS settings, no tracking', () => {
    const live = parseConfigText(argusPipelineYaml({ video: '/clips/person 1080p.mp4', rate: 'live', model: '/m/yolox_nano.onnx', threads: 3, jsonl: '/tmp/x/0-live.jsonl' }), PipelineSchema, 'bench.yaml');
    expect(live.sources).toHaveLength(1);
    expect(live.sources[0]).toMatchObject({ uri: '/clips/person 1080p.mp4', rate: 'native', loop: false });
    expect(live.model).toMatchObject({ manifest: 'yolox-nano', path: '/m/yolox_nano.onnx', intraOpThreads: 3 });
    expect(live.sinks.jsonl).toEqual({ path: '/tmp/x/0-live.jsonl', status: false });
    expect(live.postprocess).toMatchObject({ scoreThreshold: 0.1, iouThreshold: 0.45, classAgnostic: true });
    expect(live.tracking.enabled).toBe(false);
    const fast = parseConfigText(argusPipelineYaml({ video: 'v.mp4', rate: 'fast', model: 'm.onnx', threads: 2, jsonl: 'o.jsonl' }), PipelineSchema, 'bench.yaml');
    expect(fast.sources[0].rate).toBe('fast');
    // The same 2 threads, spent as argus's defaults spend them on such a file: 2 sessions × 1 thread.
    expect(fast.model).toMatchObject({ workers: 2, intraOpThreads: 1 });
    expect(inferenceThreads(fast)).toEqual({ workers: 2, intraOpThreads: 1 });
  });
});

const stamps = (produced: number | undefined, captured: number, emitted: number) => ({ ...(produced === undefined ? {} : { produced }), captured, preprocessed: captured + 1, inferStart: captured + 2, inferEnd: captured + 12, postprocessed: captured + 13, emitted, published: emitted + 1 });
const line = (seq: number, dropped: number, s: ReturnType<typeof stamps>, producedBy?: string) =>
  JSON.stringify({ type: 'detections', version: 1, source: 'bench', seq, pts: seq / 30, capturedAt: new Date(s.captured).toISOString(), ...(producedBy ? { producedBy } : {}), stamps: s, frame: { width: 1920, height: 1080 }, model: { name: 'yolox-nano', version: '1' }, dropped, detections: [] });

describe("bench:peer reads argus's output", () => {
  it('takes the due time from stamps.produced, and frames in and dropped from the last message; other message types are skipped', () => {
    const text = [
      line(0, 0, stamps(1000, 1040, 1060), 'due'),
      JSON.stringify({ type: 'status', version: 1, source: 'bench', state: 'streaming', previous: 'starting', reason: 'x', at: 1, attempt: 0, published: 2 }),
      line(2, 1, stamps(1066.7, 1100, 1130), 'due'),
      '',
    ].join('\n');
    const o = argusOutput(text);
    expect(o.due).toBe('produced');
    expect(o.producedBy).toBe('due');
    expect(o.records).toEqual([
      { due: 1000, emitted: 1060, captured: 1040, inferMs: 10 },
      { due: 1066.7, emitted: 1130, captured: 1100, inferMs: 10 },
    ]);
    expect(o.framesIn).toBe(3);
    expect(o.dropped).toBe(1);
  });

  it('falls back to `captured` for every frame when a message has no produced stamp', () => {
    const o = argusOutput([line(0, 0, stamps(1000, 1040, 1060), 'due'), line(1, 0, stamps(undefined, 1080, 1100))].join('\n'));
    expect(o.due).toBe('captured');
    expect(o.records.map((r) => r.due)).toEqual([1040, 1080]);
  });

  it("reads the counts of argus's source summary log line", () => {
    const stderr = ['{"level":30,"msg":"pipeline started"}', 'not json "source summary"', '{"level":30,"source":"bench","framesIn":612,"framesOut":600,"dropped":12,"msg":"source summary"}'].join('\n');
    expect(argusSummary(stderr)).toEqual({ framesIn: 612, framesOut: 600, dropped: 12 });
    expect(argusSummary('{"msg":"other"}')).toBeUndefined();
  });

  it("reads peer.py's records and counts", () => {
    const p: PeerJson = { program: 'peerB', framesRead: 10, framesOut: 2, dropped: 8, processStart: 1, firstResultMs: 5, cpuMs: { self: 1, children: 0 }, maxRssKb: { self: 1, children: 0 }, records: [{ k: 0, due: 10, emitted: 30, inferMs: 15, out: 1, dropped: 0, n: 1 }, { k: 9, due: 40, emitted: 60, inferMs: 16, out: 2, dropped: 8, n: 0 }] };
    expect(peerOutput(p)).toEqual({ records: [{ due: 10, emitted: 30, inferMs: 15 }, { due: 40, emitted: 60, inferMs: 16 }], framesIn: 10, dropped: 8 });
  });
});

describe('bench:peer /proc figures', () => {
  it('reads pid, parent, CPU ticks (own and waited-for children) and RSS from /proc/PID/stat, whatever the command name holds', () => {
    // Fields 14-17: utime 100, stime 20, cutime 7, cstime 3; field 24: rss 2500 pages.
    const stat = '4242 (node (argus) x) S 17 4242 17 0 -1 4194560 8700 0 0 0 100 20 7 3 20 0 11 0 2151364 5246976 2500 18446744073709551615 1 2 3';
    expect(parseProcStat(stat)).toEqual({ pid: 4242, ppid: 17, cpuTicks: 130, rssPages: 2500 });
    expect(() => parseProcStat('garbage')).toThrow(/\/proc\/\?\/stat: cannot read/);
  });

  it('splits a process\'s resident memory from /proc/PID/status into anonymous (shared memory with it) and file-backed', () => {
    const status = ['Name:\tffmpeg', 'Umask:\t0022', 'State:\tS (sleeping)', 'VmRSS:\t   87096 kB', 'RssAnon:\t   42720 kB', 'RssFile:\t   44000 kB', 'RssShmem:\t     376 kB', 'Threads:\t3'].join('\n');
    expect(parseProcStatus(status)).toEqual({ name: 'ffmpeg', anonMb: 42.09, fileMb: 42.97 });
    // A kernel thread has no RssAnon line; a truncated read none of them.
    expect(parseProcStatus('Name:\tkthreadd\nState:\tS (sleeping)\n')).toBeUndefined();
    expect(parseProcStatus('')).toBeUndefined();
  });

  it('sums a process and all its descendants, nothing else', () => {
    const ps = [
      { pid: 1, ppid: 0, cpuTicks: 1000, rssPages: 1000 },
      { pid: 10, ppid: 1, cpuTicks: 50, rssPages: 300 }, // argus
      { pid: 11, ppid: 10, cpuTicks: 40, rssPages: 200 }, // its ffmpeg
      { pid: 12, ppid: 11, cpuTicks: 1, rssPages: 5 }, // a grandchild
      { pid: 13, ppid: 1, cpuTicks: 999, rssPages: 999 }, // a sibling: not counted
    ];
    expect(treeUsage(ps, 10)).toEqual({ cpuTicks: 91, rssPages: 505, pids: [10, 11, 12] });
    expect(treeUsage(ps, 99)).toEqual({ cpuTicks: 0, rssPages: 0, pids: [] });
  });
});

/** A run's records: n results, one every `periodMs`, each `latencyMs` after its due time. */
const records = (n: number, periodMs: number, latencyMs: (i: number) => number, start = 10_000): FrameRecord[] =>
  Array.from({ length: n }, (_, i) => ({ due: start + i * periodMs, emitted: start + i * periodMs + latencyMs(i), inferMs: 15 + (i % 3) }));

function sample(round: number, scenario: ScenarioName, program: Program, o: Partial<RunSample> & { records: FrameRecord[] }): RunSample {
  const first = Math.min(...o.records.map((r) => r.emitted));
  return { round, scenario, program, framesIn: o.records.length, dropped: 0, spawnedAt: first - 1000, cpu: { from: first, to: first + 1e9, ms: 0 }, rssPeakMb: 100, load: { start: 2, end: 2.5 }, ...o };
}

describe('bench:peer figures', () => {
  it('frames per second over the results after the first; NaN with fewer than two', () => {
    expect(resultsPerSecond(records(31, 1000 / 30, () => 20))).toBeCloseTo(30, 6);
    expect(resultsPerSecond(records(1, 10, () => 0))).toBeNaN();
  });

  it('one run: due → emitted percentiles, drops, CPU per result in the window, cold start', () => {
    // 100 results at 30/s: latency 20 ms, except 2 at 200 ms (p99 is the 99th of 100 sorted: 200).
    const recs = records(100, 1000 / 30, (i) => (i >= 98 ? 200 : 20));
    const s = sample(0, 'live1080', 'peerA', { records: recs, framesIn: 104, dropped: 4, spawnedAt: recs[0].emitted - 750, cpu: { from: recs[9].emitted, to: recs[59].emitted, ms: 2500 }, rssPeakMb: 154 });
    const f = runFigures(s);
    expect(f.dueToEmittedP50).toBeCloseTo(20, 6);
    expect(f.dueToEmittedP99).toBeCloseTo(200, 6);
    expect(f.dropPct).toBeCloseTo((100 * 4) / 104, 9);
    expect(f.cpuMsPerFrame).toBe(50); // 2500 ms over the 50 results emitted after `from`, up to `to`
    expect(f.coldStartMs).toBe(750);
    expect(f.rssMb).toBe(154);
    expect(f.inferP50).toBe(16);
    expect(f.capturedToEmittedP50).toBeNaN(); // only argus has a captured stamp
  });

  it('the steady p99 leaves out the results of the first second after the first result, and only them', () => {
    // 90 results at 30/s (3 s): the first 3 at 300 ms, one at 2 s at 90 ms, the rest 20 ms.
    const recs = records(90, 1000 / 30, (i) => (i < 3 ? 300 : i === 60 ? 90 : 20));
    const f = runFigures(sample(0, 'live1080', 'argus', { records: recs }));
    expect(f.dueToEmittedP99).toBe(300); // the 90th of 90 sorted
    expect(f.dueToEmittedSteadyP99).toBe(90); // the start's three left out, the later slow one kept
    // A result emitted exactly a second after the first is still the start's.
    const edge = runFigures(sample(0, 'live1080', 'argus', { records: [{ due: 0, emitted: 10 }, { due: 980, emitted: 1010 }, { due: 1000, emitted: 1011 }] }));
    expect(edge.dueToEmittedSteadyP99).toBe(11);
  });

  it('the median of the finite values, null when none', () => {
    expect(medianOf([30, 10, 20])).toBe(20);
    expect(medianOf([NaN, 5])).toBe(5);
    expect(medianOf([])).toBeNull();
  });

  /** Three rounds; each program's live p50 latency per round is given, the rest fixed. */
  function threeRounds() {
    const lat: Record<Program, number[]> = { argus: [77, 90, 70], peerA: [25, 24, 30], peerB: [40, 41, 39] };
    const fps: Record<ScenarioName, Record<Program, number>> = {
      live1080: { argus: 30, peerA: 30, peerB: 30 },
      fast1080: { argus: 60, peerA: 40, peerB: 44 },
      fast432: { argus: 40, peerA: 40, peerB: 41 },
    };
    const out: RunSample[] = [];
    for (let round = 0; round < 3; round++)
      for (const scenario of ['live1080', 'fast1080', 'fast432'] as const)
        for (const program of roundOrder(round)) {
          const recs = records(61, 1000 / fps[scenario][program], () => lat[program][round]).map((r) => (program === 'argus' ? { ...r, captured: r.due + 10 } : r));
          out.push(
            sample(round, scenario, program, {
              records: recs,
              framesIn: program === 'argus' && scenario === 'live1080' ? 62 : 61,
              dropped: program === 'argus' && scenario === 'live1080' ? 1 : 0,
              cpu: { from: recs[0].emitted, to: recs[60].emitted, ms: (program === 'argus' ? 58 : 45) * 60 },
              rssPeakMb: program === 'argus' ? (scenario === 'fast1080' ? 276 + round : 200) : 154,
              spawnedAt: recs[0].emitted - (program === 'argus' ? 2000 : 700),
              load: { start: 2.1 + round / 10, end: 2.7 },
            }),
          );
        }
    return out;
  }

  it('medians over rounds, in the JSON shape of the issue', () => {
    const r = summarize(threeRounds(), { seconds: 20, threads: 2, argusDue: 'produced' });
    expect(r.live1080.dueToEmitted.p50).toEqual({ argus: 77, peerA: 25, peerB: 40 });
    expect(r.live1080.fps).toEqual({ argus: 30, peerA: 30, peerB: 30 });
    expect(r.live1080.dropPct).toEqual({ argus: 1.61, peerA: 0, peerB: 0 });
    expect(r.live1080.capturedToEmitted.p50).toEqual({ argus: 67, peerA: null, peerB: null });
    expect(r.fast1080.fps).toEqual({ argus: 60, peerA: 40, peerB: 44 });
    expect(r.fast432.fps.peerB).toBe(41);
    expect(r.cpuMsPerFrame).toEqual({ argus: 58, peerA: 45, peerB: 45 });
    // Each round's highest RSS (argus: 276, 277, 278 in fast1080), median over rounds.
    expect(r.rssMb).toEqual({ argus: 277, peerA: 154, peerB: 154 });
    // live1080 alone: argus's one-session runs peak at 200.
    expect(r.liveRssMb).toEqual({ argus: 200, peerA: 154, peerB: 154 });
    expect(r.coldStartMs).toEqual({ argus: 2000, peerA: 700, peerB: 700 });
    expect(r.load).toEqual({ min: 2.1, max: 2.7 });
    expect(r.rounds).toMatchObject({ count: 3, seconds: 20, threads: 2, argusDue: 'produced', order: [roundOrder(0), roundOrder(1), roundOrder(2)] });
    expect(r.rounds.runs).toHaveLength(27);
    // Keys are paths: the JSON text carries them nested.
    const j = JSON.parse(JSON.stringify(r));
    for (const path of ['live1080.dueToEmitted.p50', 'live1080.dueToEmitted.p99', 'live1080.dueToEmitted.steadyP99', 'live1080.fps', 'live1080.dropPct', 'fast1080.fps', 'fast432.fps', 'cpuMsPerFrame', 'rssMb', 'coldStartMs']) {
      const v = path.split('.').reduce((o, k) => o[k], j);
      expect(Object.keys(v), path).toEqual(['argus', 'peerA', 'peerB']);
    }
  });

  it("says where the RSS is: each process of the run whose peak is nearest the median, at its peak", () => {
    const runs = threeRounds().map((x) => (x.program === 'argus' && x.scenario === 'fast1080' ? { ...x, rssAtPeak: [{ name: 'node', anonMb: 120 + x.round, fileMb: 70 }, { name: 'ffmpeg', anonMb: 43, fileMb: 44 }] } : x.program === 'peerA' ? { ...x, rssAtPeak: [{ name: 'python', anonMb: 101, fileMb: 53 }] } : x));
    const r = summarize(runs, { seconds: 20, threads: 2, argusDue: 'produced' });
    // argus's rounds peak at 276, 277, 278 MB: the median's run is round 1's.
    expect(r.rssByProcess.argus).toEqual([{ name: 'node', anonMb: 121, fileMb: 70 }, { name: 'ffmpeg', anonMb: 43, fileMb: 44 }]);
    expect(r.rssByProcess.peerA).toEqual([{ name: 'python', anonMb: 101, fileMb: 53 }]);
    expect(r.rssByProcess.peerB).toBeNull();
    expect(rssLines(r)).toEqual(['  argus: node 121 + 70, ffmpeg 43 + 44 MB', '  peer A: python 101 + 53 MB', '  peer B: —']);
  });

  it('prints the table with argus ÷ peer A', () => {
    const t = peerTable(summarize(threeRounds(), { seconds: 20, threads: 2, argusDue: 'produced' }));
    const rows = t.split('\n');
    expect(rows[0]).toBe('| figure | argus | peer A | peer B | argus ÷ A |');
    expect(rows).toContain('| live 1080p30, frames out/s | 30 (1.61 % dropped) | 30 (0 % dropped) | 30 (0 % dropped) | 1 |');
    expect(rows).toContain('| live 1080p30, frame due → result emitted, p50 | 77 ms | 25 ms | 40 ms | 3.08 |');
    expect(rows).toContain("| live 1080p30, argus's own `captured` → `emitted`, p50 / p99 | 67 / 67 ms | — | — | — |");
    expect(rows).toContain('| 1080p as fast as possible, frames/s | 60 | 40 | 44 | 1.5 |');
    expect(rows).toContain('| 1080p fast, CPU ms per frame (all processes) | 58 | 45 | 45 | 1.29 |');
    expect(rows).toContain('| peak RSS (process tree) | 277 MB | 154 MB | 154 MB | 1.8 |');
    expect(rows).toContain('| live 1080p30, peak RSS (one session each) | 200 MB | 154 MB | 154 MB | 1.3 |');
  });

  it("marks the issue's targets met or not", () => {
    const t = Object.fromEntries(peerTargets(summarize(threeRounds(), { seconds: 20, threads: 2, argusDue: 'produced' })).map((x) => [x.target, x.met]));
    expect(t['live 1080p30: 30.0 fps out with 0 drops']).toBe(false); // 1.61 % dropped
    expect(t["live 1080p30: frame due → emitted p50 below peer A's"]).toBe(false);
    expect(t["1080p fast: ≥ 1.3 × peer A's frames/s"]).toBe(true); // 60 vs 40
    expect(t["432p fast: ≥ 1.3 × peer A's frames/s"]).toBe(false); // 40 vs 40
    expect(t["CPU per frame ≤ peer A's"]).toBe(false);
    expect(t["RSS ≤ 1.2 × peer A's"]).toBe(false);
    expect(t['cold start to first result ≤ 1.5 s']).toBe(false);
    // A program with no figure: the target is unknown, not met or failed.
    const none = summarize(threeRounds().filter((s) => s.program !== 'peerA'), { seconds: 20, threads: 2, argusDue: 'produced' });
    expect(peerTargets(none).find((x) => x.target.startsWith('1080p fast'))!.met).toBeNull();
  });
});

describe('bench:peer YOLOX demo sources', () => {
  const augment = [
    'import cv2',
    'import numpy as np',
    '',
    'from yolox.utils import xyxy2cxcywh',
    '',
    '',
    'def preproc(img, input_size, swap=(2, 0, 1)):',
    '    padded_img = np.ones((input_size[0], input_size[1], 3), dtype=np.uint8) * 114',
    '',
    '    return padded_img, 1.0',
    '',
    '',
    'class TrainTransform:',
    '    def __call__(self, boxes):',
    '        return xyxy2cxcywh(boxes)',
    '',
  ].join('\n');
  const utils = 'import numpy as np\n\ndef demo_postprocess(outputs, img_size):\n    return outputs\n\ndef multiclass_nms(boxes, scores, nms_thr, score_thr):\n    return None\n';
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const files = (a: string, u: string) => [
    { file: 'yolox/data/data_augment.py', sha256: sha(a), functions: ['preproc'] },
    { file: 'yolox/utils/demo_utils.py', sha256: sha(u), functions: ['demo_postprocess', 'multiclass_nms'] },
  ];
  function demoDir(a: string, u: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'argus-yolox-demo-'));
    for (const [rel, text] of [['yolox/data/data_augment.py', a], ['yolox/utils/demo_utils.py', u]]) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true });
      writeFileSync(join(dir, rel), text);
    }
    return dir;
  }

  it('names what each source imports from yolox (one line, parenthesised lists, aliases, plain imports)', () => {
    expect(yoloxImports(augment)).toEqual(['xyxy2cxcywh']);
    expect(yoloxImports('from yolox.utils import (\n    a,\n    b as c,\n)\nimport yolox.exp\nfrom yoloxx import d\n')).toEqual(['a', 'b', 'yolox.exp']);
    expect(yoloxImports(utils)).toEqual([]);
  });

  it("cuts a top-level function's source at the next top-level statement", () => {
    const body = pythonFunction(augment, 'preproc')!;
    expect(body.startsWith('def preproc(')).toBe(true);
    expect(body).toContain('return padded_img, 1.0');
    expect(body).not.toContain('TrainTransform');
    expect(pythonFunction(augment, 'missing')).toBeUndefined();
  });

  it('accepts the files with their digests whose functions need nothing from yolox', async () => {
    await expect(checkYoloxDemo(demoDir(augment, utils), files(augment, utils))).resolves.toBeUndefined();
  });

  it('refuses a missing file, naming it', async () => {
    const dir = demoDir(augment, utils);
    await expect(checkYoloxDemo(join(dir, 'nowhere'), files(augment, utils))).rejects.toMatchObject({ code: ErrorCodes.ASSET_DOWNLOAD, message: expect.stringContaining('nowhere/yolox/data/data_augment.py is missing') });
  });

  it('refuses a file that is not the official one (sha256)', async () => {
    const changed = augment.replace('114', '0');
    await expect(checkYoloxDemo(demoDir(changed, utils), files(augment, utils))).rejects.toMatchObject({ code: ErrorCodes.ASSET_CHECKSUM, message: expect.stringMatching(/data_augment\.py: sha256 [0-9a-f]{64} is not the official file's/) });
  });

  it('refuses a source whose called function uses a name only a stub provides, or lacks the function', async () => {
    const uses = augment.replace('    return padded_img, 1.0', '    return xyxy2cxcywh(padded_img), 1.0');
    await expect(checkYoloxDemo(demoDir(uses, utils), files(uses, utils))).rejects.toMatchObject({ code: ErrorCodes.ASSET_CHECKSUM, message: expect.stringContaining('preproc uses xyxy2cxcywh, imported from yolox') });
    const noNms = utils.replace('def multiclass_nms', 'def other_nms');
    await expect(checkYoloxDemo(demoDir(augment, noNms), files(augment, noNms))).rejects.toMatchObject({ code: ErrorCodes.ASSET_CHECKSUM, message: expect.stringContaining('demo_utils.py defines no function multiclass_nms') });
  });
});
