// A named pipe (FIFO) source whose ffmpeg failed for another reason than the end of the stream:
// its writer went with that reader (EPIPE), and the restarted ffmpeg waits in open() until a new
// writer comes. The source says so (its transition, logged and in its status), and stopping it
// ends that ffmpeg at once.
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subscription } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import type { Transition } from '../../src/sources/health.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (cond: () => boolean, ms: number) => {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await sleep(20);
};

let sub: Subscription | undefined;
let writer: ChildProcess | undefined;
const dir = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
afterEach(() => {
  sub?.unsubscribe();
  writer?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('a named pipe whose ffmpeg failed', () => {
  it('its restart says it waits for a writer; stopping the source ends the waiting ffmpeg at once', async () => {
    const ffmpeg = (await resolveFfmpeg()).path;
    const fifo = join(dir, 'feed.ts');
    execFileSync('mkfifo', [fifo]);
    writer = spawn(ffmpeg, ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=25', '-t', '60', '-f', 'mpegts', '-y', fifo], { stdio: 'ignore' });
    const children: ChildProcess[] = [];
    const transitions: Transition[] = [];
    let frames = 0;
    sub = supervisedSource({
      id: 'pipe',
      input: { url: fifo, kind: 'file', rate: 'native', loop: false },
      output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' },
      ffmpegPath: ffmpeg,
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 120_000, stallFactor: 10, stallMinMs: 60_000, stallMaxMs: 60_000 },
      onSpawn: (c) => children.push(c),
      onTransition: (t) => transitions.push(t),
    }).subscribe({ next: () => frames++, error: () => {} });
    await until(() => frames >= 5, 30_000);
    expect(frames).toBeGreaterThanOrEqual(5);
    // ffmpeg crashes (not the end of the stream): its writer goes with it.
    children[0].kill('SIGKILL');
    await until(() => children.length === 2, 10_000);
    expect(children).toHaveLength(2);
    const reconnect = transitions.find((t) => t.state === 'reconnecting');
    expect(reconnect?.reason).toContain(`the named pipe ${fifo} is opened again, and its next frames come once a writer opens it`);
    await sleep(300);
    expect(children[1].exitCode ?? children[1].signalCode).toBeNull(); // waiting in open()
    const stoppedAt = performance.now();
    sub.unsubscribe();
    await until(() => (children[1].exitCode ?? children[1].signalCode) !== null, 5000);
    expect(children[1].signalCode).toBe('SIGKILL');
    expect(performance.now() - stoppedAt).toBeLessThan(2000);
    expect(transitions.at(-1)?.state).toBe('stopped');
  }, 60_000);
});
