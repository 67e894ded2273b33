/**
 * npm run bench:preprocess [-- --frames N --rounds R --json FILE]
 *
 * What pre-processing costs per frame, decoder output → model tensor, all processes, side by
 * side in one run on the shared 432p person video and the derived 1080p30 clip:
 * - `fast`: ffmpeg scales and pads to the model's input (swscale bilinear), argus normalises;
 * - `exact`: ffmpeg delivers the frames as decoded (4:2:0 YUV), argus letterboxes with OpenCV's
 *   INTER_LINEAR (src/preprocess/letterbox.ts) in its C kernel (src/preprocess/letterbox.c),
 *   converting each sampled pixel as ffmpeg would (src/preprocess/yuv.ts) — the default;
 * - `exact-bgr`: ffmpeg converts colours to BGR, the same kernel letterboxes (ARGUS_YUV=0, and
 *   sources that are not 4:2:0);
 * - `exact-js`: BGR frames, the letterbox in its TypeScript loops (where no C compiler was at install);
 * - `exact-pipe`: as `exact`, the frames read through Node's own pipe (a child's stdout: 64 KB
 *   chunks copied into the frame), as every source's were before the frame channel and are where
 *   it is not built.
 * For each, ffmpeg decodes N frames (one decoder thread, as argus runs it) and the frames go
 * through argus's own reader (the frame channel, src/sources/frame-channel.ts, as cameras' and
 * files' at their own rate are read; but for `exact-pipe`) and pre-processing. Figures per frame:
 * - ffmpeg: ffmpeg's CPU (user + sys) less the same decode writing nothing (`-f null`), i.e.
 *   scaling, colour conversion and writing the pipe;
 * - node: this process's CPU reading the frames (the channel's thread included) and pre-processing (GC included);
 * - preprocess p50: the pre-processing call alone, wall time on the main thread;
 * - total = ffmpeg + node.
 * Rounds interleave the modes; medians over rounds. The load average is printed with them.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveStream } from '../src/assets/catalog.js';
import { letterbox } from '../src/core/geometry.js';
import { letterboxTensor, letterboxYuvTensor } from '../src/preprocess/letterbox.js';
import { yuvTables } from '../src/preprocess/yuv.js';
import { normalizeHwcToChw } from '../src/preprocess/normalize.js';
import { buildFfmpegArgs, frameBytes, type FfmpegOutputSpec } from '../src/sources/ffmpeg-args.js';
import { defaultFfmpegPath } from '../src/sources/ffmpeg-path.js';
import { FrameChannel } from '../src/sources/frame-channel.js';
import { BufferPool, FrameReader } from '../src/sources/frame-reader.js';
import { colourOf, StderrProbe } from '../src/sources/stderr-probe.js';
import { numberFlag } from './lib/flags.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
};
const FRAMES = numberFlag(process.argv, 'frames', 300, { min: 1 });
const ROUNDS = numberFlag(process.argv, 'rounds', 3, { min: 1 });
const JSON_OUT = arg('json', '');
const ff = defaultFfmpegPath();
const dir = mkdtempSync(join(tmpdir(), 'argus-bench-pre-'));
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const MODEL = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114, rounding: 'floor' as const };

/** Runs ffmpeg under /usr/bin/time; resolves its CPU seconds (user + sys). */
function timed(args: string[], onStdout?: (b: Buffer) => void, onStderr?: (s: string) => void, channel?: FrameChannel): Promise<number> {
  const out = join(dir, `time-${Math.random().toString(36).slice(2)}`);
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', out, ff, ...args], { stdio: ['ignore', channel?.childEnd ?? 'pipe', 'pipe'] });
    channel?.spawned();
    child.stdout?.on('data', (b: Buffer) => onStdout?.(b));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (s: string) => onStderr?.(s));
    child.on('error', reject);
    child.on('close', () => {
      try {
        const [u, s] = readFileSync(out, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
        resolve(u + s);
      } catch (e) {
        reject(e);
      }
    });
  });
}

async function decodeOnly(clip: string): Promise<number> {
  return (await timed(['-hide_banner', '-nostdin', '-loglevel', 'error', '-threads', '1', '-i', clip, '-an', '-frames:v', String(FRAMES), '-f', 'null', '-'])) / FRAMES;
}

async function mode(clip: string, frame: 'letterbox' | 'source' | 'source-yuv', impl: 'native' | 'js' = 'native', via: 'channel' | 'pipe' = 'channel'): Promise<{ ffmpegMs: number; nodeMs: number; preprocessP50: number; frames: number }> {
  const output: FfmpegOutputSpec = { ...MODEL, frame };
  const args = buildFfmpegArgs({ url: clip, kind: 'file', rate: 'fast', loop: false }, output);
  args.splice(args.indexOf('-f', args.indexOf('-vf')), 0, '-frames:v', String(FRAMES));
  const tensor = new Float32Array(416 * 416 * 3);
  const normalize = { scale: 1, mean: [0, 0, 0] as [number, number, number], std: [1, 1, 1] as [number, number, number] };
  const probe = new StderrProbe();
  let reader: FrameReader | undefined;
  let frames = 0;
  const pre: number[] = [];
  const pending: Buffer[] = [];
  let w = 0, h = 0;
  const onFrame = (data: Buffer) => {
    const t = performance.now();
    if (frame === 'source') letterboxTensor(data, w, h, 'bgr', letterbox(w, h, 416, 416, 'top-left', 'floor'), tensor, { modelOrder: 'bgr', normalize, padValue: 114 }, 0, impl);
    else if (frame === 'source-yuv') letterboxYuvTensor(data, w, h, tab, letterbox(w, h, 416, 416, 'top-left', 'floor'), tensor, { modelOrder: 'bgr', normalize, padValue: 114 });
    else normalizeHwcToChw(data, 416, 416, tensor, normalize);
    pre.push(performance.now() - t);
    frames++;
    pool.release(data);
  };
  let pool = new BufferPool(1, 4);
  let tab: Int32Array = new Int32Array(0);
  const channel = via === 'channel' ? FrameChannel.open() : undefined;
  if (via === 'channel' && !channel) throw new Error('bench:preprocess: no frame channel (dist/native/frame-channel.node is not built)');
  let ended: () => void = () => {};
  const channelEnded = new Promise<void>((r) => (ended = r));
  if (channel) channel.onEnd = () => ended();
  else ended();
  const cpu0 = process.cpuUsage();
  const ffCpu = await timed(
    args,
    (b) => {
      if (reader) reader.push(b);
      else pending.push(b);
    },
    (s) => {
      probe.push(s);
      const size = frame === 'letterbox' ? probe.info : probe.output;
      if (!reader && size) {
        if (frame === 'source-yuv') tab = yuvTables(colourOf(probe.output!.pixFmt ?? '', probe.output!.pixDetails));
        w = size.width;
        h = size.height;
        const n = frameBytes(output, w, h);
        pool = new BufferPool(n, 4);
        reader = new FrameReader(n, pool, onFrame);
        for (const b of pending.splice(0)) reader.push(b);
        if (channel) {
          channel.feed(reader);
          channel.resume();
        }
      }
    },
    channel,
  );
  await channelEnded;
  channel?.destroy();
  const cpu = process.cpuUsage(cpu0);
  return { ffmpegMs: (ffCpu * 1000) / frames, nodeMs: (cpu.user + cpu.system) / 1000 / frames, preprocessP50: median(pre), frames };
}

const clips = [
  { name: '432p', clip: await resolveStream('one-by-one-person-detection.mp4', ff) },
  { name: '1080p', clip: await resolveStream('person-1080p30.mp4', ff) },
];
const rows: Record<string, Record<string, { ffmpeg: number[]; node: number[]; pre: number[]; base: number[] }>> = {};
const load: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const c of clips) {
    const base = await decodeOnly(c.clip);
    for (const [key, m, impl, via] of [['fast', 'letterbox', 'native', 'channel'], ['exact', 'source-yuv', 'native', 'channel'], ['exact-pipe', 'source-yuv', 'native', 'pipe'], ['exact-bgr', 'source', 'native', 'channel'], ['exact-js', 'source', 'js', 'channel']] as const) {
      const res = await mode(c.clip, m, impl, via);
      const row = ((rows[c.name] ??= {})[key] ??= { ffmpeg: [], node: [], pre: [], base: [] });
      row.ffmpeg.push(res.ffmpegMs - base * 1000);
      row.node.push(res.nodeMs);
      row.pre.push(res.preprocessP50);
      row.base.push(base * 1000);
      load.push(loadavg()[0]);
    }
  }
}
const result: Record<string, unknown> = { frames: FRAMES, rounds: ROUNDS, load: { min: Math.min(...load), max: Math.max(...load) }, ffmpeg: ff };
console.log(`pre-processing per frame, decoder output → tensor (${FRAMES} frames × ${ROUNDS} rounds, medians; load ${Math.min(...load).toFixed(2)}–${Math.max(...load).toFixed(2)})`);
console.log('clip   mode     ffmpeg ms  node ms  total ms  preprocess p50 ms  (decode alone ms)');
for (const [clip, modes] of Object.entries(rows)) {
  for (const [m, v] of Object.entries(modes)) {
    const f = median(v.ffmpeg), n = median(v.node), p = median(v.pre);
    console.log(`${clip.padEnd(6)} ${m.padEnd(8)} ${f.toFixed(2).padStart(9)} ${n.toFixed(2).padStart(8)} ${(f + n).toFixed(2).padStart(9)} ${p.toFixed(2).padStart(18)}  (${median(v.base).toFixed(2)})`);
    result[`${clip}.${m}`] = { ffmpegMs: f, nodeMs: n, totalMs: f + n, preprocessP50Ms: p, decodeMs: median(v.base) };
  }
}
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(result, null, 2));
rmSync(dir, { recursive: true, force: true });
