import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ZodTypeAny } from 'zod';
import { parseConfigText } from '../../src/config/load.js';
import { CameraSchema, ClusterSchema, ModelManifestSchema, PipelineSchema } from '../../src/config/schema.js';

/**
 * YAML spells infinity `.inf` and not-a-number `.nan`; zod's z.number() takes ±Infinity. A
 * `watchdog.stallFactor: .inf` never restarted a stalled source, a `dwellLimitSec: .inf` never
 * raised its event: every number of the configuration is refused unless finite, naming the field.
 */

/** A pipeline with every numeric field set (to a valid value). */
const FULL = {
  sources: [
    {
      id: 'cam',
      uri: 'rtsp://cam.local/s',
      fps: 15,
      inputArgs: ['-framerate', 30],
      decode: { threads: 1 },
      reconnect: { initialDelayMs: 250, maxDelayMs: 2000, jitter: 0.2, maxAttempts: 0, healthyResetMs: 30000 },
      watchdog: { startTimeoutMs: 15000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60000 },
      zones: [{ id: 'z', polygon: [[0.1, 0.1], [0.9, 0.1], [0.5, 0.9]], minHoldFrames: 3, dwellLimitSec: 30, exitDelayMs: 2000, reentrySuppressMs: 0 }],
      lines: [{ id: 'l', from: [0.1, 0.5], to: [0.9, 0.5], marginPx: 10, forgetAfterMs: 2000 }],
      rules: [
        { id: 'r1', type: 'zone-dwell', zone: 'z', cooldownSec: 1 },
        { id: 'r2', type: 'conveyor-rate', line: 'l', minPerMinute: 10, forSec: 30, windowSec: 60 },
        { id: 'r3', type: 'conveyor-defect', classes: ['x'], k: 2, n: 5, minScore: 0.5, cooldownSec: 60 },
      ],
    },
  ],
  model: { batch: { maxBatch: 1, maxWaitMs: 4 }, intraOpThreads: 2, spinMicros: 200, workers: 1, warmupRuns: 2, deviceId: 0 },
  postprocess: { scoreThreshold: 0.3, iouThreshold: 0.45, preNmsTopK: 30000, maxDetections: 100 },
  sinks: {
    kafka: { brokers: ['h:9092'], partitions: 3, replicationFactor: 1, lingerMs: 5, batchSize: 500, maxBatchBytes: 900000, maxMessageBytes: 1000000, deadLetterMaxBytes: 1000, bufferSize: 10, alertBufferSize: 10, alertBufferBytes: 65536, statusBufferSize: 10, closeTimeoutMs: 1000 },
    websocket: { maxBufferedBytes: 1024, maxAlertBacklog: 10, maxClientMessageBytes: 4096, maxClients: 4, heartbeatMs: 1000, maxMessagesPerSecond: 10 },
    annotate: { path: 'out.mp4', maxWidth: 1280, fps: 10, queue: 2 },
  },
  tracking: { trackHighThresh: 0.5, trackLowThresh: 0.1, newTrackThresh: 0.6, matchThresh: 0.8, lostTrackBufferMs: 1000, minConfirmFrames: 2, frameRateHint: 30 },
  alerts: { snapshot: { maxBytes: 150000, maxWidth: 832, quality: 80 } },
  server: { port: 8080, maxConnections: 10, maxHeaderBytes: 16384, headersTimeoutMs: 1000, requestTimeoutMs: 1000, keepAliveTimeoutMs: 1000 },
  outbox: { maxBytes: 1048576, maxAgeHours: 24 },
};
const CLUSTER = { slots: 8, capacity: 1, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, fenceMarginMs: 1500, rebalanceTimeoutMs: 10000, releaseWaitMs: 1000, replicationFactor: 1 };
const CAMERA = { id: 'cam', uri: 'rtsp://cam.local/s', cost: 2, fps: 10 };
const MANIFEST = {
  name: 'm',
  version: '1',
  file: 'm.onnx',
  input: { shape: [1, 3, 416, 416] },
  preprocess: { width: 416, height: 416, letterbox: { pad: 114 }, channelOrder: 'bgr', scale: 1, mean: [0, 0, 0], std: [1, 1, 1] },
  decoder: { strides: [8, 16, 32] },
};

/** Paths of every number inside a plain value, as the issues' paths. */
function numberPaths(v: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof v === 'number') return [path];
  if (Array.isArray(v)) return v.flatMap((x, i) => numberPaths(x, [...path, i]));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => numberPaths(x, [...path, k]));
  return [];
}

function withValue<T>(doc: T, path: (string | number)[], value: number): T {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  node[path[path.length - 1]] = value;
  return copy as T;
}

describe('numbers of the configuration are finite', () => {
  it.each([
    ['the pipeline', PipelineSchema as ZodTypeAny, FULL],
    ['the cluster section', ClusterSchema as ZodTypeAny, CLUSTER],
    ['a camera of the cameras topic', CameraSchema as ZodTypeAny, CAMERA],
    ['a model manifest', ModelManifestSchema as ZodTypeAny, MANIFEST],
  ])('%s: every numeric field refuses .inf, -.inf and .nan at its own path', (_n, schema, doc) => {
    expect(schema.safeParse(doc).success).toBe(true);
    const paths = numberPaths(doc);
    expect(paths.length).toBeGreaterThan(0);
    const accepted: string[] = [];
    for (const path of paths) {
      for (const bad of [Infinity, -Infinity, NaN]) {
        const r = schema.safeParse(withValue(doc, path, bad));
        const at = r.success ? [] : r.error.issues.filter((i) => i.path.join('.') === path.join('.'));
        if (!at.length) accepted.push(`${path.join('.')} = ${bad}`);
      }
    }
    expect(accepted).toEqual([]);
  });

  it.each([
    ['watchdog.stallFactor: .inf', '    watchdog: {stallFactor: .inf}\n', /sources\[0\]\.watchdog\.stallFactor: must be a finite number \(not \.inf or -\.inf\)/],
    ['a zone point -.inf', '    zones:\n      - {id: z, units: pixel, polygon: [[0, 0], [-.inf, 10], [10, 10]]}\n', /sources\[0\]\.zones\[0\]\.polygon\[1\]\[0\]: must be a finite number/],
    ['dwellLimitSec: .inf', '    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], dwellLimitSec: .inf}\n', /sources\[0\]\.zones\[0\]\.dwellLimitSec: must be a finite number/],
    ['marginPx: .nan', '    lines:\n      - {id: l, from: [0, 0], to: [1, 1], marginPx: .NaN}\n', /sources\[0\]\.lines\[0\]\.marginPx: must be a finite number \(\.nan is not a number\)/],
    ['a number from ${env:…}', '    fps: ${env:FPS}\n', /sources\[0\]\.fps: must be a finite number/],
  ])('%s → VAP_ERR_CONFIG naming the field', (_n, extra, want) => {
    let msg = '';
    try {
      parseConfigText(`sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n${extra}`, PipelineSchema, 'p.yaml', { FPS: '.inf' });
    } catch (e) {
      expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
      msg = (e as Error).message;
    }
    expect(msg).toMatch(want);
  });

  it('every number of the schema is declared through finite() (a new z.number() would take .inf again)', () => {
    const dir = resolve(__dirname, '../../src/config/schema');
    const bare = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').map((l, i) => [`${f}:${i + 1}`, l] as const))
      .filter(([, l]) => !/^\s*(\*|\/\/|\/\*)/.test(l) && /z\.number\(\)(?!\.finite\()/.test(l));
    expect(bare.map(([where]) => where)).toEqual([]);
  });
});

describe('frame rates', () => {
  const load = (extra: string) => parseConfigText(`sources:\n  - id: cam\n    uri: /clip.mp4\n${extra}`, PipelineSchema, 'p.yaml', {});
  const refusal = (extra: string) => {
    try {
      load(extra);
    } catch (e) {
      return `${(e as { code?: string }).code}: ${(e as Error).message}`;
    }
    return 'accepted';
  };

  it.each([
    ['a source fps of 1e-300 (positive, and no frame at all: the run ended with status 0, nothing said)', '    fps: 1e-300\n', /VAP_ERR_CONFIG: [\s\S]*sources\[0\]\.fps: at least one frame an hour/],
    ['a source fps of 0', '    fps: 0\n', /VAP_ERR_CONFIG: [\s\S]*sources\[0\]\.fps: at least one frame an hour/],
    ['an annotated video at 1e-9 fps', 'sinks:\n  annotate: {path: out.mp4, fps: 1.0e-9}\n', /VAP_ERR_CONFIG: [\s\S]*sinks\.annotate\.fps: at least one frame an hour/],
    ['a source fps above 240', '    fps: 241\n', /VAP_ERR_CONFIG: [\s\S]*sources\[0\]\.fps/],
  ])('%s → refused, naming the field', (_n, extra, want) => {
    expect(refusal(extra)).toMatch(want);
  });

  it('one frame an hour, and anything up to 240, is taken', () => {
    expect(refusal(`    fps: ${1 / 3600}\n`)).toBe('accepted');
    expect(refusal('    fps: 0.5\n')).toBe('accepted');
    expect(refusal('    fps: 240\n')).toBe('accepted');
  });
});
