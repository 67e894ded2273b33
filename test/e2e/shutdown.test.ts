import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { readTopic, testBrokers, uniqueTopic } from '../helpers/kafka.js';

const ROOT = resolve(__dirname, '../..');
let brokers: string[];
beforeAll(async () => {
  brokers = await testBrokers();
}, 240_000);

function start(yaml: string, args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'argus-stop-'));
  const file = join(dir, 'p.yaml');
  writeFileSync(file, yaml);
  const out = join(dir, 'out.jsonl');
  const p = spawn(process.execPath, [join(ROOT, 'bin/argus.js'), 'run', file, '--jsonl', out, '--no-status', ...args], {
    cwd: ROOT,
    env: { ...process.env, ARGUS_HTTP_PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  p.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<number | null>((r) => p.on('close', (code) => r(code)));
  return { p, out, exited, stderr: () => stderr };
}

async function until<T>(f: () => T | undefined, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

describe('graceful shutdown (SIGTERM to argus run)', () => {
  it('stops sources, publishes every raised alert to Kafka, closes WebSocket clients with 1001, exits 0', async () => {
    const topic = uniqueTopic('stop');
    const yaml = `
sources:
  - id: lobby
    uri: ${PERSON_VIDEO}
    rate: native
    zones:
      - { id: all, polygon: [[0, 0], [1, 0], [1, 1], [0, 1]], classes: [person], minHoldFrames: 2 }
    rules:
      - { id: anyone, type: zone-enter, zone: all, severity: critical }
model: { warmupRuns: 1 }
sinks:
  kafka: { brokers: ["${brokers.join('","')}"], topics: { detections: ${topic}, alerts: ${topic}.alerts, status: ${topic}.status } }
server: { host: 127.0.0.1, port: 0 }
`;
    const run = start(yaml);
    const url = await until(() => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(run.stderr())?.[1], 30_000);
    const ws = new WebSocket(`${url.replace('http', 'ws')}/ws`);
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    await new Promise((r) => ws.on('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', sources: ['*'], kinds: ['alerts', 'status'] }));
    // The first person walks in at about 7 s.
    await until(() => lines(run.out).find((m) => m.type === 'alert'), 30_000);
    run.p.kill('SIGTERM');
    const code = await run.exited;
    expect(run.stderr()).not.toMatch(/argus: /);
    expect(code).toBe(0);
    expect(await closed).toBe(1001);
    const raised = lines(run.out).filter((m) => m.type === 'alert');
    expect(raised.length).toBeGreaterThan(0);
    const delivered = (await readTopic(brokers, `${topic}.alerts`, raised.length)).map((g) => JSON.parse(g.value).alert.id);
    expect(delivered).toEqual(raised.map((a) => a.alert.id));
    const status = (await readTopic(brokers, `${topic}.status`, 3)).map((g) => JSON.parse(g.value).state);
    expect(status).toEqual(['starting', 'streaming', 'stopped']);
    // Frames in flight finished: the last detections message has every stamp.
    const last = lines(run.out).filter((m) => m.type === 'detections').at(-1);
    expect(last.stamps.emitted).toBeGreaterThan(0);
  }, 90_000);

  it('a second signal forces an immediate exit (130) while the first is still flushing', async () => {
    // Kafka is unreachable, so the graceful stop spends up to 20 s trying to deliver the
    // source's status changes: the second signal cuts that short.
    const run = start(
      `sources:\n  - { id: lobby, uri: ${PERSON_VIDEO}, rate: native }\nmodel: { warmupRuns: 1 }\nsinks:\n  kafka: { brokers: ["127.0.0.1:9"], closeTimeoutMs: 20000 }\n`,
    );
    await until(() => lines(run.out).length > 3 || undefined, 30_000);
    const t0 = Date.now();
    run.p.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 1000));
    run.p.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(run.stderr()).toContain('argus: second signal, exiting at once');
  }, 60_000);
});

