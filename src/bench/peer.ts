/**
 * The parts of `npm run bench:peer` (scripts/bench-peer.ts, issue 13) that need no process,
 * video or model: its arguments, the run schedule, the argus pipeline it runs, reading what
 * argus and the Python peers (scripts/peers/peer.py) wrote, /proc's process figures, the
 * figures per run, medians over rounds, the table and the targets, and the check of the
 * extracted YOLOX demo sources.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { percentiles } from '../core/stats.js';
import type { DetectionsMessage } from '../sinks/message.js';

export const PROGRAMS = ['argus', 'peerA', 'peerB'] as const;
export type Program = (typeof PROGRAMS)[number];
const LABEL: Record<Program, string> = { argus: 'argus', peerA: 'peer A', peerB: 'peer B' };

/** What each round runs, every program on each: the derived 1080p30 clip at its native rate and as fast as possible, and the shared 432p person video as fast as possible. */
export const SCENARIOS = [
  { name: 'live1080', clip: 'person-1080p30.mp4', rate: 'live' },
  { name: 'fast1080', clip: 'person-1080p30.mp4', rate: 'fast' },
  { name: 'fast432', clip: 'one-by-one-person-detection.mp4', rate: 'fast' },
] as const;
export type Scenario = (typeof SCENARIOS)[number];
export type ScenarioName = Scenario['name'];

export interface PeerBenchOptions {
  /** Where the figures are written as JSON. */
  json: string;
  /** Rounds; each runs every scenario with every program. Default 3. */
  rounds: number;
  /** Each run is stopped this long after its first result, seconds. Default 20. */
  seconds: number;
  /** ONNX Runtime intra-op threads, the same for argus and the peers. Default 2. */
  threads: number;
}

export const PEER_BENCH_USAGE = 'usage: npm run bench:peer -- --json FILE [--rounds 3] [--seconds 20] [--threads 2]';

/** `--json FILE [--rounds N] [--seconds S] [--threads N]`, each also as `--name=value`; a bad or unknown flag is VAP_ERR_CONFIG naming it. */
export function parsePeerBenchArgs(argv: readonly string[]): PeerBenchOptions {
  const raw = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--(json|rounds|seconds|threads)(?:=(.*))?$/.exec(a);
    if (!m) throw new ArgusError(ErrorCodes.CONFIG, `bench:peer: unknown argument "${a}"; ${PEER_BENCH_USAGE}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined || (m[2] === undefined && value.startsWith('--'))) throw new ArgusError(ErrorCodes.CONFIG, `bench:peer: --${m[1]} needs a value; ${PEER_BENCH_USAGE}`);
    raw.set(m[1], value);
  }
  const json = raw.get('json');
  if (!json) throw new ArgusError(ErrorCodes.CONFIG, `bench:peer: --json FILE is required; ${PEER_BENCH_USAGE}`);
  const int = (name: string, def: number, max: number) => {
    const v = raw.get(name);
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new ArgusError(ErrorCodes.CONFIG, `bench:peer: --${name}: expected a whole number from 1 to ${max}, got "${v}"`);
    return n;
  };
  const secondsRaw = raw.get('seconds');
  const seconds = secondsRaw === undefined ? 20 : Number(secondsRaw);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600) throw new ArgusError(ErrorCodes.CONFIG, `bench:peer: --seconds: expected a number of seconds above 0 and at most 3600, got "${secondsRaw}"`);
  // 64: the most intra-op threads the pipeline schema accepts (model.intraOpThreads).
  return { json, rounds: int('rounds', 3, 100), seconds, threads: int('threads', 2, 64) };
}

export interface PlannedRun {
  round: number;
  scenario: ScenarioName;
  program: Program;
}

/** The programs' order in round r: argus, peer A, peer B rotated left r times. */
export function roundOrder(round: number): Program[] {
  const k = round % PROGRAMS.length;
  return [...PROGRAMS.slice(k), ...PROGRAMS.slice(0, k)];
}

/** Every run in the order made: round by round, each scenario in turn, the three programs one after another in the round's order. */
export function schedule(rounds: number): PlannedRun[] {
  const out: PlannedRun[] = [];
  for (let round = 0; round < rounds; round++) for (const s of SCENARIOS) for (const program of roundOrder(round)) out.push({ round, scenario: s.name, program });
  return out;
}

/**
 * The pipeline argus runs: one file source (native rate for live, fast otherwise; no loop), the
 * same model file as the peers, `threads` intra-op threads, and a JSONL sink with every frame's
 * result. The work is made the peers' work: the demo's NMS settings (IoU 0.45, score 0.1, class
 * agnostic: multiclass_nms's default) and no tracking (the demo does not track).
 */
export function argusPipelineYaml(o: {
  video: string;
  rate: 'live' | 'fast';
  model: string;
  threads: number;
  jsonl: string;
  /** Fields laid over the source's and the model's (scripts/bench-cores.ts compares settings). */
  source?: Record<string, unknown>;
  modelOptions?: Record<string, unknown>;
}): string {
  return stringify({
    name: 'bench-peer',
    sources: [{ id: 'bench', uri: o.video, rate: o.rate === 'live' ? 'native' : 'fast', loop: false, ...o.source }],
    // The peers' thread count, spent as argus's defaults spend it (inferenceThreads): a file played
    // at its rate on one session with every thread; one read as fast as possible on one
    // single-thread session per thread, as many of its frames at once.
    model: { manifest: 'yolox-nano', path: o.model, ...(o.rate === 'live' ? { intraOpThreads: o.threads } : { workers: o.threads, intraOpThreads: 1 }), ...o.modelOptions },
    postprocess: { scoreThreshold: 0.1, iouThreshold: 0.45, classAgnostic: true },
    tracking: { enabled: false },
    sinks: { jsonl: { path: o.jsonl } },
  });
}

/** One result: when its frame was due (epoch ms) and when the result was out; what else the program says. */
export interface FrameRecord {
  due: number;
  emitted: number;
  /** argus only: ffmpeg delivered the decoded frame. */
  captured?: number;
  /** Milliseconds ONNX Runtime took for this frame. */
  inferMs?: number;
}

/** What one program's output says about a run. */
export interface ProgramOutput {
  records: FrameRecord[];
  framesIn: number;
  dropped: number;
}

/**
 * argus's JSONL (detections messages; other lines skipped). A frame is due at `stamps.produced`
 * when the messages carry it, else at `stamps.captured` (`due: 'captured'`: decoder-output
 * based, later than the truth). `producedBy` is what the last message said its produced stamp is.
 */
export function argusOutput(jsonl: string): ProgramOutput & { due: 'produced' | 'captured'; producedBy?: string } {
  const records: FrameRecord[] = [];
  let due: 'produced' | 'captured' = 'produced';
  let producedBy: string | undefined;
  let last: DetectionsMessage | undefined;
  for (const line of jsonl.split('\n')) {
    if (!line.trim()) continue;
    const m = JSON.parse(line) as DetectionsMessage & { producedBy?: string; stamps: { produced?: number } };
    if (m.type !== 'detections') continue;
    const s = m.stamps;
    if (typeof s.produced !== 'number') due = 'captured';
    if (m.producedBy !== undefined) producedBy = m.producedBy;
    records.push({ due: typeof s.produced === 'number' ? s.produced : s.captured, emitted: s.emitted, captured: s.captured, inferMs: s.inferEnd - s.inferStart });
    last = m;
  }
  if (due === 'captured') for (const r of records) r.due = r.captured!;
  return { records, framesIn: last ? last.seq + 1 : 0, dropped: last?.dropped ?? 0, due, producedBy };
}

/** argus's `source summary` log line (pino JSON on stderr), when it got that far. */
export function argusSummary(stderr: string): { framesIn: number; framesOut: number; dropped: number } | undefined {
  for (const line of stderr.split('\n')) {
    if (!line.includes('"source summary"')) continue;
    try {
      const o = JSON.parse(line) as { msg?: string; framesIn?: number; framesOut?: number; dropped?: number };
      if (o.msg === 'source summary' && typeof o.framesIn === 'number') return { framesIn: o.framesIn, framesOut: o.framesOut ?? 0, dropped: o.dropped ?? 0 };
    } catch {
      // not a log line of argus's
    }
  }
  return undefined;
}

/** What peer.py wrote with --json (the fields read here). */
export interface PeerJson {
  program: string;
  framesRead: number;
  framesOut: number;
  dropped: number;
  processStart: number;
  firstResultMs: number | null;
  cpuMs: { self: number; children: number };
  maxRssKb: { self: number; children: number };
  records: { k: number; due: number; emitted: number; inferMs: number; out: number; dropped: number; n: number }[];
}

export function peerOutput(p: PeerJson): ProgramOutput {
  return { records: p.records.map((r) => ({ due: r.due, emitted: r.emitted, inferMs: r.inferMs })), framesIn: p.framesRead, dropped: p.dropped };
}

/** The fields of /proc/PID/stat the bench reads. */
export interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime: the process's CPU and that of its children it has waited for, clock ticks. */
  cpuTicks: number;
  /** Resident set, pages. */
  rssPages: number;
}

/** Parses /proc/PID/stat. The command name (field 2) is in parentheses and may hold spaces and parentheses: fields are counted from the last ')'. */
export function parseProcStat(text: string): ProcStat {
  const close = text.lastIndexOf(')');
  const pid = Number(text.slice(0, text.indexOf('(')).trim());
  const f = text.slice(close + 2).trim().split(/\s+/); // f[0] is field 3 (state)
  if (close < 0 || f.length < 22 || !Number.isInteger(pid)) throw new ArgusError(ErrorCodes.INTERNAL, `bench:peer: /proc/${Number.isInteger(pid) ? pid : '?'}/stat: cannot read "${text.slice(0, 80)}"`);
  const n = (field: number) => Number(f[field - 3]);
  return { pid, ppid: n(4), cpuTicks: n(14) + n(15) + n(16) + n(17), rssPages: n(24) };
}

/** One process's resident memory, from /proc/PID/status: anonymous (heaps, buffers) and file-backed (the executable and the libraries it touched), MiB. */
export interface ProcMemory {
  /** The command name (`Name:`): `node`, `ffmpeg`, `python`. */
  name: string;
  anonMb: number;
  fileMb: number;
}

/** Parses /proc/PID/status's Name, RssAnon, RssFile and RssShmem (shared memory counted as anonymous); undefined without them (a kernel thread, a process gone). */
export function parseProcStatus(text: string): ProcMemory | undefined {
  const kb = (key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const name = /^Name:\t(.*)$/m.exec(text)?.[1];
  const anon = kb('RssAnon');
  const file = kb('RssFile');
  if (name === undefined || anon === undefined || file === undefined) return undefined;
  return { name, anonMb: r2((anon + (kb('RssShmem') ?? 0)) / 1024), fileMb: r2(file / 1024) };
}

/** CPU ticks and resident pages of `root` and every live descendant of it, summed. */
export function treeUsage(stats: readonly ProcStat[], root: number): { cpuTicks: number; rssPages: number; pids: number[] } {
  const children = new Map<number, ProcStat[]>();
  const byPid = new Map<number, ProcStat>();
  for (const s of stats) {
    byPid.set(s.pid, s);
    const list = children.get(s.ppid) ?? [];
    list.push(s);
    children.set(s.ppid, list);
  }
  const pids: number[] = [];
  let cpuTicks = 0;
  let rssPages = 0;
  const todo = byPid.has(root) ? [byPid.get(root)!] : [];
  const seen = new Set<number>();
  while (todo.length) {
    const s = todo.pop()!;
    if (seen.has(s.pid)) continue;
    seen.add(s.pid);
    pids.push(s.pid);
    cpuTicks += s.cpuTicks;
    rssPages += s.rssPages;
    todo.push(...(children.get(s.pid) ?? []));
  }
  return { cpuTicks, rssPages, pids };
}

/** One finished run as the orchestrator measured it. */
export interface RunSample extends PlannedRun, ProgramOutput {
  /** Epoch ms just before the process was started. */
  spawnedAt: number;
  /** CPU of the process tree between two samples: the first after the first result, the last before the stop. */
  cpu: { from: number; to: number; ms: number };
  /** Highest summed RSS of the process tree, sampled every 100 ms, MiB. */
  rssPeakMb: number;
  /** Each process of the tree at that sample (root first). */
  rssAtPeak?: ProcMemory[];
  /** The machine's 1-minute load average when the run started and when it ended. */
  load: { start: number; end: number };
}

export interface RunFigures {
  /** Results per second over the run, the first result excluded (it carries the start-up). */
  fps: number;
  dueToEmittedP50: number;
  dueToEmittedP99: number;
  /** The same p99 over the results emitted more than STEADY_AFTER_MS after the first: without the start-up's frames. */
  dueToEmittedSteadyP99: number;
  /** argus only: captured → emitted. */
  capturedToEmittedP50: number;
  capturedToEmittedP99: number;
  dropPct: number;
  inferP50: number;
  cpuMsPerFrame: number;
  rssMb: number;
  /** Process start → first result. */
  coldStartMs: number;
}

/** Results per second from the first result's emission to the last's: (n − 1) / span; NaN with fewer than two. */
export function resultsPerSecond(records: readonly FrameRecord[]): number {
  if (records.length < 2) return NaN;
  let first = Infinity;
  let last = -Infinity;
  for (const r of records) {
    first = Math.min(first, r.emitted);
    last = Math.max(last, r.emitted);
  }
  return last > first ? ((records.length - 1) * 1000) / (last - first) : NaN;
}

/** Results emitted after `from` and at or before `to`. */
export function emittedBetween(records: readonly FrameRecord[], from: number, to: number): number {
  let n = 0;
  for (const r of records) if (r.emitted > from && r.emitted <= to) n++;
  return n;
}

const p5099 = (xs: number[]) => (xs.length ? percentiles(xs, [50, 99]) : [NaN, NaN]);

/**
 * Results emitted within this long of a run's first leave out the steady p99. With 8 s runs
 * (240 frames) a p99 is the third-worst frame, and a start's first frames (the first inferences,
 * the decoder's first frames, code not yet compiled) can be all three, for any program.
 */
export const STEADY_AFTER_MS = 1000;

export function runFigures(s: RunSample): RunFigures {
  const due = p5099(s.records.map((r) => r.emitted - r.due));
  const cap = p5099(s.records.filter((r) => r.captured !== undefined).map((r) => r.emitted - r.captured!));
  const infer = s.records.filter((r) => r.inferMs !== undefined).map((r) => r.inferMs!);
  const frames = emittedBetween(s.records, s.cpu.from, s.cpu.to);
  const firstEmitted = s.records.length ? Math.min(...s.records.map((r) => r.emitted)) : NaN;
  const steady = p5099(s.records.filter((r) => r.emitted > firstEmitted + STEADY_AFTER_MS).map((r) => r.emitted - r.due));
  return {
    fps: resultsPerSecond(s.records),
    dueToEmittedP50: due[0],
    dueToEmittedP99: due[1],
    dueToEmittedSteadyP99: steady[1],
    capturedToEmittedP50: cap[0],
    capturedToEmittedP99: cap[1],
    dropPct: s.framesIn > 0 ? (100 * s.dropped) / s.framesIn : NaN,
    inferP50: infer.length ? percentiles(infer, [50])[0] : NaN,
    cpuMsPerFrame: frames > 0 ? s.cpu.ms / frames : NaN,
    rssMb: s.rssPeakMb,
    coldStartMs: firstEmitted - s.spawnedAt,
  };
}

/** A figure for each program; null where a program has none (JSON has no NaN). */
export type Trio = Record<Program, number | null>;

export interface PeerBenchResult {
  live1080: { dueToEmitted: { p50: Trio; p99: Trio; steadyP99: Trio }; fps: Trio; dropPct: Trio; capturedToEmitted: { p50: Trio; p99: Trio } };
  fast1080: { fps: Trio; inferMs: { p50: Trio } };
  fast432: { fps: Trio };
  /** fast1080: CPU of the process tree per result, between the first result and the stop. */
  cpuMsPerFrame: Trio;
  /** The highest process-tree RSS of the round's runs, median over rounds. */
  rssMb: Trio;
  /**
   * Peak process-tree RSS in live1080 alone, median over rounds: one ONNX Runtime session each
   * with the same intra-op threads (the fast scenarios run argus with one session per thread).
   */
  liveRssMb: Trio;
  /** Where that RSS is: each process of the run whose peak is nearest the median, at its peak. */
  rssByProcess: Record<Program, ProcMemory[] | null>;
  /** live1080: process start → first result. */
  coldStartMs: Trio;
  /** The 1-minute load average over all runs' starts and ends. */
  load: { min: number; max: number };
  rounds: {
    count: number;
    seconds: number;
    threads: number;
    /** The programs' order in each round. */
    order: Program[][];
    /** argus's due time: `produced` (the source's stamp) or `captured` (decoder output; the messages had no produced stamp). */
    argusDue: 'produced' | 'captured';
    runs: (PlannedRun & { figures: Record<keyof RunFigures, number | null>; framesIn: number; framesOut: number; dropped: number; load: { start: number; end: number } })[];
  };
}

const r2 = (v: number) => Math.round(v * 100) / 100;
const finite = (v: number): number | null => (Number.isFinite(v) ? r2(v) : null);

/** The median (the existing nearest-rank percentile) of the finite values; null when there are none. */
export function medianOf(values: readonly number[]): number | null {
  const xs = values.filter(Number.isFinite);
  return xs.length ? r2(percentiles(xs, [50])[0]) : null;
}

/** The median over rounds of each program's figure in a scenario (`pick` reads it from one run's figures). */
function trio(runs: { run: RunSample; f: RunFigures }[], scenario: ScenarioName, pick: (f: RunFigures) => number): Trio {
  const out = {} as Trio;
  for (const p of PROGRAMS) out[p] = medianOf(runs.filter((x) => x.run.scenario === scenario && x.run.program === p).map((x) => pick(x.f)));
  return out;
}

/** Figures per run, medians over rounds, in the JSON shape of the issue (keys are paths: live1080.dueToEmitted.p50, …). */
export function summarize(samples: readonly RunSample[], o: { seconds: number; threads: number; argusDue: 'produced' | 'captured' }): PeerBenchResult {
  const runs = samples.map((run) => ({ run, f: runFigures(run) }));
  const rounds = [...new Set(samples.map((s) => s.round))].sort((a, b) => a - b);
  const rss = {} as Trio;
  const byProcess = {} as Record<Program, ProcMemory[] | null>;
  for (const p of PROGRAMS) {
    const perRound = rounds.map((r) => Math.max(...runs.filter((x) => x.run.round === r && x.run.program === p).map((x) => x.f.rssMb)));
    rss[p] = medianOf(perRound);
    const median = rss[p];
    const split = runs.filter((x) => x.run.program === p && x.run.rssAtPeak?.length);
    byProcess[p] = median === null || !split.length ? null : split.reduce((a, b) => (Math.abs(b.run.rssPeakMb - median) < Math.abs(a.run.rssPeakMb - median) ? b : a)).run.rssAtPeak!;
  }
  const loads = samples.flatMap((s) => [s.load.start, s.load.end]);
  return {
    live1080: {
      dueToEmitted: {
        p50: trio(runs, 'live1080', (f) => f.dueToEmittedP50),
        p99: trio(runs, 'live1080', (f) => f.dueToEmittedP99),
        steadyP99: trio(runs, 'live1080', (f) => f.dueToEmittedSteadyP99),
      },
      fps: trio(runs, 'live1080', (f) => f.fps),
      dropPct: trio(runs, 'live1080', (f) => f.dropPct),
      capturedToEmitted: { p50: trio(runs, 'live1080', (f) => f.capturedToEmittedP50), p99: trio(runs, 'live1080', (f) => f.capturedToEmittedP99) },
    },
    fast1080: { fps: trio(runs, 'fast1080', (f) => f.fps), inferMs: { p50: trio(runs, 'fast1080', (f) => f.inferP50) } },
    fast432: { fps: trio(runs, 'fast432', (f) => f.fps) },
    cpuMsPerFrame: trio(runs, 'fast1080', (f) => f.cpuMsPerFrame),
    rssMb: rss,
    liveRssMb: trio(runs, 'live1080', (f) => f.rssMb),
    rssByProcess: byProcess,
    coldStartMs: trio(runs, 'live1080', (f) => f.coldStartMs),
    load: { min: loads.length ? r2(Math.min(...loads)) : NaN, max: loads.length ? r2(Math.max(...loads)) : NaN },
    rounds: {
      count: rounds.length,
      seconds: o.seconds,
      threads: o.threads,
      order: rounds.map(roundOrder),
      argusDue: o.argusDue,
      runs: runs.map(({ run, f }) => ({
        round: run.round,
        scenario: run.scenario,
        program: run.program,
        figures: Object.fromEntries(Object.entries(f).map(([k, v]) => [k, finite(v)])) as Record<keyof RunFigures, number | null>,
        framesIn: run.framesIn,
        framesOut: run.records.length,
        dropped: run.dropped,
        load: run.load,
      })),
    },
  };
}

const show = (v: number | null, unit = '') => (v === null ? '—' : `${v}${unit}`);
const ratio = (t: Trio) => (t.argus !== null && t.peerA !== null && t.peerA !== 0 ? String(r2(t.argus / t.peerA)) : '—');

/** The issue's table (figure | argus | peer A | peer B | argus ÷ A), medians over rounds, as Markdown. */
export function peerTable(r: PeerBenchResult): string {
  const live = r.live1080;
  const fpsDrop = (p: Program) => (live.fps[p] === null ? '—' : `${live.fps[p]} (${show(live.dropPct[p], ' %')} dropped)`);
  const rows: string[][] = [
    ['live 1080p30, frames out/s', ...PROGRAMS.map(fpsDrop), ratio(live.fps)],
    ['live 1080p30, frame due → result emitted, p50', ...PROGRAMS.map((p) => show(live.dueToEmitted.p50[p], ' ms')), ratio(live.dueToEmitted.p50)],
    ['live 1080p30, frame due → result emitted, p99', ...PROGRAMS.map((p) => show(live.dueToEmitted.p99[p], ' ms')), ratio(live.dueToEmitted.p99)],
    ['live 1080p30, the same p99 after the first second', ...PROGRAMS.map((p) => show(live.dueToEmitted.steadyP99[p], ' ms')), ratio(live.dueToEmitted.steadyP99)],
    ["live 1080p30, argus's own `captured` → `emitted`, p50 / p99", `${show(live.capturedToEmitted.p50.argus)} / ${show(live.capturedToEmitted.p99.argus, ' ms')}`, '—', '—', '—'],
    ['1080p as fast as possible, frames/s', ...PROGRAMS.map((p) => show(r.fast1080.fps[p])), ratio(r.fast1080.fps)],
    ['1080p fast, inference stage p50', ...PROGRAMS.map((p) => show(r.fast1080.inferMs.p50[p], ' ms')), ratio(r.fast1080.inferMs.p50)],
    ['1080p fast, CPU ms per frame (all processes)', ...PROGRAMS.map((p) => show(r.cpuMsPerFrame[p])), ratio(r.cpuMsPerFrame)],
    ['432p as fast as possible, frames/s', ...PROGRAMS.map((p) => show(r.fast432.fps[p])), ratio(r.fast432.fps)],
    ['peak RSS (process tree)', ...PROGRAMS.map((p) => show(r.rssMb[p], ' MB')), ratio(r.rssMb)],
    ['live 1080p30, peak RSS (one session each)', ...PROGRAMS.map((p) => show(r.liveRssMb[p], ' MB')), ratio(r.liveRssMb)],
    ['live 1080p30, process start → first result', ...PROGRAMS.map((p) => show(r.coldStartMs[p], ' ms')), ratio(r.coldStartMs)],
  ];
  const head = ['figure', ...PROGRAMS.map((p) => LABEL[p]), 'argus ÷ A'];
  return [head, head.map(() => '---'), ...rows].map((c) => `| ${c.join(' | ')} |`).join('\n');
}

/** Where each program's peak RSS is, one line per program: `argus: node 126 + 70, ffmpeg 43 + 44 MB (anonymous + file-backed)`. */
export function rssLines(r: PeerBenchResult): string[] {
  return PROGRAMS.map((p) => {
    const procs = r.rssByProcess[p];
    return `  ${LABEL[p]}: ${procs ? procs.map((m) => `${m.name} ${Math.round(m.anonMb)} + ${Math.round(m.fileMb)}`).join(', ') + ' MB' : '—'}`;
  });
}

/** The issue's targets that bench:peer measures, each met or not (null: a figure is missing). */
export function peerTargets(r: PeerBenchResult): { target: string; met: boolean | null }[] {
  const a = (t: Trio) => t.argus;
  const A = (t: Trio) => t.peerA;
  const check = (cond: () => boolean, ...vs: (number | null)[]) => (vs.some((v) => v === null) ? null : cond());
  const live = r.live1080;
  return [
    { target: 'live 1080p30: 30.0 fps out with 0 drops', met: check(() => a(live.fps)! >= 29.95 && a(live.dropPct)! === 0, a(live.fps), a(live.dropPct)) },
    { target: "live 1080p30: frame due → emitted p50 below peer A's", met: check(() => a(live.dueToEmitted.p50)! < A(live.dueToEmitted.p50)!, a(live.dueToEmitted.p50), A(live.dueToEmitted.p50)) },
    { target: "live 1080p30: frame due → emitted p99 below peer A's", met: check(() => a(live.dueToEmitted.p99)! < A(live.dueToEmitted.p99)!, a(live.dueToEmitted.p99), A(live.dueToEmitted.p99)) },
    { target: "1080p fast: ≥ 1.3 × peer A's frames/s", met: check(() => a(r.fast1080.fps)! >= 1.3 * A(r.fast1080.fps)!, a(r.fast1080.fps), A(r.fast1080.fps)) },
    { target: "432p fast: ≥ 1.3 × peer A's frames/s", met: check(() => a(r.fast432.fps)! >= 1.3 * A(r.fast432.fps)!, a(r.fast432.fps), A(r.fast432.fps)) },
    { target: "CPU per frame ≤ peer A's", met: check(() => a(r.cpuMsPerFrame)! <= A(r.cpuMsPerFrame)!, a(r.cpuMsPerFrame), A(r.cpuMsPerFrame)) },
    { target: "RSS ≤ 1.2 × peer A's", met: check(() => a(r.rssMb)! <= 1.2 * A(r.rssMb)!, a(r.rssMb), A(r.rssMb)) },
    { target: 'cold start to first result ≤ 1.5 s', met: check(() => a(r.coldStartMs)! <= 1500, a(r.coldStartMs)) },
  ];
}

/**
 * The official YOLOX 0.3.0 sources the peers run, as scripts/peers/setup.sh extracts them from
 * the sdist: their sha256, and the functions peer.py calls from each.
 */
export const YOLOX_DEMO_FILES: readonly { file: string; sha256: string; functions: readonly string[] }[] = [
  { file: 'yolox/data/data_augment.py', sha256: 'f99b0b1568dafde0acd99f0a1e27a33644885349834d55a9dc632fe691ee352d', functions: ['preproc'] },
  { file: 'yolox/utils/demo_utils.py', sha256: '143b6bc6669323f0144af5648e96696c40dc3723d7dae1d0a3767b18e4c5d43b', functions: ['demo_postprocess', 'multiclass_nms'] },
];

/** Names a Python source imports from the yolox package (`from yolox… import a, b` or a parenthesised list); `import yolox…` gives the module itself. */
export function yoloxImports(py: string): string[] {
  const out: string[] = [];
  for (const m of py.matchAll(/^from\s+(yolox(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]*)/gm)) {
    for (const part of m[2].replace(/[()]/g, '').split(',')) {
      const name = part.trim().split(/\s+as\s+/)[0].trim();
      if (name) out.push(name);
    }
  }
  for (const m of py.matchAll(/^import\s+(yolox(?:\.\w+)*)/gm)) out.push(m[1]);
  return out;
}

/** The source of a top-level `def name(` up to the next top-level statement; undefined when there is none. */
export function pythonFunction(py: string, name: string): string | undefined {
  const start = py.search(new RegExp(`^def ${name}\\(`, 'm'));
  if (start < 0) return undefined;
  const bodyStart = py.indexOf('\n', start) + 1;
  if (bodyStart === 0) return py.slice(start);
  const end = py.slice(bodyStart).search(/^\S/m);
  return end < 0 ? py.slice(start) : py.slice(start, bodyStart + end);
}

/**
 * Checks the extracted demo sources in `dir` before any run: each file is there
 * (VAP_ERR_ASSET_DOWNLOAD: setup did not deliver it), is the official file (sha256,
 * VAP_ERR_ASSET_CHECKSUM), defines the functions peer.py calls, and loads without the yolox
 * package: the names it imports from yolox (peer.py stubs them) are used by none of the
 * functions peer.py calls. Each error names the file.
 */
export async function checkYoloxDemo(dir: string, files = YOLOX_DEMO_FILES): Promise<void> {
  for (const f of files) {
    const path = join(dir, f.file);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch {
      throw new ArgusError(ErrorCodes.ASSET_DOWNLOAD, `bench:peer: ${path} is missing: scripts/peers/setup.sh extracts it from the yolox 0.3.0 sdist`);
    }
    const digest = createHash('sha256').update(bytes).digest('hex');
    if (digest !== f.sha256) throw new ArgusError(ErrorCodes.ASSET_CHECKSUM, `bench:peer: ${path}: sha256 ${digest} is not the official file's ${f.sha256}`);
    const text = bytes.toString('utf8');
    const stubbed = yoloxImports(text);
    for (const fn of f.functions) {
      const body = pythonFunction(text, fn);
      if (body === undefined) throw new ArgusError(ErrorCodes.ASSET_CHECKSUM, `bench:peer: ${path} defines no function ${fn}, which peer.py calls`);
      const used = stubbed.filter((n) => new RegExp(`\\b${n.split('.').pop()}\\b`).test(body));
      if (used.length) throw new ArgusError(ErrorCodes.ASSET_CHECKSUM, `bench:peer: ${path}: ${fn} uses ${used.join(', ')}, imported from yolox, which peer.py can only stub (the yolox package needs torch)`);
    }
  }
}
