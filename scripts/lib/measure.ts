/**
 * Runs one benchmark program as a child process until `seconds` after its first result,
 * sampling /proc every 100 ms for the process tree's RSS and CPU (the program's ffmpeg
 * included). Shared by scripts/bench-peer.ts and scripts/bench-cores.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { PACKAGE_ROOT } from '../../src/assets/paths.js';
import { argusOutput, argusSummary, parseProcStat, parseProcStatus, treeUsage, type PlannedRun, type ProcMemory, type ProcStat, type ProgramOutput, type RunSample } from '../../src/bench/peer.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const getconf = (name: string, def: number) => {
  try {
    return Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim()) || def;
  } catch {
    return def;
  }
};
const CLK_TCK = getconf('CLK_TCK', 100);
const PAGE = getconf('PAGESIZE', 4096);
const SAMPLE_MS = 100;
/** A run whose first result has not come this long after its start has failed (a hang bound for a busy machine, not a figure). */
const FIRST_RESULT_TIMEOUT_MS = 180_000;
/** After SIGTERM, a process still there this long later is killed. */
const STOP_TIMEOUT_MS = 60_000;

/** Every process's /proc/PID/stat (processes that end while being read are skipped). */
function procStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      out.push(parseProcStat(readFileSync(`/proc/${d}/stat`, 'utf8')));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Each process's resident memory, split (processes that end while being read are skipped). */
function procMemory(pids: readonly number[]): ProcMemory[] {
  const out: ProcMemory[] = [];
  for (const pid of pids) {
    try {
      const m = parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) out.push(m);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export interface Launch {
  cmd: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** True once the program's first result is out. */
  firstResult: (stdout: string) => boolean;
  /** What the program wrote, read after it exited (with the tail of its stderr). */
  output: (stderr: string) => Promise<ProgramOutput & { due?: 'produced' | 'captured'; producedBy?: string }>;
}

/** Runs one program until --seconds after its first result, sampling /proc; its figures, or why it failed. */
export async function measure(plan: PlannedRun, seconds: number, l: Launch): Promise<{ sample: RunSample; due?: 'produced' | 'captured'; producedBy?: string } | { error: string }> {
  const load = { start: loadavg()[0], end: 0 };
  const spawnedAt = Date.now();
  const child = spawn(l.cmd, l.args, { cwd: PACKAGE_ROOT, env: l.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = child.pid!;
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout = (stdout + s).slice(-65_536)));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr = (stderr + s).slice(-262_144)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));

  let firstSeenAt = 0;
  let from: { at: number; ticks: number } | undefined;
  let last: { at: number; ticks: number } | undefined;
  let to: { at: number; ticks: number } | undefined;
  let rssPeak = 0;
  let rssAtPeak: ProcMemory[] = [];
  let timedOut = false;
  let stopAt = 0;
  while (!done) {
    const at = Date.now();
    const u = treeUsage(procStats(), pid);
    if (u.pids.length && !done) {
      const rss = (u.rssPages * PAGE) / 1024 / 1024;
      if (rss > rssPeak) {
        rssPeak = rss;
        rssAtPeak = procMemory(u.pids);
      }
      last = { at, ticks: u.cpuTicks };
      if (!firstSeenAt && l.firstResult(stdout)) {
        firstSeenAt = at;
        from = last;
      }
      if (from && !to && at >= firstSeenAt + seconds * 1000) {
        to = last;
        stopAt = at;
        child.kill('SIGTERM');
      }
    }
    if (!firstSeenAt && at - spawnedAt > FIRST_RESULT_TIMEOUT_MS && !timedOut) {
      timedOut = true;
      stopAt = at;
      child.kill('SIGTERM');
    }
    if (stopAt && at - stopAt > STOP_TIMEOUT_MS) child.kill('SIGKILL');
    await Promise.race([sleep(SAMPLE_MS), exited]);
  }
  const { code, signal } = await exited;
  load.end = loadavg()[0];
  const tail = stderr.trim().split('\n').slice(-6).join('\n');
  if (timedOut) return { error: `no result ${FIRST_RESULT_TIMEOUT_MS / 1000} s after the start; stderr:\n${tail}` };
  if (code !== 0) return { error: `exited with ${code ?? signal}; stderr:\n${tail}` };
  // A program that ended by itself (end of the clip) is measured up to the last sample.
  to ??= last;
  let out;
  try {
    out = await l.output(stderr);
  } catch (e) {
    return { error: `its output could not be read: ${(e as Error).message}; stderr:\n${tail}` };
  }
  if (!out.records.length) return { error: `it ended without a result; stderr:\n${tail}` };
  const cpu = from && to ? { from: from.at, to: to.at, ms: ((to.ticks - from.ticks) * 1000) / CLK_TCK } : { from: 0, to: 0, ms: NaN };
  const sample: RunSample = { ...plan, records: out.records, framesIn: out.framesIn, dropped: out.dropped, spawnedAt, cpu, rssPeakMb: rssPeak, rssAtPeak, load };
  return { sample, due: out.due, producedBy: out.producedBy };
}

/**
 * Compiles argus (`npm run build`; quick when dist/ is current) so that the runs measure the
 * compiled CLI, as `npm ci` installs it. bin/argus.js otherwise runs an edited checkout through
 * tsx's loader, whose own heap churn cost the main thread a full mark-compact GC every ~6 frames
 * on live 1080p30 (62 in a 12 s run, against 2 for dist/).
 */
export function buildArgus(): void {
  execFileSync(process.execPath, [join(PACKAGE_ROOT, 'scripts', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * argus as `npm ci` installs it: the compiled CLI (`node dist/src/cli.js run YAML --no-status`,
 * what bin/argus.js runs when dist/ is current), its results read from the
 * JSONL sink at `jsonl`; frames in and dropped from its summary log line when it got there (it
 * also counts drops after the last result). The outbox's state folder (unused without Kafka)
 * goes in `stateDir`, not the user's.
 */
export function argusLaunch(yaml: string, jsonl: string, stateDir: string): Launch {
  return {
    cmd: process.execPath,
    // The compiled CLI (buildArgus) itself, never tsx: through bin/argus.js, a file of src/
    // edited while a bench ran made its later runs go through tsx's loader (an esbuild process
    // in argus's tree, its RSS, its heap churn, a slower start), whatever ARGUS_TSX said.
    args: [join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'), 'run', yaml, '--no-status'],
    env: { ...process.env, ARGUS_STATE_DIR: stateDir },
    firstResult: () => existsSync(jsonl) && statSync(jsonl).size > 0,
    output: async (stderr) => {
      const out = argusOutput(await readFile(jsonl, 'utf8'));
      const sum = argusSummary(stderr);
      return sum ? { ...out, framesIn: sum.framesIn, dropped: sum.dropped } : out;
    },
  };
}
