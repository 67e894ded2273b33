import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer, type AlertBody, type AlertDraft, type AnalyticsSummary } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import type { Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { messageJsonSchemaText, runTag, type AlertMessage, type Message } from '../../src/sinks/message.js';
import { AlertPublisher } from '../../src/sinks/alerts.js';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { Publisher } from '../../src/sinks/publisher.js';
import type { Sink } from '../../src/sinks/sink.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { assertValidMessage, messageErrors, SCHEMA_FILE } from '../helpers/schema.js';
import { feed } from '../tracking/helpers.js';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
/** `tsx scripts/schema.ts ARGS` (what `npm run schema` runs); resolves with the exit code and output. */
async function schemaScript(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'scripts/schema.ts', ...args], { cwd: ROOT });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout + x.stderr };
  }
}

describe('the committed message schema', () => {
  it('is exactly what the zod definition in src/sinks/message.ts generates (npm run schema)', () => {
    // On failure: run `npm run schema` and commit src/sinks/message.schema.json.
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(messageJsonSchemaText());
  });

  it('scripts/schema.ts writes that text, and --check exits 1 naming a file that differs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-schema-'));
    const file = join(dir, 'message.schema.json');
    expect((await schemaScript(file)).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(readFileSync(SCHEMA_FILE, 'utf8'));
    expect(await schemaScript('--check', file)).toMatchObject({ code: 0 });

    const old = JSON.parse(readFileSync(file, 'utf8'));
    delete old.$defs.detection.additionalProperties;
    writeFileSync(file, `${JSON.stringify(old, null, 2)}\n`);
    const r = await schemaScript('--check', file);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`${file} differs from the schema in src/sinks/message.ts`);
  });

  it('keeps its identity and draft', () => {
    const s = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
    expect(s.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(s.$id).toBe('https://argus.dev/schemas/message.v1.json');
    expect(s.title).toBe('argus message, version 1');
    expect(Object.keys(s.$defs)).toEqual(['detection', 'alert']);
  });
});

const LABELS = ['person', 'bicycle', 'car'];
const W = 640, H = 480;

/** A frame as the reader delivers it, with every stage stamped as the pipeline does. */
function frame(seq: number): Frame {
  const t0 = 1_796_008_567_104.88 + seq * 100;
  return {
    source: 'cam-1',
    seq,
    pts: seq / 10,
    data: Buffer.alloc(0),
    letterbox: letterbox(W, H, 416, 416),
    stamps: { produced: t0 - 40, captured: t0, staged: t0 + 0.2, preprocessed: t0 + 1.1, inferStart: t0 + 1.3, inferEnd: t0 + 15.2, postprocessed: t0 + 15.6, emitted: t0 + 15.7 },
    producedBy: 'arrival',
    release: () => {},
  };
}

/** Messages as the sinks receive them (the JSON the Publisher serialised, parsed back). */
function collect(): { sink: Sink; got: Message[] } {
  const got: Message[] = [];
  return { got, sink: { name: 'collect', publish: (_k, _s, json) => void got.push(JSON.parse(json)), close: async () => {} } };
}

/**
 * A person walking through a zone and across a line, through the real tracker and analyzer:
 * each frame's detections and summary, and the alerts raised on the way.
 */
function scene() {
  const cfg = SourceSchema.parse({
    id: 'cam-1',
    uri: '/x.mp4',
    zones: [{ id: 'dock', polygon: [[0.5, 0.5], [1, 0.5], [1, 1], [0.5, 1]], classes: ['person'], minHoldFrames: 3 }],
    lines: [{ id: 'gate', from: [0.4, 0], to: [0.4, 1], classes: ['person'] }],
    rules: [{ id: 'enter', type: 'zone-enter', zone: 'dock', severity: 'warning' }, { id: 'cross', type: 'line-cross', line: 'gate' }],
  });
  const analyzer = new SourceAnalyzer(cfg, LABELS, 'sources[0]');
  analyzer.init(W, H);
  const tracker = new ByteTracker({ frameRateHint: 10 });
  const frames: { seq: number; detections: Detections; summary: AnalyticsSummary; alerts: AlertDraft[] }[] = [];
  for (const f of feed(10, 8, { objects: [{ key: 'p', box: [80, 300, 120, 400], velocity: [60, 0] }] })) {
    const detections = tracker.update(f.detections, f.timestampMs);
    const { summary, alerts } = analyzer.process(detections, f.timestampMs);
    frames.push({ seq: f.index, detections, summary, alerts });
  }
  return frames;
}

describe('real messages validate against the schema', () => {
  it('detections (tracked, with zone and line figures), alerts (with snapshot and rule extras) and status changes', async () => {
    const { sink, got } = collect();
    const publisher = new Publisher([sink], { name: 'yolox-nano', version: '0.1.1rc0' }, LABELS);
    const frames = scene();
    for (const f of frames) {
      publisher.detections(frame(f.seq), f.detections, 2, f.summary);
      for (const { row, ...rest } of f.alerts) {
        // As pipeline/alerts.ts makes it: an id, the draft's fields, a snapshot.
        const body = { id: `cam-1:${rest.rule}:r1-${f.seq}:${rest.trackId ?? `r${row}`}`, ...rest, snapshot: { contentType: 'image/jpeg', data: 'AAEC', width: 320, height: 240 } } as AlertBody;
        await publisher.alert(frame(f.seq), f.detections, 2, body);
      }
    }
    await publisher.status({ source: 'cam-1', state: 'reconnecting', previous: 'streaming', reason: 'ffmpeg exited with code 1', at: 1_796_008_567_200, attempt: 1, code: 'VAP_ERR_SOURCE_EXIT', detail: 'Connection refused' });
    await publisher.status({ source: 'cam-1', state: 'streaming', previous: 'starting', reason: 'first frame', at: 1_796_008_567_300, attempt: 0 });

    // The scene really produced what the schema has to cover.
    const alerts = got.filter((m) => m.type === 'alert');
    expect(alerts.map((a) => a.alert.event).sort()).toEqual(['line.cross', 'zone.enter']);
    expect(alerts.find((a) => a.alert.event === 'line.cross')!.alert).toHaveProperty('direction');
    const last = got.filter((m) => m.type === 'detections').at(-1)!;
    expect(last.analytics!.zones!.dock.entered).toBe(1);
    expect(Object.values(last.analytics!.lines!.gate.in).concat(Object.values(last.analytics!.lines!.gate.out))).toEqual([1]);
    expect(last.detections[0].trackId).toBeGreaterThanOrEqual(1);
    expect(got.filter((m) => m.type === 'status')).toHaveLength(2);

    for (const m of got) assertValidMessage(m);
  });
});

describe('messages of two starts of argus', () => {
  it('are told apart by run: seq starts at 0 at each start, so (run, seq) never repeats, and an alert id carries its message\'s run', async () => {
    // Two starts of one pipeline (a restart, or a crash and a restart): each publishes its frame 0 of cam-1, an alert on it and a status.
    const starts = [runTag(), runTag()].map((run) => {
      const { sink, got } = collect();
      const publisher = new Publisher([sink], { name: 'm', version: '1' }, LABELS, undefined, undefined, run);
      const alerts = new AlertPublisher(publisher, { snapshot: { mode: 'none', dir: 'snapshots' } } as never, {} as never, '/tmp', () => {});
      return { run, got, publisher, alerts };
    });
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
    for (const { publisher, alerts } of starts) {
      publisher.detections(frame(0), none, 0);
      alerts.raise({ frame: frame(0), detections: none, dropped: 0, alerts: [{ rule: 'door', severity: 'warning', event: 'zone.enter', message: 'm', row: 0 }] } as unknown as FrameResult);
      await alerts.drain();
      await publisher.status({ source: 'cam-1', state: 'streaming', previous: 'starting', reason: 'first frame', at: 1_796_008_567_300, attempt: 0 });
    }
    for (const { run, got } of starts) {
      expect(got.map((m) => [m.type, m.run])).toEqual([['detections', run], ['alert', run], ['status', run]]);
      expect((got[1] as AlertMessage).alert.id).toBe(`cam-1:door:${run}-0:r0`);
      for (const m of got) assertValidMessage(m);
    }
    // What a consumer keys frames by: the same seq, told apart (before, both were {source: cam-1, seq: 0} and nothing else said which start).
    const keys = starts.flatMap(({ got }) => got.filter((m) => m.type === 'detections').map((m) => `${m.source}/${m.run}/${m.seq}`));
    expect(new Set(keys).size).toBe(2);
    // A publisher of the pipeline (run.ts, one a run) makes a tag of its own: seq counts from 0 again in each run.
    expect(new Publisher([], { name: 'm', version: '1' }, LABELS).run).not.toBe(new Publisher([], { name: 'm', version: '1' }, LABELS).run);
  });
});

describe('wrong messages are rejected, naming the field', () => {
  const valid = async () => {
    const { sink, got } = collect();
    const publisher = new Publisher([sink], { name: 'm', version: '1' }, LABELS);
    const d = new Detections(new Float32Array([10, 20, 50, 120]), new Float32Array([0.87]), new Int32Array([0]), new Int32Array([3]));
    publisher.detections(frame(4), d, 0);
    await publisher.alert(frame(4), d, 0, { id: 'cam-1:r:x-4:3', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'person #3 entered zone z', trackId: 3, zone: 'z' });
    await publisher.status({ source: 'cam-1', state: 'ended', previous: 'streaming', reason: 'end of stream', at: 1_796_008_567_300, attempt: 0 });
    const [det, alert, status] = got.map((m) => m as Record<string, any>);
    for (const m of got) assertValidMessage(m);
    return { det, alert, status };
  };

  const cases: [string, (m: Awaited<ReturnType<typeof valid>>) => unknown, RegExp][] = [
    ['a detections message without model', ({ det }) => (delete det.model, det), /must have required property 'model'/],
    ['a status message without attempt', ({ status }) => (delete status.attempt, status), /must have required property 'attempt'/],
    ['an alert message without its alert', ({ alert }) => (delete alert.alert, alert), /must have required property 'alert'/],
    ['an alert without an id', ({ alert }) => (delete alert.alert.id, alert), /\/alert must have required property 'id'/],
    ['seq as a string', ({ det }) => ((det.seq = '4'), det), /\/seq must be integer/],
    ['a run that is not a run tag', ({ det }) => ((det.run = 'Run 1'), det), /\/run must match pattern/],
    ['a fractional classId', ({ det }) => ((det.detections[0].classId = 0.5), det), /\/detections\/0\/classId must be integer/],
    ['a score above 1', ({ det }) => ((det.detections[0].score = 1.5), det), /\/detections\/0\/score must be <= 1/],
    ['a box of five numbers', ({ det }) => (det.detections[0].box.push(1), det), /\/detections\/0\/box must NOT have more than 4 items/],
    ['a box of three numbers', ({ det }) => (det.detections[0].box.pop(), det), /\/detections\/0\/box must NOT have fewer than 4 items/],
    ['an unknown severity', ({ alert }) => ((alert.alert.severity = 'urgent'), alert), /\/alert\/severity must be equal to one of the allowed values/],
    ['an unknown source state', ({ status }) => ((status.state = 'sleeping'), status), /\/state must be equal to one of the allowed values/],
    ['a stamp still 0 (stage never ran)', ({ det }) => ((det.stamps.inferEnd = 0), det), /\/stamps\/inferEnd must be > 0/],
    ['a non-numeric extra stamp', ({ det }) => ((det.stamps.sent = 'late'), det), /\/stamps\/sent must be number/],
    ['an unknown field on a detection', ({ det }) => ((det.detections[0].colour = 'red'), det), /\/detections\/0 must NOT have additional properties/],
    ['another kind\'s field (detections on a status)', ({ status }) => ((status.detections = []), status), /must NOT have additional properties/],
    ['version 2', ({ det }) => ((det.version = 2), det), /\/version must be equal to constant/],
    ['capturedAt that is not a date-time', ({ det }) => ((det.capturedAt = 'yesterday'), det), /\/capturedAt must match/],
    ['a zone alert\'s late that is not true', ({ alert }) => ((alert.alert.late = 'yes'), alert), /\/alert\/late must be equal to constant/],
    ['a zone alert\'s atPts that is not a number', ({ alert }) => ((alert.alert.atPts = '12.3'), alert), /\/alert\/atPts must be number/],
    ['a snapshot of another content type', ({ alert }) => ((alert.alert.snapshot = { contentType: 'image/png', width: 1, height: 1 }), alert), /\/alert\/snapshot\/contentType must be equal to constant/],
  ];
  it.each(cases)('%s', async (_what, mutate, error) => {
    const errors = messageErrors(mutate(await valid()));
    expect(errors).toMatch(error);
  });

  it('extra numeric stamps and rule-specific alert fields stay allowed (v1 consumers accept later additions)', async () => {
    const { det, alert } = await valid();
    det.stamps.sent = det.stamps.published + 1;
    alert.alert.dwellMs = 3000;
    expect(messageErrors(det)).toBe('');
    expect(messageErrors(alert)).toBe('');
  });

  it('$defs/detection validates one detection on its own', async () => {
    const ajv = new Ajv2020.default({ allErrors: true, strict: false });
    addFormats.default(ajv);
    ajv.addSchema(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')));
    const one = ajv.getSchema('https://argus.dev/schemas/message.v1.json#/$defs/detection')!;
    const { det } = await valid();
    expect(one(det.detections[0])).toBe(true);
    expect(one({ ...det.detections[0], label: 7 })).toBe(false);
  });
});
