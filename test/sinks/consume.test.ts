import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Kafka, logLevel } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { consume } from '../../src/sinks/consume.js';
import { ARGUS, runClosingAfterFirstLine, runCommand } from '../helpers/cli.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';

let brokers: string[];
beforeAll(async () => {
  brokers = await testBrokers();
}, 600_000);

/** Writes `values` (null: a tombstone) to a new one-partition topic, in this order. */
async function produce(topic: string, values: (string | null)[], create = true): Promise<void> {
  const kafka = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING });
  if (create) {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
  }
  const p = kafka.producer();
  await p.connect();
  await p.send({ topic, messages: values.map((value) => ({ key: 'k', value })) });
  await p.disconnect();
}

function collector(): { out: Writable; text: () => string } {
  let s = '';
  const out = new Writable({ write: (chunk: Buffer, _e, cb) => ((s += chunk.toString()), cb()) });
  return { out, text: () => s };
}

/** What a terminal would act on: C0 (but the line feed) and C1 control characters, DEL. */
const CONTROLS = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F]/;

describe('argus consume against hostile and malformed records', () => {
  it('shows every field for a terminal, names JSON that is not an argus message, keeps implausible stamps out of the latency figures', async () => {
    const topic = uniqueTopic('consume-hostile');
    const t = Date.now();
    await produce(topic, [
      JSON.stringify({ type: 'detections', version: 1, source: '\u001b]0;TITLE\u0007\u001b[2J', seq: 1, stamps: { produced: t }, detections: [] }),
      'null',
      '\u001b[2J\u009b31mnot json',
      JSON.stringify({ type: 'detections', source: { toString: 1 }, seq: 2 }),
      JSON.stringify({ type: 'detections', version: 1, source: 'lobby2', seq: 4, stamps: { produced: -1e308 }, detections: [] }),
      JSON.stringify({ type: 'alert', version: 1, source: 'cam', seq: '\u001b[1A', owner: 7, stamps: { produced: t }, alert: { event: '\u001b[1A\u001b[2Kfake line' } }),
      JSON.stringify({ type: 'status', source: 'café', state: 'running\u0007' }),
      null,
    ]);
    const c = collector();
    const s = await consume({ brokers, topic, fromBeginning: true, window: 100, count: 8, json: false, out: c.out });
    const lines = c.text().trimEnd().split('\n');
    expect(c.text()).not.toMatch(CONTROLS);
    expect(lines[0]).toMatch(/^detections \\x1b\]0;TITLE\\x07\\x1b\[2J #1 p0 0 detections {2}source→consume [\d.]+ ms$/);
    expect(lines[1]).toBe('(JSON, not an argus message) null');
    expect(lines[2]).toBe('(not JSON) \\x1b[2J\\x9b31mnot json');
    expect(lines[3]).toBe('(JSON, not an argus message) {"type":"detections","source":{"toString":1},"seq":2}');
    expect(lines[4]).toBe('detections lobby2 #4 p0 0 detections  source→consume ? ms (implausible stamp: left out)');
    expect(lines[5]).toMatch(/^alert cam #\\x1b\[1A p0 \\x1b\[1A\\x1b\[2Kfake line {2}source→consume [\d.]+ ms$/);
    expect(lines[6]).toBe('status café #? p0 running\\x07');
    expect(lines[7]).toBe('(empty record: a tombstone or no value)');
    expect(lines[8]).toMatch(/^8 records: source→consume p50 [\d.]+ ms {2}p99 [\d.]+ ms; 4 not argus messages; 1 with an implausible stamp left out of the latency figures$/);
    expect(s).toMatchObject({ records: 8, notArgus: 4, implausible: 1, stale: 0, readerGone: false });
    expect(s.p99).toBeLessThan(600_000); // -1e308 made it 1e+308
  }, 120_000);

  it('shows which start a message is of, `#<run>-<seq>` with the run in short: two starts\' frame 0 read apart (both read `#0`)', async () => {
    const topic = uniqueTopic('consume-run');
    const t = Date.now();
    const det = (run: unknown, seq: number) => JSON.stringify({ type: 'detections', version: 1, source: 'lobby', ...(run === undefined ? {} : { run }), seq, stamps: { produced: t }, detections: [] });
    const status = JSON.stringify({ type: 'status', version: 1, source: 'lobby', run: 'mio3k2x1q07f3kzt', state: 'streaming', stamps: { produced: t } });
    await produce(topic, [det('mio3k2x1q07f3kzt', 0), det('mio3l9aa2b8x0d1c', 0), det(undefined, 7), det('\u001b[2Jab', 1), det(5, 2), status]);
    const c = collector();
    await consume({ brokers, topic, fromBeginning: true, window: 100, count: 6, json: false, out: c.out });
    const lines = c.text().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^detections lobby #7f3kzt-0 p0 0 detections /);
    expect(lines[1]).toMatch(/^detections lobby #8x0d1c-0 p0 0 detections /);
    expect(lines[2]).toMatch(/^detections lobby #7 p0 /); // an older release's message: no run
    expect(lines[3]).toMatch(/^detections lobby #\\x1b\[2Jab-1 p0 /); // escaped, never sent to the terminal as it is
    expect(lines[4]).toMatch(/^detections lobby #\?-2 p0 /);
    // A status message has a run and no seq (it is no frame): its start alone, not `#7f3kzt-?`, which read as a broken seq.
    expect(lines[5]).toMatch(/^status lobby #7f3kzt p0 streaming/);
    expect(c.text()).not.toMatch(CONTROLS);
  }, 120_000);

  it('an epoch that is no Kafka offset (1e308, -1, 2.5) leaves the camera’s later detections alone; --count counts records read, stale ones too', async () => {
    const topic = uniqueTopic('consume-epoch');
    const det = (seq: number, epoch: unknown, owner = 'w1') => JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq, owner, epoch, stamps: { produced: Date.now() }, detections: [] });
    await produce(topic, [
      JSON.stringify({ type: 'status', source: 'lobby', epoch: 1e308 }),
      JSON.stringify({ type: 'status', source: 'lobby', epoch: 2.5 }),
      det(1, -1),
      det(2, 4),
      det(3, 9, 'w2'),
      det(4, 4), // the former owner's, late: stale
    ]);
    const c = collector();
    // Six records, one of them stale: --count 6 ends (it read records after the stale one for ever before).
    const s = await consume({ brokers, topic, fromBeginning: true, window: 100, count: 6, json: false, out: c.out });
    const lines = c.text().trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('detections lobby #'))).toHaveLength(3);
    expect(lines[5]).toBe("stale lobby #4 from w1 (epoch 4; a newer owner's was seen): skipped");
    expect(lines.at(-1)).toMatch(/^6 records: .*; 1 stale \(a former owner's\) skipped$/);
    expect(s).toMatchObject({ records: 6, stale: 1 });
  }, 120_000);
});

describe('argus consume --json', () => {
  it('writes only JSON to stdout (one record a line, as read): a record that is not JSON is said on stderr, escaped, so `| jq` survives garbage on the topic', async () => {
    const topic = uniqueTopic('consume-json');
    const t = Date.now();
    const good = JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq: 1, stamps: { produced: t }, detections: [] });
    // Another producer's JSON pretty-printed over lines: one line too.
    const pretty = JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq: 2, stamps: { produced: t }, detections: [] }, null, 2);
    const other = JSON.stringify({ hello: 'world', n: [1, 2] }, null, 2);
    await produce(topic, [good, '\u001b[2Jnot json', null, 'null', good, pretty, other]);
    const c = collector();
    const e = collector();
    const s = await consume({ brokers, topic, fromBeginning: true, window: 100, count: 7, json: true, out: c.out, err: e.out });
    const lines = c.text().trimEnd().split('\n');
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(lines).toEqual([good, 'null', good, JSON.stringify(JSON.parse(pretty)), '{"hello":"world","n":[1,2]}']);
    expect(e.text()).toBe('(not JSON) \\x1b[2Jnot json\n');
    expect(s).toMatchObject({ records: 7, notArgus: 4 });
  });
});

describe('argus consume: the topic', () => {
  it('--config: reads its Kafka sink\'s detections topic on its brokers (the CLI, no --brokers or --topic)', async () => {
    const topic = uniqueTopic('consume-config');
    const rec = (seq: number) => JSON.stringify({ type: 'detections', version: 1, source: 'dock', seq, stamps: { produced: Date.now() }, detections: [] });
    await produce(topic, [rec(0), rec(1)]);
    const dir = mkdtempSync(join(tmpdir(), 'argus-consume-config-'));
    try {
      const yaml = join(dir, 'p.yaml');
      writeFileSync(yaml, `sources:\n  - id: dock\n    uri: /x.mp4\nsinks:\n  kafka:\n    brokers: ${JSON.stringify(brokers)}\n    topics: { detections: ${topic} }\n`);
      const r = await runCommand(process.execPath, [ARGUS, 'consume', '--config', yaml, '--from-beginning', '--count', '2'], {}, 90_000);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout.split('\n').filter((l) => l.startsWith('detections dock #'))).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a topic that does not exist: VAP_ERR_SINK_TOPIC naming it and the broker (kafkajs: "This server does not host this topic-partition")', async () => {
    const topic = uniqueTopic('consume-missing');
    const e = await consume({ brokers, topic, fromBeginning: true, window: 100, count: 1, json: false, out: collector().out }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_SINK_TOPIC')).toBe(true);
    expect((e as Error).message).toBe(`consume: the Kafka ${brokers.length === 1 ? 'broker' : 'brokers'} ${brokers.join(', ')} has no topic ${topic} (--topic)`);
  }, 120_000);
});

describe('argus consume when its reader goes away (argus consume … | head -1)', () => {
  const runAndCloseAfterFirstLine = (topic: string, after?: () => Promise<void>) =>
    runClosingAfterFirstLine(['consume', '--brokers', brokers.join(','), '--topic', topic, '--from-beginning'], after);

  it('stops quietly with status 0 while records keep coming (EPIPE crashed it with a stack trace)', async () => {
    const topic = uniqueTopic('consume-epipe');
    const rec = (seq: number) => JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq, stamps: { produced: Date.now() }, detections: [] });
    await produce(topic, Array.from({ length: 3000 }, (_, i) => rec(i)));
    const r = await runAndCloseAfterFirstLine(topic);
    expect(r.first).toMatch(/^detections lobby #0 /);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('a reader gone while the topic is quiet: stops at the next record, quietly, with status 0', async () => {
    const topic = uniqueTopic('consume-epipe-idle');
    const rec = (seq: number) => JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq, stamps: { produced: Date.now() }, detections: [] });
    await produce(topic, [rec(0)]);
    const r = await runAndCloseAfterFirstLine(topic, async () => {
      await new Promise((w) => setTimeout(w, 1000));
      await produce(topic, [rec(1), rec(2)], false);
    });
    expect(r.first).toMatch(/^detections lobby #0 /);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);
});

describe('argus consume stopped once it reads', () => {
  it('a stop after its group is joined ends the reading with the summary, no error (a stop before is VAP_ERR_INTERRUPTED: consume-stop.test.ts)', async () => {
    const topic = uniqueTopic('consume-stop-reading');
    const t = Date.now();
    await produce(topic, [0, 1].map((seq) => JSON.stringify({ type: 'detections', version: 1, source: 'lobby', seq, stamps: { produced: t }, detections: [] })));
    const ac = new AbortController();
    let s = '';
    let read!: () => void;
    const twoRead = new Promise<void>((r) => (read = r));
    const out = new Writable({
      write: (chunk: Buffer, _e, cb) => {
        s += chunk.toString();
        if (s.split('\n').length > 2) read();
        cb();
      },
    });
    const ended = consume({ brokers, topic, fromBeginning: true, window: 100, json: false, out, signal: ac.signal });
    await twoRead;
    ac.abort('SIGINT');
    const summary = await ended;
    expect(summary.records).toBe(2);
    expect(s.trimEnd().split('\n').at(-1)).toMatch(/^2 records: source→consume p50 /);
  }, 120_000);
});
