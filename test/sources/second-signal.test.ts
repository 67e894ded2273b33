// argus run's second signal (StopSignals' force: exitAfterInference) ends every child ffmpeg,
// an RTSP camera's that ignored the first stop's SIGTERM too (stopFfmpeg gives it a grace of
// FFMPEG_STOP_GRACE_MS, which the forced exit does not wait for): none outlives argus. An
// "ffmpeg" that ignores SIGTERM and SIGINT (a read stuck in the kernel) models it.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childrenOf, killAll, record, type Recorded, running, until } from '../helpers/procs.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { SIGNAL_REPEAT_MS } from '../../src/core/signals.js';

const work = mkdtempSync(join(tmpdir(), 'argus-second-signal-'));
const leftOver: Recorded[] = [];
/** The scripts started, killed at the end where a failed expectation left them running (one lived on for half an hour). */
const scripts: ChildProcess[] = [];
afterAll(() => {
  for (const c of scripts) c.kill('SIGKILL');
  killAll(leftOver);
  rmSync(work, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("argus run's second signal", () => {
  it("an RTSP camera's ffmpeg that ignores SIGTERM is killed at the forced exit, not left behind", async () => {
    const fake = join(work, 'stuck-ffmpeg');
    writeFileSync(fake, `#!/bin/sh\ncase "$*" in *-version*) exec ${JSON.stringify(resolveFfmpegSync().path)} "$@";; esac\ntrap '' TERM INT\nexec sleep 602\n`);
    chmodSync(fake, 0o755);
    const src = (f: string) => JSON.stringify(join(process.cwd(), 'src', f));
    // What cli.ts's runOrWork does with the signals: the first stops the sources, a later one forces the exit.
    const script = `
      import { ffmpegSource } from ${src('sources/ffmpeg-source.ts')};
      import { StopSignals } from ${src('core/signals.ts')};
      import { exitAfterInference } from ${src('inference/worker-pool.ts')};
      const sub = ffmpegSource({ id: 'cam', input: { url: 'rtsp://127.0.0.1:9/live', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false }, output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' }, ffmpegPath: ${JSON.stringify(fake)} }).subscribe({ error: () => {} });
      const signals = new StopSignals({ stop: () => { sub.unsubscribe(); process.stdout.write('stopping\\n'); }, force: () => void exitAfterInference(130, 2000) });
      process.on('SIGTERM', (s) => signals.receive(s));
      process.stdout.write('listening\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    scripts.push(child);
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
    // What the script has said: its listener is up ('listening'; a signal before it ended the
    // process by the default action: the ffmpeg is spawned, and can be found, a moment before),
    // and it took the first signal ('stopping'; on a busy machine that came late, and a second
    // sent SIGNAL_REPEAT_MS after the first was sent arrived within SIGNAL_REPEAT_MS of it: a repeat).
    let said = '';
    child.stdout!.on('data', (b: Buffer) => (said += b.toString()));
    let ff: number[] = [];
    expect(await until(() => (ff = childrenOf(child.pid!).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('sleep'))).length === 1, 30_000)).toBe(true);
    leftOver.push(...ff.map(record));
    expect(await until(() => said.includes('listening'), 30_000)).toBe(true);
    child.kill('SIGTERM');
    expect(await until(() => said.includes('stopping'), 30_000)).toBe(true);
    await sleep(SIGNAL_REPEAT_MS + 100);
    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(130);
    expect(await until(() => !running(ff[0]), 3000)).toBe(true);
  }, 60_000);
});
