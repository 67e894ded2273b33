import { Detections } from '../../src/core/detections.js';
import type { ByteTracker } from '../../src/tracking/byte-tracker.js';

/** One scripted object: a box moving linearly, seen by the detector when the script says so. */
export interface SceneObject {
  /** Name to read its ids back by. */
  readonly key: string;
  /** Box x1 y1 x2 y2 at t = 0 s. */
  readonly box: readonly [number, number, number, number];
  /** Pixels per second (default still). */
  readonly velocity?: readonly [number, number];
  /** Class id (default 0); a function gives it per time. */
  readonly classId?: number | ((tSec: number) => number);
  /** Detector confidence (default 0.9); a function gives it per time. */
  readonly score?: number | ((tSec: number) => number);
  /** Seen from this time on, seconds (default 0). */
  readonly from?: number;
  /** Seen until before this time, seconds (default forever). */
  readonly until?: number;
  /** Intervals [start, end) in seconds during which the detector misses it (occlusion). */
  readonly hidden?: ReadonlyArray<readonly [number, number]>;
}

export interface Scene {
  readonly objects: readonly SceneObject[];
  /** Frames that never reach the tracker (dropped upstream), by frame index and time. */
  readonly drop?: (index: number, tSec: number) => boolean;
  /** Uniform noise, ± this many pixels, added to every box coordinate (seeded). */
  readonly jitter?: number;
  readonly seed?: number;
}

/** One frame that reaches the tracker. */
export interface FeedFrame {
  /** Index in the source's nominal frame sequence (dropped frames included). */
  readonly index: number;
  readonly timestampMs: number;
  readonly detections: Detections;
  /** Object key of each detection row. */
  readonly keys: readonly string[];
}

/** Frames of `scene` at `fps` from 0 up to (not including) `untilSec`, dropped ones left out. */
export function feed(fps: number, untilSec: number, scene: Scene): FeedFrame[] {
  const rand = mulberry32(scene.seed ?? 1);
  const jitter = scene.jitter ?? 0;
  const frames: FeedFrame[] = [];
  const count = Math.round(untilSec * fps);
  for (let index = 0; index < count; index++) {
    const t = index / fps;
    if (scene.drop?.(index, t)) continue;
    const boxes: number[] = [];
    const scores: number[] = [];
    const classes: number[] = [];
    const keys: string[] = [];
    for (const o of scene.objects) {
      if (t < (o.from ?? 0) || t >= (o.until ?? Infinity)) continue;
      if (o.hidden?.some(([a, b]) => t >= a && t < b)) continue;
      const [vx, vy] = o.velocity ?? [0, 0];
      for (let k = 0; k < 4; k++) {
        boxes.push(o.box[k] + (k % 2 === 0 ? vx : vy) * t + (jitter ? (rand() * 2 - 1) * jitter : 0));
      }
      scores.push(valueAt(o.score ?? 0.9, t));
      classes.push(valueAt(o.classId ?? 0, t));
      keys.push(o.key);
    }
    const detections = new Detections(Float32Array.from(boxes), Float32Array.from(scores), Int32Array.from(classes));
    frames.push({ index, timestampMs: (index * 1000) / fps, detections, keys });
  }
  return frames;
}

export interface TrackRun {
  readonly outputs: readonly Detections[];
  /** The id the tracker gave `key` on each frame that reached it (−1: none; absent frames skipped). */
  ids(key: string): number[];
  /** Distinct published ids of `key`, in order of appearance. */
  distinctIds(key: string): number[];
}

/**
 * Feeds `frames` to `tracker`. `timestampMs` overrides the timestamps given to the tracker,
 * e.g. `(f, k) => k * 1000 / 30` to make it believe no frame was dropped (a frame counter).
 */
export function run(
  tracker: ByteTracker,
  frames: readonly FeedFrame[],
  timestampMs: (frame: FeedFrame, arrival: number) => number = (f) => f.timestampMs,
): TrackRun {
  const outputs = frames.map((f, k) => tracker.update(f.detections, timestampMs(f, k)));
  const ids = (key: string): number[] => {
    const out: number[] = [];
    frames.forEach((f, k) => {
      const row = f.keys.indexOf(key);
      if (row >= 0) out.push(outputs[k].trackerId![row]);
    });
    return out;
  };
  const distinctIds = (key: string): number[] => [...new Set(ids(key).filter((id) => id > 0))];
  return { outputs, ids, distinctIds };
}

/** Small seeded PRNG (mulberry32), uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function valueAt(v: number | ((tSec: number) => number), t: number): number {
  return typeof v === 'function' ? v(t) : v;
}
