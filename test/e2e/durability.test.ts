import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { MODEL_RUN_TIMEOUT_MS } from '../helpers/cli.js';
import { BROKER_TIMEOUT_MS, broker, createSmallTopic, readTopicUntil, uniqueTopic } from '../helpers/kafka.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { readOutbox } from '../../src/sinks/outbox.js';
import { testPort } from '../helpers/ports.js';

/**
 * What a crash, a `kill -9` or a hang-up does to alerts, on the real CLI with a real broker of
 * this file's own (port 19492) that the tests kill and restart.
 */
const ROOT = resolve(__dirname, '../..');
const PORT = testPort(19492);
const BROKERS = [`127.0.0.1:${PORT}`];

beforeAll(async () => {
  await broker('start', PORT, '--fresh');
}, BROKER_TIMEOUT_MS);
const children = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});
afterAll(async () => {
  await broker('stop', PORT).catch(() => undefined);
}, BROKER_TIMEOUT_MS);

function start(dir: string, yaml: string, extra: { nodeArgs?: string[]; out?: string } = {}) {
  const file = join(dir, 'p.yaml');
  writeFileSync(file, yaml);
  const out = extra.out ?? join(dir, 'out.jsonl');
  const p = spawn(process.execPath, [...(extra.nodeArgs ?? []), join(ROOT, 'bin/argus.js'), 'run', file, '--jsonl', out, '--no-status'], {
    cwd: ROOT,
    env: { ...process.env, ARGUS_HTTP_PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(p);
  let stderr = '';
  p.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
  return { p, out, exited, stderr: () => stderr };
}

/** Polls `f` until it returns a value; `ms` only bounds a hang (it is not what the test checks). */
async function until<T>(f: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).flatMap((l) => { try { return [JSON.parse(l)]; } catch { return []; } }) : []);
const alertIds = (file: string) => lines(file).filter((m) => m.type === 'alert').map((m) => m.alert.id as string);
/** Reads the alerts topic until every id in `wanted` is there (or the bound passes); returns the ids seen. */
async function deliveredIds(topic: string, wanted: Iterable<string>): Promise<Set<string>> {
  const want = [...wanted];
  const seen = new Set<string>();
  await readTopicUntil(BROKERS, `${topic}.alerts`, (got) => {
    seen.add(JSON.parse(got[got.length - 1].value).alert.id as string); // called once per message
    return want.every((id) => seen.has(id));
  }, MODEL_RUN_TIMEOUT_MS);
  return seen;
}

// An alert on every frame a person is seen (at most two per second of video): plenty of
// alerts (tracking off: with it, a conveyor-defect rule alerts once per item, a track). `rate: fast` processes every frame, so how many alerts a stretch of video raises does
// not depend on the machine's speed (at `native` a busy machine drops frames, and so alerts).
// closeTimeoutMs is only how long a stop may wait for Kafka: it returns as soon as all is delivered.
const yamlFor = (topic: string, outbox: string, extra = '') => `
name: durability
sources:
  - id: lobby
    uri: ${PERSON_VIDEO}
    rate: fast
    loop: true
    rules:
      - { id: person-seen, type: conveyor-defect, classes: [person], k: 1, n: 1, minScore: 0.3, cooldownSec: 0.5 }
model: { warmupRuns: 1 }
tracking: { enabled: false }
alerts: { snapshot: { mode: none } }
sinks:
  kafka: { brokers: ["${BROKERS[0]}"], topics: { detections: ${topic}, alerts: ${topic}.alerts, status: ${topic}.status }, closeTimeoutMs: 60000 }
outbox: { dir: ${outbox} }
${extra}`;

describe('alert durability (real broker, real CLI)', () => {
  it('kill -9 of argus during a broker outage, then a restart: every alert raised before the kill reaches Kafka', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-k9-'));
    const topic = uniqueTopic('k9');
    const outbox = join(dir, 'outbox');
    const yaml = yamlFor(topic, outbox);
    const first = start(dir, yaml, { out: join(dir, 'first.jsonl') });
    // Alerts flow to the broker first (the first person is in view after ~7 s of video).
    await until(() => alertIds(first.out).length >= 2 || undefined, MODEL_RUN_TIMEOUT_MS, 'first alerts');
    await broker('kill', PORT);
    const atKill = alertIds(first.out).length;
    // …then at least 6 more are raised while the broker is down.
    await until(() => alertIds(first.out).length >= atKill + 6 || undefined, MODEL_RUN_TIMEOUT_MS, 'alerts during the outage');
    first.p.kill('SIGKILL');
    const gone = await first.exited;
    expect(gone.signal).toBe('SIGKILL');
    const raised = alertIds(first.out);
    // The journal holds what the broker never acknowledged.
    const pending = (await readOutbox(outbox)).filter((r) => r.kind === 'alert').map((r) => r.key.slice('alert:'.length));
    expect(pending.length).toBeGreaterThanOrEqual(6);

    await broker('start', PORT);
    const second = start(dir, yaml, { out: join(dir, 'second.jsonl') });
    const wanted = new Set(raised);
    // Read until every alert raised before the kill is in Kafka (replayed by the second run).
    const got = await deliveredIds(topic, wanted);
    expect([...wanted].filter((id) => !got.has(id))).toEqual([]);
    expect(second.stderr()).toMatch(/outbox: replaying \d+ alert/);
    // Ids are unique across the restart: the second run's alerts never reuse the first run's ids.
    await until(() => alertIds(second.out).length > 0 || undefined, MODEL_RUN_TIMEOUT_MS, 'alerts of the second run');
    expect(alertIds(second.out).filter((id) => wanted.has(id))).toEqual([]);
    second.p.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    // Once acknowledged, the journal is empty.
    expect((await readOutbox(outbox)).filter((r) => r.kind === 'alert')).toEqual([]);
  }, 4 * MODEL_RUN_TIMEOUT_MS + BROKER_TIMEOUT_MS); // two runs, a broker restart and four waits, each bounded

  it('a journal with damaged records: argus starts, keeps the journal as it was beside it, and its exit says so with status 3', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-dmg-'));
    const topic = uniqueTopic('dmg');
    const outbox = join(dir, 'outbox');
    mkdirSync(outbox);
    writeFileSync(join(outbox, 'outbox.log'), '{"op":"put","key":"alert:x","damaged":true}\n');
    const run = start(dir, yamlFor(topic, outbox));
    await until(() => /damaged journal record/.test(run.stderr()) || undefined, MODEL_RUN_TIMEOUT_MS, 'the damaged journal noticed');
    run.p.kill('SIGTERM');
    expect((await run.exited).code).toBe(3);
    const kept = readdirSync(outbox).filter((f) => f.startsWith('outbox.damaged-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(outbox, kept[0]), 'utf8')).toContain('"damaged":true');
    expect(run.stderr()).toMatch(new RegExp(`argus: 1 damaged record\\(s\\) of the alert journal in .* were skipped at start .*kept as .*${kept[0]}`));
  }, 2 * MODEL_RUN_TIMEOUT_MS);

  it('alerts too large for the broker (its topic\'s max.message.bytes), parked: the exit says how many and where, with status 3 (it said nothing, status 0)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-parked-'));
    const topic = uniqueTopic('parked');
    const outbox = join(dir, 'outbox');
    // No snapshot to leave out (mode none): every alert (~1 KB) is over the topic's 200 bytes.
    await createSmallTopic(BROKERS, `${topic}.alerts`, 200);
    const run = start(dir, yamlFor(topic, outbox));
    const deadLetter = join(outbox, 'kafka-dead-letter.jsonl');
    await until(() => lines(deadLetter).length >= 2 || undefined, MODEL_RUN_TIMEOUT_MS, 'parked alerts');
    run.p.kill('SIGHUP');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(3);
    const parked = lines(deadLetter).length;
    const raised = alertIds(run.out).length;
    expect(parked).toBe(raised); // every alert raised, parked by the stop
    expect(run.stderr()).toContain(`argus: ${parked} alert(s) were too large for Kafka, even without their snapshot, and were not delivered to it: parked in the dead-letter file ${deadLetter}`);
    expect(run.stderr()).not.toMatch(/could not be delivered and are lost|kept in .* and are delivered on the next start/);
  }, 2 * MODEL_RUN_TIMEOUT_MS);

  it('alerts too large for their topic with their snapshot reach it without (snapshotOmitted), naming the URL where the server serves the picture; status 0, nothing parked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-omit-'));
    const topic = uniqueTopic('omit');
    const outbox = join(dir, 'outbox');
    // An alert is ~1 KB without its picture, tens of KB with it.
    await createSmallTopic(BROKERS, `${topic}.alerts`, 8000);
    const yaml = yamlFor(topic, outbox, 'server: { host: 127.0.0.1, port: 0 }\n').replace('alerts: { snapshot: { mode: none } }', 'alerts: { snapshot: { mode: embed } }');
    const run = start(dir, yaml);
    const url = await until(() => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(run.stderr())?.[1], MODEL_RUN_TIMEOUT_MS, 'the server');
    const got = await readTopicUntil(BROKERS, `${topic}.alerts`, (g) => g.length >= 2, MODEL_RUN_TIMEOUT_MS);
    const first = JSON.parse(got[0].value) as AlertMessage;
    expect(first.alert.snapshot).toBeUndefined();
    expect(first.alert.snapshotOmitted).toEqual({ reason: 'too-large', detail: expect.stringMatching(/MESSAGE_TOO_LARGE/), url: expect.stringMatching(new RegExp(`^/api/snapshot\\?id=${encodeURIComponent(first.alert.id).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}&key=[\\w-]{16}$`)) });
    // The server answers it: the picture the JSON lines embed.
    const res = await fetch(`${url}${first.alert.snapshotOmitted!.url}`);
    expect(res.status).toBe(200);
    const embedded = lines(run.out).find((m) => m.type === 'alert' && m.alert.id === first.alert.id);
    expect(Buffer.from(await res.arrayBuffer()).toString('base64')).toBe(embedded.alert.snapshot.data);
    run.p.kill('SIGHUP');
    expect((await run.exited).code, run.stderr()).toBe(0);
    expect(existsSync(join(outbox, 'kafka-dead-letter.jsonl'))).toBe(false);
  }, 2 * MODEL_RUN_TIMEOUT_MS);

  it.each([
    ['SIGHUP', 0],
    ['an uncaught exception', 4],
  ] as const)('%s: an orderly shutdown that delivers every raised alert to Kafka, exit status %i', async (what, status) => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-stop-'));
    const topic = uniqueTopic('stop');
    const outbox = join(dir, 'outbox');
    // A stray exception from "a library", thrown once the test creates the trigger file.
    const trigger = join(dir, 'trigger');
    const bomb = join(dir, 'bomb.mjs');
    writeFileSync(bomb, `import { existsSync } from 'node:fs';\nconst t = setInterval(() => { if (existsSync(${JSON.stringify(trigger)})) { clearInterval(t); throw new Error('boom from a library at rtsp://admin:hunter2@cam/x'); } }, 50);\nt.unref();\n`);
    const run = start(dir, yamlFor(topic, outbox), { nodeArgs: what === 'SIGHUP' ? [] : ['--import', bomb] });
    await until(() => alertIds(run.out).length >= 2 || undefined, MODEL_RUN_TIMEOUT_MS, 'first alerts');
    if (what === 'SIGHUP') run.p.kill('SIGHUP');
    else writeFileSync(trigger, '');
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(status);
    if (status === 4) {
      expect(run.stderr()).toMatch(/VAP_ERR_INTERNAL/);
      expect(run.stderr()).toContain('boom from a library');
      expect(run.stderr()).not.toContain('hunter2'); // redacted, even in a crash report
    }
    const raised = alertIds(run.out);
    expect(raised.length).toBeGreaterThanOrEqual(2);
    const delivered = await deliveredIds(topic, raised);
    expect(raised.filter((id) => !delivered.has(id))).toEqual([]);
    expect((await readOutbox(outbox)).filter((r) => r.kind === 'alert')).toEqual([]);
  }, 3 * MODEL_RUN_TIMEOUT_MS);
});
