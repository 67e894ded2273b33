import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ClusterView, parseCamera } from '../../src/cluster/view.js';
import { MAX_NESTING, parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { ArgusError, ErrorCodes } from '../../src/core/errors.js';

const SOURCE = 'sources:\n  - id: cam\n    uri: /videos/a.mp4\n';
const refusal = (yaml: string) => {
  try {
    parseConfigText(yaml, PipelineSchema, 'p.yaml', {});
  } catch (e) {
    return e as ArgusError;
  }
  throw new Error('expected an error');
};

describe('a pipeline YAML nested too deeply is refused naming the file (VAP_ERR_CONFIG_FILE), not with the engine’s stack overflow', () => {
  it.each([
    // Each overflowed the parser's stack: a RangeError ("Maximum call stack size exceeded", or a
    // SyntaxError from a regular expression compiled at the limit), no code, no file name.
    ['100 000 nested flow lists (200 KB)', `${SOURCE}x: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`],
    ['50 000 nested flow mappings', `${SOURCE}x: ${'{a: '.repeat(50_000)}1${'}'.repeat(50_000)}\n`],
    ['1 300 levels of indentation (under 1 MiB)', `${SOURCE}x:\n${Array.from({ length: 1300 }, (_, i) => `${' '.repeat(i + 1)}a:\n`).join('')}`],
  ])('%s', (_n, yaml) => {
    const e = refusal(yaml);
    expect(e).toBeInstanceOf(ArgusError);
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toBe(`p.yaml: not valid YAML: nested more than ${MAX_NESTING} levels deep (mappings and lists within each other)`);
  });

  it('a depth the parser reads but nothing needs is refused too, saying where', () => {
    const e = refusal(`${SOURCE}extra:\n  - ${'['.repeat(MAX_NESTING)}${']'.repeat(MAX_NESTING)}\n`);
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toBe(`p.yaml: not valid YAML: nested more than ${MAX_NESTING} levels deep (mappings and lists within each other) (at extra[0][0][0]…)`);
    // A pipeline's own depth passes that check (it fails the schema, on the unknown key, instead).
    expect(refusal(`${SOURCE}extra: ${'['.repeat(MAX_NESTING - 1)}${']'.repeat(MAX_NESTING - 1)}\n`).code).toBe(ErrorCodes.CONFIG);
  });
});

describe('aliases that multiply ("billion laughs") are refused for what they are', () => {
  it('VAP_ERR_CONFIG_FILE saying the aliases repeat too much (it said "an alias with no anchor before it")', () => {
    let yaml = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 9; i++) yaml += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`;
    const e = refusal(`${SOURCE}${yaml}`);
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toMatch(/^p\.yaml: not valid YAML: aliases \(\*name\) that repeat an anchor \(&name\) too many times/);
  });
});

describe('a key named __proto__ is refused, naming where', () => {
  it('in a pipeline: its contents are not read as the fields around it', () => {
    // `out[k] = …` in interpolateEnv set the prototype: the schema read `fps` through it as the
    // source's own field (refused here only for being over 240, naming `sources[0].fps`, which the
    // file does not have; `__proto__: { fps: 30 }` was taken as fps 30).
    const e = refusal(`sources:\n  - id: cam\n    uri: /videos/a.mp4\n    __proto__: { fps: 500 }\n`);
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toBe('p.yaml: not valid YAML: a key __proto__ (in sources[0]), which is no field');
  });

  it('in a camera record (JSON): listed as invalid, where it was dropped without a word (the camera schema passes unknown keys on to the source’s, through an object whose prototype it set)', () => {
    const r = parseCamera('cam', '{"id":"cam","uri":"rtsp://h/x","__proto__":{"enabled":false}}');
    expect(r.definition).toBeUndefined();
    expect(r.error).toBe('a key __proto__ (in (root)), which is no field');
  });
});

describe('a camera record nested too deeply is listed as invalid, and replaces the record before it', () => {
  const rec = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
  const deepList = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

  it.each([
    ['a placement of 30 000 nested lists (JSON)', `{"id":"cam","uri":"rtsp://h/x","placement":${deepList(30_000)}}`],
    ['a field of 30 000 nested lists (JSON)', `{"id":"cam","uri":"rtsp://h/x","zones":${deepList(30_000)}}`],
    ['a field of 30 000 nested lists (YAML)', `id: cam\nuri: rtsp://h/x\nzones: ${deepList(30_000)}\n`],
  ])('%s', (_n, text) => {
    expect(parseCamera('cam', text).error).toMatch(new RegExp(`nested more than ${MAX_NESTING} levels deep`));
    // In the view: the camera's previous, valid record no longer runs (a record that threw while
    // read was skipped by the view's catch, and the camera went on with its former definition).
    const v = new ClusterView({} as Kafka, { cameras: 'c', owners: 'o' });
    v.ingest('c', 0, 'cam', rec({ id: 'cam', uri: 'rtsp://h/x', fps: 2 }), '0');
    expect(v.cameras.get('cam')!.definition).toBeDefined();
    v.ingest('c', 0, 'cam', rec(text), '1');
    const entry = v.cameras.get('cam')!;
    expect(entry.offset).toBe('1');
    expect(entry.definition).toBeUndefined();
    expect(entry.active).toBe(false);
    expect(entry.error).toMatch(/nested more than/);
  });
});

describe('Kafka topic names are checked as the broker checks them, naming the field', () => {
  // `topics.detections: "bad topic"` was taken: the run then warned every 5 s that its topics
  // could not be created, dropped every detection and kept every alert in the outbox.
  const kafka = (topics: string) => `${SOURCE}model: { manifest: yolox-nano }\nsinks:\n  kafka:\n    brokers: ["127.0.0.1:9092"]\n    topics: ${topics}\n`;
  it.each([
    ['a blank', '{ detections: "bad topic" }', 'sinks.kafka.topics.detections: a Kafka topic name: letters, digits, dot, dash or underscore'],
    ['an empty name', '{ alerts: "" }', 'sinks.kafka.topics.alerts: a Kafka topic name: letters, digits, dot, dash or underscore'],
    ['..', '{ status: ".." }', 'sinks.kafka.topics.status: a Kafka topic name: not . or ..'],
    ['250 characters', `{ detections: ${'t'.repeat(250)} }`, 'sinks.kafka.topics.detections: a Kafka topic name: at most 249 characters'],
  ])('%s', (_n, topics, want) => {
    const e = refusal(kafka(topics));
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(e.message).toBe(`p.yaml: invalid configuration\n  ${want}`);
  });

  it('the cluster topics too; valid names pass', () => {
    const worker = (t: string) => `name: w\nmodel: { manifest: yolox-nano }\nsinks:\n  kafka:\n    brokers: ["127.0.0.1:9092"]\n    topics: { detections: a.b_c-D9 }\ncluster:\n  camerasTopic: ${t}\n`;
    expect(refusal(worker('"cams/1"')).message).toContain('cluster.camerasTopic: a Kafka topic name: letters, digits, dot, dash or underscore');
    expect(() => parseConfigText(worker('my.cameras'), PipelineSchema, 'p.yaml', {})).not.toThrow();
  });
});

describe('a NUL character in a string is refused naming where (no path, URL or argument holds one)', () => {
  it.each([
    ['an inputArgs word (ffmpeg failed to spawn at every retry, for ever, the word printed)', `${SOURCE}    inputArgs: [-user_agent, "a\\0b"]\n`, 'sources[0].inputArgs[1]'],
    ['a uri', 'sources:\n  - {id: cam, uri: "/videos/a.mp4\\0x"}\n', 'sources[0].uri'],
    ['a sink path', `${SOURCE}sinks: {jsonl: {path: "out\\0.jsonl"}}\n`, 'sinks.jsonl.path'],
  ])('%s', (_n, yaml, where) => {
    const e = refusal(yaml);
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toBe(`p.yaml: not valid YAML: a NUL character (\\0) in a string (at ${where}), which no path, URL or ffmpeg argument can hold`);
  });

  it('a camera record (JSON) too', () => {
    expect(parseCamera('cam', JSON.stringify({ id: 'cam', uri: '/videos/a.mp4', inputArgs: ['-user_agent', 'a\u0000b'] })).error).toBe('a NUL character (\\0) in a string (at inputArgs[1]), which no path, URL or ffmpeg argument can hold');
  });
});

describe('a YAML error is advised on only where indentation can be its cause', () => {
  it('an unclosed quote is not told to check the indentation; a flow list not indented enough and a key one space too far are', () => {
    expect(refusal(`sources:\n  - id: "cam\n    uri: /videos/a.mp4\n`).message).toMatch(/Missing closing "quote$/);
    expect(refusal(`a: [1, 2\nb: 3\n`).message).toMatch(/must be sufficiently indented and end with a \] \(check the indentation of this line/);
    expect(refusal(`a: b\n   c: d\n`).message).toMatch(/\(check the indentation of this line/);
  });
});
