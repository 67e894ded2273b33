// An ffmpeg stuck in the kernel (a hung NFS mount, a wedged device) ignores SIGKILL until it leaves
// the kernel and holds its pipes open meanwhile. argus detect and preview (tools/frames) waited for
// its frames' pipe to close and for its exit after the stall killed it: they said nothing and never
// ended. Now the stall is said (with the pid left) FFMPEG_EXIT_WAIT_MS after the kill, and the
// command's end names the child left (childrenLeft, endDespiteChildren) and exits without it.
// The stuck child: a process that prints nothing, whose kill argus sends is ignored (as the
// kernel's process ignores it), and whose exit is never seen, until the test ends it.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';

const hooks: { onSpawn?: (c: ChildProcess) => void } = {};
vi.mock('node:child_process', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:child_process')>();
  return {
    ...real,
    spawn: (...a: Parameters<typeof real.spawn>) => {
      const c = real.spawn(...a);
      hooks.onSpawn?.(c);
      return c;
    },
  };
});

const { videoFrames } = await import('../../src/tools/frames.js');
const { FFMPEG_EXIT_WAIT_MS } = await import('../../src/sources/ffmpeg-source.js');
const { childrenLeft, endDespiteChildren, ownChild, CHILDREN_END_WAIT_MS } = await import('../../src/core/children.js');
const { resolveFfmpegSync } = await import('../../src/sources/ffmpeg-path.js');
const { ErrorCodes } = await import('../../src/core/errors.js');
const { EventEmitter } = await import('node:events');

const dir = mkdtempSync(join(tmpdir(), 'argus-frames-stuck-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.useRealTimers());

describe('argus detect / preview reading with an ffmpeg stuck in the kernel', () => {
  it('the stall is said FFMPEG_EXIT_WAIT_MS after the kill, naming the ffmpeg left; the child is named as left with what it reads', async () => {
    const ffmpeg = resolveFfmpegSync().path;
    // ffmpeg for its version (asked by path), then silent.
    const fake = join(dir, 'ffmpeg');
    writeFileSync(fake, `#!/bin/sh\nif [ "$1" = "-version" ] || [ "$2" = "-version" ]; then exec ${JSON.stringify(ffmpeg)} "$@"; fi\nexec sleep 600\n`, { mode: 0o755 });
    const clip = join(dir, 'clip.mp4');
    writeFileSync(clip, Buffer.alloc(1000));
    const spawned: { c: ChildProcess; kill: ChildProcess['kill']; signals: string[] }[] = [];
    hooks.onSpawn = (c) => {
      if (!c.spawnargs.some((a) => a.includes(clip))) return;
      const kill = c.kill.bind(c);
      const signals: string[] = [];
      c.kill = ((s?: NodeJS.Signals) => (signals.push(String(s)), true)) as ChildProcess['kill'];
      spawned.push({ c, kill, signals });
    };
    const t = performance.now();
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: fake, url: clip, stallMs: 300 })) {
        // none comes
      }
    } catch (e) {
      err = e;
    }
    const took = performance.now() - t;
    hooks.onSpawn = undefined;
    try {
      expect(spawned).toHaveLength(1);
      const { c, signals } = spawned[0];
      expect(signals).toContain('SIGKILL');
      expect(err).toMatchObject({ code: ErrorCodes.SOURCE_TIMEOUT, message: `no frame came from ${clip} within 0.3 s; its ffmpeg ${c.pid} has not exited 2 s after it was killed (stuck in the kernel: a hung device or network mount?)` });
      // Given up on after the stall and the exit wait, not before (the lower bound only).
      expect(took).toBeGreaterThanOrEqual(300 + FFMPEG_EXIT_WAIT_MS - 50);
      expect(childrenLeft()).toContainEqual({ pid: c.pid, what: clip });
    } finally {
      for (const { c, kill } of spawned) kill.call(c, 'SIGKILL');
    }
    await new Promise<void>((r) => (spawned[0].c.exitCode !== null || spawned[0].c.signalCode !== null ? r() : spawned[0].c.once('exit', () => r())));
    expect(childrenLeft().map((l) => l.pid)).not.toContain(spawned[0].c.pid);
  });

  it('an ffmpeg that ends its output and then does not exit (stuck on its way out: a hung mount\'s file, a wedged device) is given up on as a stall: the frames, then the error naming it (the read waited for its exit for ever)', async () => {
    const ffmpeg = resolveFfmpegSync().path;
    const clip = join(dir, 'five.mp4');
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', clip]);
    // ffmpeg itself (into files), then its log, then its frames by a last writer that ends with
    // them (the frames' pipe ends as the last one is written: no stall can come between), the
    // process lingering with its pipes closed: its exit never seen.
    const fake = join(dir, 'ffmpeg-lingers');
    const out = join(dir, 'lingers');
    writeFileSync(
      fake,
      `#!/bin/sh\ncase " $* " in *" -version "*) exec ${JSON.stringify(ffmpeg)} "$@";; esac\n${JSON.stringify(ffmpeg)} "$@" >${out}.raw 2>${out}.log\ncat ${out}.log >&2\ncat ${out}.raw &\nexec sleep 600 >&- 2>&-\n`,
      { mode: 0o755 },
    );
    const spawned: { c: ChildProcess; kill: ChildProcess['kill']; signals: string[] }[] = [];
    hooks.onSpawn = (c) => {
      if (!c.spawnargs.some((a) => a.includes(clip))) return;
      const kill = c.kill.bind(c);
      const signals: string[] = [];
      c.kill = ((s?: NodeJS.Signals) => (signals.push(String(s)), true)) as ChildProcess['kill'];
      spawned.push({ c, kill, signals });
    };
    const frames: number[] = [];
    let err: unknown;
    try {
      for await (const f of videoFrames({ ffmpegPath: fake, url: clip, stallMs: 1000 })) frames.push(f.index);
    } catch (e) {
      err = e;
    }
    hooks.onSpawn = undefined;
    try {
      expect(frames).toEqual([0, 1, 2, 3, 4]);
      expect(spawned).toHaveLength(1);
      const { c, signals } = spawned[0];
      expect(signals).toContain('SIGKILL');
      expect(err).toMatchObject({ code: ErrorCodes.SOURCE_STALLED, message: `ffmpeg ${c.pid} ended its output after 5 frames of ${clip} but had not exited 1 s later, nor 2 s after it was killed (stuck in the kernel: a hung device or network mount?): whether it read all of ${clip} is not known` });
      expect(childrenLeft()).toContainEqual({ pid: c.pid, what: clip });
    } finally {
      for (const { c, kill } of spawned) kill.call(c, 'SIGKILL');
    }
    await new Promise<void>((r) => (spawned[0].c.exitCode !== null || spawned[0].c.signalCode !== null ? r() : spawned[0].c.once('exit', () => r())));
  }, 60_000);

  it('endDespiteChildren: CHILDREN_END_WAIT_MS after the command, the children not exited are told (pid, what each reads), once; none told where all have gone (fake timers)', async () => {
    vi.useFakeTimers();
    // A held child that never exits (its exit never told), reaped by nobody ('none': no pid signalled).
    const child = Object.assign(new EventEmitter(), { pid: 999_999, exitCode: null, signalCode: null }) as unknown as ChildProcess;
    ownChild(child, undefined, 'none');
    const told: unknown[] = [];
    endDespiteChildren((left) => void told.push(left));
    await vi.advanceTimersByTimeAsync(CHILDREN_END_WAIT_MS - 1);
    expect(told).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(told).toEqual([[{ pid: 999_999, what: undefined }]]);
    // It exits: at a later command's end nothing is told.
    child.emit('exit', 0, null);
    endDespiteChildren((left) => void told.push(left));
    await vi.advanceTimersByTimeAsync(CHILDREN_END_WAIT_MS);
    expect(told).toHaveLength(1);
  });
});
