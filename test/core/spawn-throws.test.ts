// A spawn that throws (node throws ENOMEM and E2BIG rather than emitting them as it does EMFILE and
// EAGAIN) is told in one place: spawnOwned gives a child that never started, its 'error' event on
// the next tick saying why, and each caller tells it by the listener it has for a start that fails
// later, as its own coded error. Each caller caught the throw apart (and one that forgot would end
// the run). Here node's spawn is made to throw ENOMEM for one path.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';

const THROWS = '/nonexistent/argus-spawn-throws/ffmpeg';
vi.mock('node:child_process', async (original) => {
  const real = await original<typeof import('node:child_process')>();
  return {
    ...real,
    spawn: (...a: Parameters<typeof real.spawn>) => {
      if (a[0] === THROWS) throw Object.assign(new Error('spawn ENOMEM'), { code: 'ENOMEM', errno: -12, syscall: 'spawn' });
      return real.spawn(...a);
    },
  };
});

const { notStartedChild, spawnOwned } = await import('../../src/core/children.js');
const { ffmpegSource } = await import('../../src/sources/ffmpeg-source.js');
const { videoFrames } = await import('../../src/tools/frames.js');
const { VideoWriter } = await import('../../src/annotate/video-writer.js');

const signals = (): number[] => ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));

describe('a spawn that throws (ENOMEM)', () => {
  it('spawnOwned does not throw: its child never started (no pid), its error event says why, no stop signal held for it', async () => {
    const before = signals();
    const child = spawnOwned(THROWS, ['-version'], { stdio: ['ignore', 'pipe', 'pipe'] });
    expect(child.pid).toBeUndefined();
    expect(child.stdout).toBeNull();
    const error = await new Promise<NodeJS.ErrnoException>((res) => child.once('error', res));
    expect(error).toMatchObject({ code: 'ENOMEM', message: 'spawn ENOMEM' });
    expect(signals()).toEqual(before);
    // Ended, as node tells a child whose start failed: a wait for its end has it.
    expect(child.exitCode).toBe(-12);
  });

  it("its kill() signals nobody: it was kill(pid, signal) with a pid never set (0: argus's own process group; or any process), checked in a process of its own session", () => {
    // A process in a session and group of its own (setsid), its SIGUSR2 caught: the child that never
    // started is killed with SIGUSR2, and the process says whether it got the signal itself.
    const script = `
      import { notStartedChild } from ${JSON.stringify(join(process.cwd(), 'src/core/children.ts'))};
      let got = false;
      process.on('SIGUSR2', () => void (got = true));
      const c = notStartedChild(Object.assign(new Error('spawn ENOMEM'), { code: 'ENOMEM', errno: -12 }));
      c.on('error', () => {});
      const sent = c.kill('SIGUSR2');
      setTimeout(() => { process.stdout.write(JSON.stringify({ sent, got })); process.exit(0); }, 300);`;
    const out = execFileSync('setsid', ['-w', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    // Before: { sent: true, got: true } where the handle's pid read 0 (the whole group signalled).
    expect(JSON.parse(out)).toEqual({ sent: false, got: false });
    // The handle's pid was memory never written: kill(0, …) in one run, kill(471926538, …) in
    // another (ESRCH: nothing sent, and the check above passed). No handle, no kill(2) at all.
    const c = notStartedChild(new Error('spawn ENOMEM'));
    c.on('error', () => {});
    expect((c as unknown as { _handle: unknown })._handle).toBeNull();
  }, 90_000);

  it("a source's ffmpeg: VAP_ERR_SOURCE_SPAWN (retried, as EMFILE is) naming ENOMEM, not a throw", async () => {
    const err = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: 'rtsp://cam.invalid/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
        output: { width: 32, height: 32, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
        ffmpegPath: THROWS,
        memo: { readsOnce: false },
      }),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', message: expect.stringMatching(/could not start ffmpeg \(.*\): spawn ENOMEM/) });
  });

  it('argus detect and preview (videoFrames): VAP_ERR_SOURCE_SPAWN naming ENOMEM, no stop signal left held', async () => {
    const before = signals();
    let error: unknown;
    try {
      for await (const _ of videoFrames({ ffmpegPath: THROWS, url: join(tmpdir(), 'argus-none.mp4'), readsOnce: false }));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
    expect(signals()).toEqual(before);
  });

  it("the annotated video's encoder: VAP_ERR_SINK_FILE naming ENOMEM at write and close, not a throw of its constructor", async () => {
    const w = new VideoWriter({ ffmpegPath: THROWS, path: join(tmpdir(), 'argus-never.mp4'), width: 4, height: 2, fps: 5, order: 'rgb' });
    await expect(w.write(new Uint8Array(4 * 2 * 3))).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
    await expect(w.close()).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
  });
});

/**
 * A child that never started holds a process handle node never spawned: its kill() reached the
 * handle's, which signalled whatever pid its uninitialised memory held (-1, as root: every process
 * on the host). The handle's kill is replaced here by a spy, so that a regression signals nobody.
 */
const handleKill = (child: unknown): ReturnType<typeof vi.fn> => {
  const spy = vi.fn(() => -3); // ESRCH, were it reached
  const handle = (child as { _handle?: { kill: unknown } | null })._handle;
  if (handle) handle.kill = spy;
  return spy;
};

describe('a child that never started is never signalled', () => {
  it("notStartedChild: kill() is false and never reaches the unspawned process handle", async () => {
    const { notStartedChild, signalChild } = await import('../../src/core/children.js');
    const child = notStartedChild(new Error('spawn ENOMEM'));
    child.on('error', () => {});
    const spy = handleKill(child);
    expect(child.kill('SIGKILL')).toBe(false);
    expect(signalChild(child, 'SIGKILL')).toBe(false);
    expect(spy).not.toHaveBeenCalled();
  });

  it("the annotated video's encoder, killed after a write that failed (the annotate sink's way), signals nothing", async () => {
    const w = new VideoWriter({ ffmpegPath: THROWS, path: join(tmpdir(), 'argus-never.mp4'), width: 4, height: 2, fps: 5, order: 'rgb' });
    const spy = handleKill((w as unknown as { child: unknown }).child);
    await expect(w.write(new Uint8Array(4 * 2 * 3))).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE' });
    w.kill();
    expect(spy).not.toHaveBeenCalled();
  });

  it("a file source stopped before its failed start is told (node's EMFILE child: no pid, a handle never spawned) signals nothing", async () => {
    const { ChildProcess } = await import('node:child_process');
    let spy: ReturnType<typeof vi.fn> | undefined;
    const spawn = (): InstanceType<typeof ChildProcess> => {
      // What node gives for EMFILE: a ChildProcess, no pid, no pipes, its 'error' on the next tick.
      const child = Object.assign(new ChildProcess(), { stdin: null, stdout: null, stderr: null });
      spy = handleKill(child);
      process.nextTick(() => child.emit('error', Object.assign(new Error('spawn EMFILE'), { code: 'EMFILE' })));
      return child;
    };
    const sub = ffmpegSource({
      id: 'file',
      input: { url: join(tmpdir(), 'argus-none.mp4'), kind: 'file', rate: 'fast', loop: false, cameraClock: false },
      output: { width: 32, height: 32, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
      ffmpegPath: 'ffmpeg',
      spawn: spawn as never,
      memo: { readsOnce: false },
    }).subscribe({ error: () => {} });
    // Started at once (no ffmpeg before it), and stopped before its 'error' (the next tick).
    expect(spy).toBeDefined();
    sub.unsubscribe();
    await new Promise((r) => setImmediate(r));
    expect(spy).not.toHaveBeenCalled();
  });
});
