/**
 * Chaos: runs `argus run` as a child process on N real RTSP sources (the shared person video,
 * looped, through scripts/rtsp-server.sh) with a Kafka broker of its own
 * (scripts/kafka-broker.sh), injects faults at seeded random moments, then checks invariants:
 * no alert raised is missing from Kafka, no unplanned exit, RSS and open fds flat, every frame
 * read is processed or counted as dropped. Not part of `npm test`.
 *
 *   npm run chaos -- [--minutes 10] [--sources 4] [--seed S] [--json FILE]
 *                    [--faults broker-kill,ws-flood,…] [--kafka-port 19392] [--rtsp-port 18754]
 *   npm run chaos -- --kill9-test [--sources 4] [--json FILE]
 *
 * Exit status: 0 all invariants held; 1 alerts were lost or argus exited unplanned (or, with
 * --kill9-test, an alert raised before the kill never reached Kafka); 2 the harness failed.
 * Everything it starts (broker, RTSP server and publishers, argus and its ffmpegs) is stopped
 * at the end, on Ctrl-C and on an exception. Its temp dir (YAML, argus logs, JSONL, outbox) is
 * kept for inspection unless --clean.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import WebSocket from 'ws';
import { stringify as toYaml } from 'yaml';
import { numberFlag } from './lib/flags.js';

// ------------------------------------------------------------------------- options --

const FAULT_KINDS = [
  'broker-kill',
  'broker-stall',
  'broker-restart',
  'ffmpeg-kill',
  'publisher-stop',
  'rtsp-restart',
  'ws-slow',
  'ws-flood',
  'http-malformed',
  'argus-kill',
] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

const HELP = `usage: npm run chaos -- [options]

  --minutes N        length of the chaos run, counted from argus's first start (default 10)
  --sources N        RTSP sources cam0..camN-1, all the person video (default 4)
  --seed S           PRNG seed for fault moments, kinds and parameters (default: random, printed)
  --json FILE        write the results as JSON
  --faults LIST      only these fault kinds (comma separated; default all):
                     ${FAULT_KINDS.join(',')}
  --gap A-B          seconds between fault starts, uniform in [A, B] (default 8-15)
  --kill9-test       instead of the chaos run: broker killed, >= 10 alerts raised during the
                     outage, argus killed -9, broker and argus restarted; checks that every
                     alert raised before the kill reaches Kafka within 60 s
  --kafka-port P     the harness's own broker (default 19392; never the tests' 19092)
  --rtsp-port P      the harness's own RTSP server (default 18754)
  --clean            remove the temp dir at the end (default: kept, path printed)
  -h, --help         this text

Exit status: 0 invariants held; 1 alerts lost, an unplanned argus exit (or kill9 losses); 2 harness error.`;


const argv = process.argv.slice(2);
if (argv.includes('-h') || argv.includes('--help')) {
  console.log(HELP);
  process.exit(0);
}
const known = new Set(['--minutes', '--sources', '--seed', '--json', '--faults', '--gap', '--kafka-port', '--rtsp-port']);
const flags = new Set(['--kill9-test', '--clean']);
for (let i = 0; i < argv.length; i++) {
  if (known.has(argv[i])) i++;
  else if (!flags.has(argv[i])) {
    console.error(`chaos: unknown argument ${argv[i]}\n\n${HELP}`);
    process.exit(2);
  }
}
const opt = (n: string, d: string) => (argv.includes(`--${n}`) ? argv[argv.indexOf(`--${n}`) + 1] ?? d : d);
const MINUTES = numberFlag(argv, 'minutes', 10, { min: 0.1, whole: false });
const SOURCES = numberFlag(argv, 'sources', 4, { min: 1 });
const SEED = argv.includes('--seed') ? numberFlag(argv, 'seed', 1, { max: 0xffffffff }) : randomBytes(4).readUInt32LE(0);
const JSON_OUT = opt('json', '');
const KILL9 = argv.includes('--kill9-test');
const CLEAN = argv.includes('--clean');
const KAFKA_PORT = numberFlag(argv, 'kafka-port', 19392, { min: 1, max: 65535 });
const RTSP_PORT = numberFlag(argv, 'rtsp-port', 18754, { min: 1, max: 65535 });
const [GAP_MIN, GAP_MAX] = opt('gap', '8-15').split('-').map(Number);
const KINDS = (opt('faults', FAULT_KINDS.join(',')).split(',').filter(Boolean) as FaultKind[]);
for (const k of KINDS) if (!FAULT_KINDS.includes(k)) (console.error(`chaos: unknown fault kind "${k}" (kinds: ${FAULT_KINDS.join(', ')})`), process.exit(2));
if (!(MINUTES > 0) || !(SOURCES >= 1) || !(GAP_MIN > 0 && GAP_MAX >= GAP_MIN)) (console.error(`chaos: bad --minutes, --sources or --gap\n\n${HELP}`), process.exit(2));
if (KAFKA_PORT === 19092) (console.error('chaos: 19092 is the tests\' broker; pick another --kafka-port'), process.exit(2));

// ---------------------------------------------------------------------- utilities --

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const SCRIPTS = join(ROOT, 'scripts');
const T0 = performance.now();
const now = () => performance.now() - T0;
const secs = (ms = now()) => (ms / 1000).toFixed(1).padStart(6);
const say = (s: string) => process.stdout.write(`[${secs()}s] ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const run = promisify(execFile);
const median = (xs: number[]) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round1 = (x: number) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : null);

/** mulberry32: a small, fast, seeded PRNG (uniform in [0, 1)). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(SEED);
const between = (a: number, b: number) => a + (b - a) * rnd();
const pickIndex = (n: number) => Math.min(n - 1, Math.floor(rnd() * n));

const mirror = process.env.ARGUS_MIRROR ? resolve(process.env.ARGUS_MIRROR) : resolve(ROOT, '../shared');
const VIDEO = join(mirror, 'streams/one-by-one-person-detection.mp4');

const TMP = mkdtempSync(join(tmpdir(), 'argus-chaos-'));
const OUTBOX_DIR = join(TMP, 'outbox');
const RUN_ID = `chaos-${Date.now().toString(36)}`;
const TOPICS = { detections: `${RUN_ID}.detections`, alerts: `${RUN_ID}.alerts`, status: `${RUN_ID}.status` };
const BROKERS = [`127.0.0.1:${KAFKA_PORT}`];
let cleaned = false;
const kafkaEnv = { ...process.env, KAFKA_PORT: String(KAFKA_PORT), ARGUS_KAFKA_STATE: join(TMP, 'kafka') };
const rtspEnv = { ...process.env, RTSP_PORT: String(RTSP_PORT), ARGUS_RTSP_STATE: join(TMP, 'rtsp') };

/** The scripts, for the run; once clean-up has begun they refuse (so nothing is started again behind it). */
async function broker(...a: string[]): Promise<string> {
  if (cleaned) throw new Error('interrupted: cleaning up');
  return brokerCmd(...a);
}
async function rtsp(...a: string[]): Promise<string> {
  if (cleaned) throw new Error('interrupted: cleaning up');
  return rtspCmd(...a);
}
async function brokerCmd(...a: string[]): Promise<string> {
  const { stdout } = await run('bash', [join(SCRIPTS, 'kafka-broker.sh'), ...a], { env: kafkaEnv, timeout: 240_000, maxBuffer: 16 << 20 });
  return stdout.trim();
}
async function rtspCmd(...a: string[]): Promise<string> {
  const { stdout } = await run('bash', [join(SCRIPTS, 'rtsp-server.sh'), ...a], { env: rtspEnv, timeout: 240_000, maxBuffer: 16 << 20 });
  return stdout.trim();
}
function brokerPid(): number | undefined {
  try {
    const pid = Number(readFileSync(join(TMP, 'kafka/kafka.pid'), 'utf8').trim());
    return pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
  } catch {
    return undefined;
  }
}
function publisherPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(TMP, `rtsp/publishers/${path}.pid`), 'utf8').trim());
    return pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
  } catch {
    return undefined;
  }
}
function signal(pid: number | undefined, sig: NodeJS.Signals): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}
async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}
async function httpGet(port: number, path: string, timeoutMs = 2000): Promise<number> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

// ------------------------------------------------------------------- the pipeline --

const HTTP_PORT = await freePort();
let useOutbox = true;
const YAML_PATH = join(TMP, 'pipeline.yaml');

function pipelineDoc(outbox: boolean): Record<string, unknown> {
  return {
    name: 'chaos',
    sources: Array.from({ length: SOURCES }, (_, i) => ({
      id: `cam${i}`,
      uri: `rtsp://127.0.0.1:${RTSP_PORT}/cam${i}`,
      zones: [{ id: 'table', polygon: [[0.45, 0.8], [0.72, 0.8], [0.72, 0.97], [0.45, 0.97]], classes: ['person'], minHoldFrames: 3 }],
      rules: [
        { id: 'enter', type: 'zone-enter', zone: 'table', cooldownSec: 0 },
        { id: 'exit', type: 'zone-exit', zone: 'table', cooldownSec: 0 },
      ],
    })),
    model: { manifest: 'yolox-nano', workers: 1, intraOpThreads: 2 },
    alerts: { snapshot: { mode: 'embed' } },
    sinks: {
      kafka: { brokers: BROKERS, topics: TOPICS, createTopics: true, closeTimeoutMs: 5000 },
      // one file per argus start (the harness sets the variable), so a kill -9 never clobbers one
      jsonl: { path: '${env:ARGUS_CHAOS_JSONL}' },
      websocket: { enabled: true },
    },
    server: { host: '127.0.0.1', port: HTTP_PORT },
    ...(outbox ? { outbox: { dir: OUTBOX_DIR } } : {}),
  };
}
function writeYaml(): void {
  writeFileSync(YAML_PATH, toYaml(pipelineDoc(useOutbox)));
}

/** Does the pipeline schema know `outbox` yet? (another engineer is adding it) */
async function outboxSupported(): Promise<boolean> {
  const { parseConfigText } = await import('../src/config/load.js');
  const env = { ...process.env, ARGUS_CHAOS_JSONL: join(TMP, 'probe.jsonl') };
  try {
    parseConfigText(toYaml(pipelineDoc(true)), (await import('../src/config/schema.js')).PipelineSchema, YAML_PATH, env);
    return true;
  } catch (e) {
    const msg = (e as Error).message;
    if (/outbox/.test(msg)) {
      say(`the pipeline schema rejects "outbox" (${msg.split('\n').slice(-1)[0].trim()}): running without it (outbox: false)`);
      return false;
    }
    throw e;
  }
}

// --------------------------------------------------------------- argus processes --

interface Sample { t: number; rssMb: number; fds: number; ffmpeg: number }
interface ArgusProc {
  k: number;
  pid: number;
  child: ChildProcess;
  log: string;
  jsonl: string;
  startedAt: number;
  readyAt?: number;
  exitedAt?: number;
  planned?: 'kill9' | 'sigterm' | 'outbox-retry' | 'cleanup';
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  samples: Sample[];
  exited: Promise<void>;
}
const procs: ArgusProc[] = [];
let current: ArgusProc | undefined;
let finishing = false;

function startArgus(): ArgusProc {
  if (cleaned) throw new Error('interrupted: cleaning up');
  const k = procs.length;
  const log = join(TMP, `argus-${k}.log`);
  const jsonl = join(TMP, `run-${k}.jsonl`);
  const fd = openSync(log, 'a');
  const env: NodeJS.ProcessEnv = { ...process.env, ARGUS_MIRROR: mirror, ARGUS_CHAOS_JSONL: jsonl };
  delete env.ARGUS_HTTP_PORT;
  const child = spawn(process.execPath, [join(ROOT, 'bin/argus.js'), 'run', YAML_PATH, '--no-status'], { cwd: ROOT, env, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  let done!: () => void;
  const p: ArgusProc = { k, pid: child.pid!, child, log, jsonl, startedAt: now(), samples: [], exited: new Promise((r) => (done = r)) };
  child.on('exit', (code, sig) => {
    p.exit = { code, signal: sig };
    p.exitedAt = now();
    say(`argus #${k} (pid ${p.pid}) exited: code ${code} signal ${sig}${p.planned ? ` (planned: ${p.planned})` : ' (UNPLANNED)'}`);
    done();
    if (!p.planned && !finishing && current === p) {
      // keep the run going; the exit is counted
      if (k === 0 && useOutbox && code === 2 && /VAP_ERR_CONFIG[\s\S]*outbox|outbox[\s\S]*VAP_ERR_CONFIG/.test(readText(log))) {
        p.planned = 'outbox-retry';
        say('argus rejected "outbox" in the config: restarting without it (outbox: false)');
        useOutbox = false;
        writeYaml();
      }
      setTimeout(() => {
        if (!finishing && current === p) current = startArgus();
      }, 1000);
    }
  });
  procs.push(p);
  current = p;
  say(`argus #${k} started (pid ${p.pid}), log ${log}`);
  return p;
}

/** Waits until argus answers /readyz (model loaded, every source delivered a frame), or /healthz after the timeout. */
async function waitReady(p: ArgusProc, timeoutMs = 90_000): Promise<boolean> {
  const end = now() + timeoutMs;
  while (now() < end && !p.exit) {
    if ((await httpGet(HTTP_PORT, '/readyz', 1000)) === 200) {
      p.readyAt ??= now();
      return true;
    }
    await sleep(250);
  }
  if (!p.exit && (await httpGet(HTTP_PORT, '/healthz')) === 200) {
    p.readyAt ??= now();
    return true;
  }
  return false;
}
/** The current argus, once it answers HTTP (after a restart), or undefined after the timeout. */
async function liveArgus(timeoutMs = 60_000): Promise<ArgusProc | undefined> {
  const end = now() + timeoutMs;
  while (now() < end) {
    const p = current;
    if (p && !p.exit && (await httpGet(HTTP_PORT, '/healthz', 1000)) === 200) {
      p.readyAt ??= now();
      return p;
    }
    await sleep(250);
  }
  return undefined;
}

function readText(f: string): string {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
}
function children(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      for (const c of readText(`/proc/${pid}/task/${t}/children`).split(/\s+/)) if (c) out.push(Number(c));
    }
  } catch {
    /* gone */
  }
  return out;
}
const comm = (pid: number) => readText(`/proc/${pid}/comm`).trim();

const sampler = setInterval(() => {
  const p = current;
  if (!p || p.exit) return;
  const st = readText(`/proc/${p.pid}/status`);
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(st);
  if (!m) return;
  let fds = 0;
  try {
    fds = readdirSync(`/proc/${p.pid}/fd`).length;
  } catch {
    return;
  }
  p.samples.push({ t: now(), rssMb: Number(m[1]) / 1024, fds, ffmpeg: children(p.pid).filter((c) => comm(c) === 'ffmpeg').length });
}, 5000);

// -------------------------------------------------------------------- WebSocket --

const wsClients = new Set<WebSocket>();
/** closedByServer: the close code seen before the harness let go (1006: the server dropped the TCP connection without a close frame). */
interface SlowOutcome { heldMs: number; closedByServer: number | null; messagesAfterResume: number; droppedNotices: number; error?: string }
const slowOutcomes: Promise<SlowOutcome>[] = [];

function openWs(): Promise<WebSocket> {
  return new Promise((res, rej) => {
    const ws = new WebSocket(`ws://127.0.0.1:${HTTP_PORT}/ws`);
    wsClients.add(ws);
    ws.once('close', () => wsClients.delete(ws));
    const t = setTimeout(() => (ws.terminate(), rej(new Error('no open within 5 s'))), 5000);
    ws.once('open', () => (clearTimeout(t), res(ws)));
    ws.once('error', (e) => (clearTimeout(t), rej(e)));
  });
}

/**
 * The harness's own well-behaved client: subscribed to alerts, reconnecting whenever argus
 * restarts. Every alert id it sees was raised (one more witness next to the JSONL files and the
 * outbox journal).
 */
const observed = new Map<string, number>();
const observer = { stop: false, connects: 0, messages: 0 };
async function observe(): Promise<void> {
  while (!observer.stop) {
    try {
      const ws = await openWs();
      observer.connects++;
      ws.send(JSON.stringify({ type: 'subscribe', sources: ['*'], kinds: ['alerts'] }));
      ws.on('message', (data) => {
        const s = String(data);
        if (!s.includes('"type":"alert"')) return;
        observer.messages++;
        let id: string | undefined;
        try {
          id = (JSON.parse(s) as { alert?: { id?: string } }).alert?.id;
        } catch {
          id = /"alert":\{"id":"([^"]+)"/.exec(s)?.[1];
        }
        if (id) observed.set(id, (observed.get(id) ?? 0) + 1);
      });
      ws.on('error', () => undefined);
      await new Promise((r) => ws.once('close', r));
    } catch {
      /* argus not up (yet): retry */
    }
    if (!observer.stop) await sleep(300);
  }
}

/** A client that subscribes to everything and never reads (its socket paused) for holdMs. */
async function slowClient(holdMs: number): Promise<string> {
  const ws = await openWs();
  ws.send(JSON.stringify({ type: 'subscribe', sources: ['*'], kinds: ['detections', 'alerts', 'frames'] }));
  const sock = (ws as unknown as { _socket: Socket })._socket;
  sock.pause();
  let closeCode: number | null = null;
  let after = 0;
  let dropped = 0;
  let resumed = false;
  let ours = false;
  ws.on('message', (data) => {
    if (!resumed) return;
    after++;
    if (String(data).startsWith('{"type":"dropped"')) dropped++;
  });
  ws.on('close', (code) => {
    if (!ours) closeCode = code;
  });
  ws.on('error', () => undefined);
  slowOutcomes.push(
    (async () => {
      await sleep(holdMs);
      resumed = true;
      sock.resume();
      await sleep(2000);
      ours = true;
      ws.terminate();
      return { heldMs: Math.round(holdMs), closedByServer: closeCode, messagesAfterResume: after, droppedNotices: dropped };
    })().catch((e: Error) => ({ heldMs: Math.round(holdMs), closedByServer: closeCode, messagesAfterResume: after, droppedNotices: dropped, error: e.message })),
  );
  return `slow client connected, subscribed to * (detections, alerts, frames), socket paused for ${(holdMs / 1000).toFixed(1)} s`;
}

interface FloodOutcome { sent: number; received: number; pongs: number; errors: Record<string, number>; closeCode: number | null }
const floodOutcomes: FloodOutcome[] = [];
/** 2000 messages as fast as the socket takes them: pings, garbage, unknown types, oversized, binary. */
async function floodClient(): Promise<string> {
  const ws = await openWs();
  const o: FloodOutcome = { sent: 0, received: 0, pongs: 0, errors: {}, closeCode: null };
  ws.on('message', (data) => {
    o.received++;
    const s = String(data);
    if (s.startsWith('{"type":"pong"')) o.pongs++;
    const m = /"type":"error","code":"([a-z_]+)"/.exec(s);
    if (m) o.errors[m[1]] = (o.errors[m[1]] ?? 0) + 1;
  });
  ws.on('close', (code) => (o.closeCode = code));
  ws.on('error', () => undefined);
  const big = 'x'.repeat(5000);
  const payloads: (string | Buffer)[] = [
    '{"type":"ping"}',
    '{not json',
    '{"type":"subscribe","sources":"cam0"}',
    '{"type":"subscribe","sources":["nope"],"kinds":["bogus"]}',
    '{"type":"warp-drive"}',
    `{"type":"ping","pad":"${big}"}`,
    '[]',
    'null',
    Buffer.from([0, 255, 1, 254, 2, 253]),
    '{"type":"subscribe","sources":["*"],"kinds":["detections"]}',
    '{"type":"unsubscribe"}',
  ];
  for (let i = 0; i < 2000 && ws.readyState === WebSocket.OPEN; i++) {
    ws.send(payloads[i % payloads.length]);
    o.sent++;
    if (i % 200 === 199) await new Promise((r) => setImmediate(r));
  }
  await sleep(2000);
  ws.terminate();
  floodOutcomes.push(o);
  return `flood: sent ${o.sent}, got ${o.received} back (${o.pongs} pongs, errors ${JSON.stringify(o.errors)}), close ${o.closeCode ?? 'none'}`;
}

// ------------------------------------------------------------------ raw HTTP abuse --

interface HttpOutcome { requests: number; statuses: Record<string, number>; healthAfter: number }
const httpOutcomes: HttpOutcome[] = [];
async function malformedHttp(): Promise<string> {
  const many = Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${i}\r\n`).join('');
  const payloads: (string | Buffer)[] = [
    'GET //x:99999 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`,
    `GET /healthz HTTP/1.1\r\nHost: x\r\n${many}\r\n`,
    'BREW /pot HTCPCP/1.0\r\n\r\n',
    'FOO / HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
    randomBytes(4096),
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: bad\r\nSec-WebSocket-Version: 99\r\n\r\n',
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\nabc',
    'GET /api/sources HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nzzz\r\n',
    'GET /%%%%/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET /\x00\x01 HTTP/1.1\r\nHost: x\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\n', // never finished (slowloris), dropped after 3 s
    'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(50), // pipelined
    '\r\n\r\n\r\n',
  ];
  const o: HttpOutcome = { requests: 0, statuses: {}, healthAfter: 0 };
  const one = (payload: string | Buffer) =>
    new Promise<void>((res) => {
      const s = new Socket();
      let first = '';
      const finish = () => {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(first);
        const k = m ? m[1] : first ? 'non-http' : 'no-response';
        o.statuses[k] = (o.statuses[k] ?? 0) + 1;
        s.destroy();
        res();
      };
      const t = setTimeout(finish, 3000);
      s.on('data', (d) => {
        if (!first) first = d.toString('latin1', 0, Math.min(d.length, 64));
      });
      s.on('close', () => (clearTimeout(t), finish()));
      s.on('error', () => undefined);
      s.connect(HTTP_PORT, '127.0.0.1', () => s.write(payload));
      o.requests++;
    });
  const all: Promise<void>[] = [];
  for (let burst = 0; burst < 3; burst++) for (const p of payloads) all.push(one(p));
  await Promise.all(all);
  o.healthAfter = await httpGet(HTTP_PORT, '/healthz', 3000);
  httpOutcomes.push(o);
  return `${o.requests} malformed requests: ${JSON.stringify(o.statuses)}; /healthz afterwards ${o.healthAfter}`;
}

// -------------------------------------------------------------------------- faults --

interface FaultPlan { at: number; kind: FaultKind; ms: number; pick: number }
interface FaultRecord { n: number; kind: FaultKind; atS: number; durS: number; detail: string; error?: string }
const faults: FaultRecord[] = [];
const paused = { broker: undefined as number | undefined, publishers: new Set<string>() };
const orphans: { k: number; pids: number[] }[] = [];

function plan(totalMs: number): FaultPlan[] {
  const out: FaultPlan[] = [];
  let t = 15_000;
  const tail = 20_000;
  while (t < totalMs - tail) {
    const kind = KINDS[pickIndex(KINDS.length)];
    const ms =
      kind === 'broker-kill' ? between(3000, 15000)
      : kind === 'broker-stall' ? between(2000, 10000)
      : kind === 'publisher-stop' ? between(2000, 8000)
      : kind === 'ws-slow' ? between(15000, 45000)
      : 0;
    out.push({ at: t, kind, ms, pick: rnd() });
    t += between(GAP_MIN * 1000, GAP_MAX * 1000);
  }
  return out;
}

async function killArgus9(p: ArgusProc): Promise<void> {
  p.planned = 'kill9';
  signal(p.pid, 'SIGKILL');
  await p.exited;
  await sleep(1500);
  // ffmpegs left behind by the dead process (same process group: spawned detached)
  const left = listGroup(p.pid);
  if (left.length) {
    orphans.push({ k: p.k, pids: left });
    say(`  argus #${p.k} left ${left.length} process(es) behind after kill -9: ${left.join(' ')} (killed now)`);
    for (const x of left) signal(x, 'SIGKILL');
  }
}
function listGroup(pgid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = readText(`/proc/${d}/stat`);
    const rest = st.slice(st.lastIndexOf(')') + 2).split(' ');
    if (Number(rest[2]) === pgid && rest[0] !== 'Z') out.push(Number(d));
  }
  return out;
}

async function inject(f: FaultPlan): Promise<string> {
  const cam = `cam${Math.min(SOURCES - 1, Math.floor(f.pick * SOURCES))}`;
  switch (f.kind) {
    case 'broker-kill': {
      const pid = brokerPid();
      await broker('kill');
      await sleep(f.ms);
      const t = now();
      await broker('start');
      return `kill -9 broker (pid ${pid}), down ${(f.ms / 1000).toFixed(1)} s, restart took ${((now() - t) / 1000).toFixed(1)} s`;
    }
    case 'broker-stall': {
      const pid = brokerPid();
      if (!pid) return 'broker not running: skipped';
      paused.broker = pid;
      signal(pid, 'SIGSTOP');
      await sleep(f.ms);
      signal(pid, 'SIGCONT');
      paused.broker = undefined;
      return `SIGSTOP broker (pid ${pid}) for ${(f.ms / 1000).toFixed(1)} s, then SIGCONT`;
    }
    case 'broker-restart': {
      const t = now();
      await broker('stop', '--keep');
      const t2 = now();
      await broker('start');
      return `graceful broker restart: stop ${((t2 - t) / 1000).toFixed(1)} s, start ${((now() - t2) / 1000).toFixed(1)} s`;
    }
    case 'ffmpeg-kill': {
      const p = await liveArgus();
      if (!p) return 'argus not up: skipped';
      const { stdout } = await run('pgrep', ['-P', String(p.pid), 'ffmpeg']).catch(() => ({ stdout: '' }));
      const pids = stdout.split(/\s+/).filter(Boolean).map(Number);
      if (!pids.length) return 'no ffmpeg child: skipped';
      const victim = pids[Math.min(pids.length - 1, Math.floor(f.pick * pids.length))];
      const url = /rtsp:\/\/\S+/.exec(readText(`/proc/${victim}/cmdline`).replace(/\0/g, ' '))?.[0] ?? '?';
      signal(victim, 'SIGKILL');
      return `kill -9 ffmpeg pid ${victim} (${url}) of argus #${p.k}, ${pids.length} ffmpeg children`;
    }
    case 'publisher-stop': {
      const pid = publisherPid(cam);
      await rtsp('pause-publisher', cam);
      paused.publishers.add(cam);
      await sleep(f.ms);
      await rtsp('resume-publisher', cam);
      paused.publishers.delete(cam);
      return `SIGSTOP the RTSP publisher of ${cam} (pid ${pid}) for ${(f.ms / 1000).toFixed(1)} s, then SIGCONT`;
    }
    case 'rtsp-restart': {
      const t = now();
      await rtsp('kill');
      await rtsp('start', '--republish');
      return `RTSP server kill -9 + start --republish, ${((now() - t) / 1000).toFixed(1)} s`;
    }
    case 'ws-slow':
      if (!(await liveArgus())) return 'argus not up: skipped';
      return slowClient(Math.max(2000, Math.min(f.ms, chaosEndAt - now() - 5000)));
    case 'ws-flood':
      if (!(await liveArgus())) return 'argus not up: skipped';
      return floodClient();
    case 'http-malformed':
      if (!(await liveArgus())) return 'argus not up: skipped';
      return malformedHttp();
    case 'argus-kill': {
      const p = await liveArgus();
      if (!p) return 'argus not up: skipped';
      const t = now();
      await killArgus9(p);
      const q = startArgus();
      const up = await liveArgus(90_000);
      return `kill -9 argus #${p.k} (pid ${p.pid}), restarted as #${q.k} (pid ${q.pid}), answering HTTP after ${up ? ((now() - t) / 1000).toFixed(1) + ' s' : 'NO (90 s)'}`;
    }
  }
}

let chaosEndAt = Infinity;
async function faultLoop(plans: FaultPlan[], base: number, endAt: number): Promise<void> {
  chaosEndAt = endAt;
  let prevEnd = 0;
  for (const f of plans) {
    const at = Math.max(base + f.at, prevEnd + 500);
    if (at > endAt - 15_000 || finishing) break;
    if (at > now()) await sleep(at - now());
    if (finishing) break;
    const n = faults.length + 1;
    const start = now();
    say(`fault #${n} ${f.kind} ...`);
    const rec: FaultRecord = { n, kind: f.kind, atS: round1(start / 1000)!, durS: 0, detail: '' };
    faults.push(rec);
    try {
      rec.detail = await inject(f);
    } catch (e) {
      rec.error = (e as Error).message.split('\n').slice(0, 6).join(' | ');
    }
    rec.durS = round1((now() - start) / 1000)!;
    say(`fault #${n} ${f.kind}: ${rec.error ? `FAILED: ${rec.error}` : rec.detail}`);
    prevEnd = now();
  }
}

/** Undo whatever a fault may have left: broker up and resumed, publishers resumed. */
async function restore(): Promise<void> {
  if (paused.broker) signal(paused.broker, 'SIGCONT');
  paused.broker = undefined;
  for (const p of paused.publishers) signal(publisherPid(p), 'SIGCONT');
  paused.publishers.clear();
  await broker('start');
  await rtsp('start', '--republish');
}

// ---------------------------------------------------------------------- checking --

/** Alert ids in a JSONL file (lines of type alert), tolerating a torn last line. */
function jsonlAlertIds(file: string): string[] {
  const ids: string[] = [];
  for (const line of readText(file).split('\n')) {
    if (!line.includes('"type":"alert"')) continue;
    try {
      const id = (JSON.parse(line) as { alert?: { id?: string } }).alert?.id;
      if (id) ids.push(id);
    } catch {
      const m = /"alert":\{"id":"([^"]+)"/.exec(line);
      if (m) ids.push(m[1]);
    }
  }
  return ids;
}

/**
 * Alert ids still in the outbox folder. The journal (src/sinks/outbox.ts) is one record a line,
 * `<8 hex> {"op":"put"|"ack","key":"alert:<id>",…}`: an id put and not acked is pending. Any
 * other file there (dead letters, …) is scanned for ids of the form source:rule:… (escaped or
 * not), and those count as pending too.
 */
function scanOutbox(): { files: { path: string; bytes: number; ids: number; puts?: number; acks?: number }[]; ids: Set<string> } {
  const ids = new Set<string>();
  const files: { path: string; bytes: number; ids: number; puts?: number; acks?: number }[] = [];
  const walk = (d: string) => {
    let entries: string[] = [];
    try {
      entries = readdirSync(d);
    } catch {
      return;
    }
    for (const e of entries) {
      const f = join(d, e);
      const st = statSync(f, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(f);
      else if (st.isFile() && st.size < 512 << 20) {
        const text = readText(f);
        const pending = new Set<string>();
        let puts = 0;
        let acks = 0;
        let journal = false;
        for (const l of text.split('\n')) {
          const m = /^[0-9a-f]{8} (\{.*\})$/.exec(l);
          if (!m) continue;
          try {
            const r = JSON.parse(m[1]) as { op?: string; key?: string };
            if (typeof r.key !== 'string' || !r.key.startsWith('alert:')) continue;
            journal = true;
            if (r.op === 'put') (puts++, pending.add(r.key.slice(6)));
            else if (r.op === 'ack') (acks++, pending.delete(r.key.slice(6)));
          } catch {
            /* torn or damaged line */
          }
        }
        if (!journal) for (const m of text.matchAll(/\\?"id\\?"\s*:\s*\\?"([A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[^"\\\s]+)\\?"/g)) pending.add(m[1]);
        for (const id of pending) ids.add(id);
        files.push({ path: f.slice(TMP.length + 1), bytes: st.size, ids: pending.size, ...(journal ? { puts, acks } : {}) });
      }
    }
  };
  walk(OUTBOX_DIR);
  return { files, ids };
}

/** A `… summary` line (kafka, outbox) from an argus log, the last one. */
function summaryLine(p: ArgusProc, msg: string): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const line of readText(p.log).split('\n')) {
    if (!line.includes(`"msg":"${msg}"`)) continue;
    try {
      const { level: _l, time: _t, msg: _m, ...rest } = JSON.parse(line) as Record<string, unknown>;
      out = rest;
    } catch {
      /* not JSON */
    }
  }
  return out;
}

/** Every message of a topic from the beginning, up to the high watermarks read at the start. */
async function readTopic(topic: string, timeoutMs = 90_000): Promise<{ ids: string[]; messages: number; complete: boolean }> {
  const kafka = new Kafka({ clientId: 'argus-chaos', brokers: BROKERS, logLevel: logLevel.NOTHING, retry: { retries: 8 } });
  const admin = kafka.admin();
  await admin.connect();
  let offsets: { partition: number; high: string; low: string }[];
  try {
    offsets = await admin.fetchTopicOffsets(topic);
  } catch (e) {
    await admin.disconnect();
    if (/does not host this topic-partition|UNKNOWN_TOPIC/i.test((e as Error).message)) return { ids: [], messages: 0, complete: true };
    throw e;
  }
  await admin.disconnect();
  const want = new Map(offsets.filter((o) => Number(o.high) > Number(o.low)).map((o) => [o.partition, Number(o.high)]));
  if (want.size === 0) return { ids: [], messages: 0, complete: true };
  const consumer = kafka.consumer({ groupId: `chaos-check-${Date.now()}-${Math.random()}`, maxBytesPerPartition: 16 << 20, maxBytes: 64 << 20 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const ids: string[] = [];
  let messages = 0;
  const done = new Set<number>();
  await new Promise<void>((res) => {
    const t = setTimeout(res, timeoutMs);
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        const high = want.get(partition);
        if (high === undefined || Number(message.offset) >= high) return;
        messages++;
        const v = message.value?.toString() ?? '';
        try {
          const id = (JSON.parse(v) as { alert?: { id?: string } }).alert?.id;
          if (id) ids.push(id);
        } catch {
          const m = /"alert":\{"id":"([^"]+)"/.exec(v);
          if (m) ids.push(m[1]);
        }
        if (Number(message.offset) + 1 >= high) done.add(partition);
        if (done.size === want.size) {
          clearTimeout(t);
          res();
        }
      },
    });
  });
  await consumer.disconnect();
  return { ids, messages, complete: done.size === want.size };
}

interface SourceSummary { source: string; framesIn: number; framesOut: number; dropped: number; reconnects?: number; state?: string }
function sourceSummaries(p: ArgusProc): SourceSummary[] {
  const out: SourceSummary[] = [];
  for (const line of readText(p.log).split('\n')) {
    if (!line.includes('"source summary"')) continue;
    try {
      out.push(JSON.parse(line) as SourceSummary);
    } catch {
      /* not JSON */
    }
  }
  return out;
}
function logLevels(p: ArgusProc): { warn: number; error: number; fatal: number; firstError?: string } {
  const r = { warn: 0, error: 0, fatal: 0 } as { warn: number; error: number; fatal: number; firstError?: string };
  for (const line of readText(p.log).split('\n')) {
    const m = /^\{"level":(\d+)/.exec(line);
    if (!m) continue;
    const lv = Number(m[1]);
    if (lv === 40) r.warn++;
    else if (lv === 50) r.error++;
    else if (lv >= 60) r.fatal++;
    if (lv >= 50 && !r.firstError) r.firstError = /"msg":"([^"]{0,200})/.exec(line)?.[1];
  }
  return r;
}

/** RSS/fd of one process: median of its first full minute after 30 s of warm-up, and of its last minute. */
function windows(p: ArgusProc) {
  const warm = (p.readyAt ?? p.startedAt) + 30_000;
  const s = p.samples.filter((x) => x.t >= warm);
  const startW = s.filter((x) => x.t < warm + 60_000);
  const lastT = s.at(-1)?.t ?? warm;
  const endW = s.filter((x) => x.t >= lastT - 60_000);
  return {
    k: p.k,
    pid: p.pid,
    lifeS: round1(((p.exitedAt ?? now()) - p.startedAt) / 1000),
    settledS: round1(Math.max(0, lastT - warm) / 1000),
    samples: p.samples.length,
    rssStartMb: round1(median(startW.map((x) => x.rssMb))),
    rssEndMb: round1(median(endW.map((x) => x.rssMb))),
    rssMaxMb: round1(Math.max(...p.samples.map((x) => x.rssMb))),
    fdsStart: round1(median(startW.map((x) => x.fds))),
    fdsEnd: round1(median(endW.map((x) => x.fds))),
    fdsMax: p.samples.length ? Math.max(...p.samples.map((x) => x.fds)) : null,
    ffmpegEnd: s.at(-1)?.ffmpeg ?? null,
  };
}

// ------------------------------------------------------------------------ cleanup --

let cleaning: Promise<void> | undefined;
/** Stops everything the harness started; every caller waits for the same clean-up. */
function cleanup(): Promise<void> {
  cleaning ??= doCleanup();
  return cleaning;
}
async function doCleanup(): Promise<void> {
  cleaned = true;
  finishing = true;
  clearInterval(sampler);
  for (const ws of wsClients) ws.terminate();
  if (paused.broker) signal(paused.broker, 'SIGCONT');
  for (const p of paused.publishers) signal(publisherPid(p), 'SIGCONT');
  for (const p of procs) {
    if (!p.exit) {
      p.planned ??= 'cleanup';
      signal(p.pid, 'SIGKILL');
    }
    try {
      process.kill(-p.pid, 'SIGKILL'); // its ffmpegs, if any are left
    } catch {
      /* none */
    }
  }
  const bp = brokerPid();
  if (bp) signal(bp, 'SIGCONT');
  await rtspCmd('stop').catch((e: Error) => say(`rtsp-server.sh stop failed: ${e.message}`));
  await brokerCmd('stop').catch((e: Error) => say(`kafka-broker.sh stop failed: ${e.message}`));
  if (CLEAN) rmSync(TMP, { recursive: true, force: true });
}
function cleanupSync(): void {
  if (cleaned) return;
  cleaned = true;
  for (const p of procs) {
    try {
      process.kill(-p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const bp = brokerPid();
  if (bp) signal(bp, 'SIGCONT');
  for (const [script, env, cmd] of [['rtsp-server.sh', rtspEnv, 'stop'], ['kafka-broker.sh', kafkaEnv, 'stop']] as const) {
    try {
      execFileSync('bash', [join(SCRIPTS, script), cmd], { env, stdio: 'ignore', timeout: 60_000 });
    } catch {
      /* best effort */
    }
  }
}
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    say(`${sig}: cleaning up (broker, RTSP server, argus) ...`);
    void cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', cleanupSync);

// ------------------------------------------------------------------------- set-up --

async function setUp(): Promise<void> {
  if (!existsSync(VIDEO)) throw new Error(`${VIDEO} not found (set ARGUS_MIRROR to a folder with streams/one-by-one-person-detection.mp4)`);
  say(`chaos ${KILL9 ? '--kill9-test' : `${MINUTES} min`}, ${SOURCES} sources, seed ${SEED}, temp dir ${TMP}`);
  mkdirSync(OUTBOX_DIR, { recursive: true });
  useOutbox = await outboxSupported();
  writeYaml();
  say(`pipeline ${YAML_PATH} (outbox: ${useOutbox}), HTTP/WebSocket on 127.0.0.1:${HTTP_PORT}, topics ${TOPICS.alerts}`);
  const [b, r] = await Promise.all([broker('start', '--fresh'), rtsp('start')]);
  say(`${b}; ${r}`);
  await Promise.all(Array.from({ length: SOURCES }, (_, i) => rtsp('publish', `cam${i}`, VIDEO, '--loop')));
  say(`${SOURCES} publishers on rtsp://127.0.0.1:${RTSP_PORT}/cam0..cam${SOURCES - 1}`);
}

// ---------------------------------------------------------------------- chaos run --

async function chaosRun(): Promise<number> {
  const totalMs = MINUTES * 60_000;
  const plans = plan(totalMs);
  say(`${plans.length} faults planned (gap ${GAP_MIN}-${GAP_MAX} s): ${Object.entries(plans.reduce<Record<string, number>>((a, f) => ((a[f.kind] = (a[f.kind] ?? 0) + 1), a), {})).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  const first = startArgus();
  const observing = observe();
  if (!(await waitReady(first))) {
    // a config rejection of outbox restarts it without; anything else is a harness failure
    const again = await liveArgus(90_000);
    if (!again) throw new Error(`argus did not come up; see ${first.log}:\n${readText(first.log).slice(-2000)}`);
  }
  const base = now();
  const endAt = base + totalMs;
  say(`argus ready; chaos for ${MINUTES} min`);
  await faultLoop(plans, base, endAt);
  say('faults over: restoring the broker and the RTSP publishers');
  await restore();
  await Promise.all(slowOutcomes);
  if (endAt > now()) await sleep(endAt - now());
  finishing = true;
  const last = current;
  if (last && !last.exit) {
    say(`SIGTERM argus #${last.k} (planned stop)`);
    last.planned = 'sigterm';
    signal(last.pid, 'SIGTERM');
    const t = setTimeout(() => {
      say(`argus #${last.k} still running 60 s after SIGTERM: SIGKILL (counted unplanned)`);
      last.planned = undefined;
      signal(last.pid, 'SIGKILL');
    }, 60_000);
    await last.exited;
    clearTimeout(t);
  }
  clearInterval(sampler);
  observer.stop = true;
  for (const ws of wsClients) ws.terminate();
  await observing;
  await broker('start'); // (it is up: restore() saw to it)
  say('reading the alerts topic from the beginning ...');
  const topic = await readTopic(TOPICS.alerts);

  // alerts
  const perRun = procs.map((p) => ({ k: p.k, ids: jsonlAlertIds(p.jsonl) }));
  const raised = new Set<string>();
  const runsOf = new Map<string, number[]>();
  for (const r of perRun) {
    for (const id of r.ids) {
      raised.add(id);
      const ks = runsOf.get(id) ?? [];
      if (!ks.includes(r.k)) ks.push(r.k);
      runsOf.set(id, ks);
    }
  }
  const inJsonl = raised.size;
  const observedOnly = [...observed.keys()].filter((id) => !raised.has(id));
  for (const id of observed.keys()) raised.add(id);
  const outbox = scanOutbox();
  const outboxOnly = [...outbox.ids].filter((id) => !raised.has(id));
  for (const id of outbox.ids) raised.add(id);
  const delivered = new Set(topic.ids);
  const lost = [...raised].filter((id) => !delivered.has(id));
  const lostByRun: Record<string, { lost: number; raised: number; endedBy: string }> = {};
  for (const r of perRun) {
    const p = procs[r.k];
    lostByRun[`run-${r.k}`] = { raised: new Set(r.ids).size, lost: new Set(r.ids.filter((id) => !delivered.has(id))).size, endedBy: p.planned ?? `unplanned(code ${p.exit?.code}, signal ${p.exit?.signal})` };
  }
  const collisions = [...runsOf.values()].filter((ks) => ks.length > 1).length;

  // exits
  const exitsAll = procs.map((p) => ({ k: p.k, pid: p.pid, code: p.exit?.code ?? null, signal: p.exit?.signal ?? null, planned: p.planned ?? null, atS: round1((p.exitedAt ?? now()) / 1000), uptimeS: round1(((p.exitedAt ?? now()) - p.startedAt) / 1000) }));
  const unplanned = exitsAll.filter((e) => e.planned === null).length;

  // RSS and fds: the last process if it had 30 s warm-up plus two minutes, else the longest-lived one
  const per = procs.map(windows);
  const lastW = per.at(-1)!;
  const basisW = (lastW.settledS ?? 0) >= 120 ? lastW : [...per].sort((a, b) => (b.settledS ?? 0) - (a.settledS ?? 0))[0];

  // frames: the final process's source summaries
  const frames: Record<string, unknown> = {};
  let framesOk = true;
  const sums = sourceSummaries(procs.at(-1)!);
  for (const s of sums) {
    const diff = s.framesIn - s.framesOut - s.dropped;
    const ok = Math.abs(diff) <= 2;
    framesOk &&= ok;
    frames[s.source] = { framesIn: s.framesIn, framesOut: s.framesOut, dropped: s.dropped, diff, ok, reconnects: s.reconnects, state: s.state };
  }
  if (sums.length < SOURCES) framesOk = false;

  const byKind: Record<string, number> = {};
  for (const f of faults) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
  const slow = await Promise.all(slowOutcomes);
  const result = {
    mode: 'chaos',
    minutes: MINUTES,
    sources: SOURCES,
    seed: SEED,
    outbox: useOutbox,
    tmp: TMP,
    alerts: {
      raised: raised.size,
      delivered: [...raised].filter((id) => delivered.has(id)).length,
      lost: lost.length,
      duplicates: topic.messages - delivered.size,
      messagesInTopic: topic.messages,
      distinctInTopic: delivered.size,
      topicReadComplete: topic.complete,
      deliveredNotRaised: [...delivered].filter((id) => !raised.has(id)).length,
      raisedInJsonl: inJsonl,
      seenByWsObserver: observed.size,
      onlyByWsObserver: observedOnly.length,
      pendingInOutbox: outbox.ids.size,
      onlyInOutbox: outboxOnly.length,
      wsObserver: { ...observer, duplicates: [...observed.values()].reduce((n, c) => n + c - 1, 0) },
      idCollisionsAcrossRuns: collisions,
      lostByRun,
      lostIds: lost.slice(0, 100),
    },
    outboxScan: { dir: OUTBOX_DIR, files: outbox.files, distinctIds: outbox.ids.size },
    summaries: procs.map((p) => ({ k: p.k, kafka: summaryLine(p, 'kafka summary'), outbox: summaryLine(p, 'outbox summary') })),
    faults: { injected: faults.length, failed: faults.filter((f) => f.error).length, byKind, log: faults },
    exits: { unplanned, all: exitsAll },
    rss: { startMb: basisW.rssStartMb, endMb: basisW.rssEndMb, basis: `argus #${basisW.k}${basisW === lastW ? ' (last process)' : ' (longest-lived: the last one lived too briefly)'}`, perProcess: per },
    fds: { start: basisW.fdsStart, end: basisW.fdsEnd },
    frames: { ok: framesOk, tolerance: 2, fromProcess: procs.length - 1, perSource: frames },
    orphansAfterKill9: orphans,
    websocket: { slowClients: slow, floods: floodOutcomes },
    http: httpOutcomes,
    logs: procs.map((p) => ({ k: p.k, file: p.log, ...logLevels(p) })),
  };
  if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(result, null, 2) + '\n');

  console.log('\n---- chaos summary ----');
  console.log(`seed ${SEED}, ${MINUTES} min, ${SOURCES} sources, outbox: ${useOutbox}`);
  console.log(`faults: ${faults.length} injected (${faults.filter((f) => f.error).length} failed to inject): ${Object.entries(byKind).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`alerts: ${result.alerts.raised} raised, ${result.alerts.delivered} delivered, ${result.alerts.lost} LOST, ${result.alerts.duplicates} duplicate messages (${topic.messages} in topic${topic.complete ? '' : ', read INCOMPLETE'})`);
  console.log(`  raised = ${inJsonl} in run-*.jsonl ∪ ${observed.size} seen by the WebSocket observer (+${observedOnly.length}) ∪ ${outbox.ids.size} pending in the outbox (+${outboxOnly.length})`);
  for (const [run, v] of Object.entries(lostByRun)) if (v.lost) console.log(`  ${run}: ${v.lost} of ${v.raised} lost (ended by ${v.endedBy})`);
  console.log(`exits: ${exitsAll.length} argus processes, ${unplanned} unplanned; ${exitsAll.map((e) => `#${e.k} ${e.signal ?? e.code}${e.planned ? '' : '!'}`).join(' ')}`);
  console.log(`rss: ${result.rss.startMb} → ${result.rss.endMb} MB (${result.rss.basis}); fds ${result.fds.start} → ${result.fds.end}`);
  console.log(`frames: ${framesOk ? 'in = out + dropped (±2) on every source' : 'MISMATCH or missing summaries'}: ${Object.entries(frames).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join('; ')}`);
  if (orphans.length) console.log(`orphans: ${orphans.reduce((n, o) => n + o.pids.length, 0)} processes left behind by killed argus processes`);
  console.log(`logs and files: ${TMP}${JSON_OUT ? `; JSON: ${JSON_OUT}` : ''}`);
  return lost.length > 0 || unplanned > 0 ? 1 : 0;
}

// ------------------------------------------------------------------- kill -9 test --

async function kill9Test(): Promise<number> {
  const a = startArgus();
  const observing = observe();
  if (!(await waitReady(a)) && !(await liveArgus(90_000))) throw new Error(`argus did not come up; see ${a.log}`);
  const p0 = current!;
  // raised so far: the JSONL ∪ what the WebSocket observer saw ∪ what the outbox journal holds
  const raisedNow = () => new Set([...jsonlAlertIds(p0.jsonl), ...observed.keys(), ...scanOutbox().ids]);
  say('argus ready; waiting for alerts to flow (>= 3 raised, then 5 s)');
  const flowEnd = now() + 180_000;
  while (raisedNow().size < 3 && now() < flowEnd && !p0.exit) await sleep(1000);
  await sleep(5000);
  const beforeIds = raisedNow();
  const before = beforeIds.size;
  say(`${before} alerts so far; kill -9 the broker`);
  await broker('kill');
  const outageEnd = now() + 300_000;
  let during = 0;
  while (now() < outageEnd && !p0.exit) {
    during = raisedNow().size - before;
    if (during >= 10) break;
    await sleep(1000);
  }
  say(`${during} alerts raised during the outage; kill -9 argus #${p0.k}`);
  const outageJsonl = jsonlAlertIds(p0.jsonl).length;
  await killArgus9(p0);
  const outboxAfterKill = scanOutbox();
  const jsonlIds = new Set(jsonlAlertIds(p0.jsonl));
  const observedBeforeKill = new Set(observed.keys());
  const raisedBeforeKill = [...new Set([...jsonlIds, ...observedBeforeKill, ...outboxAfterKill.ids])];
  say(`${raisedBeforeKill.length} alert ids raised before the kill; outbox holds ${outboxAfterKill.ids.size} ids in ${outboxAfterKill.files.length} file(s); restarting the broker and argus`);
  await broker('start');
  const p1 = startArgus();
  await liveArgus(90_000);
  const t = now();
  let delivered = new Set<string>();
  let last = { ids: [] as string[], messages: 0, complete: false };
  while (true) {
    last = await readTopic(TOPICS.alerts, 30_000);
    delivered = new Set(last.ids);
    const missing = raisedBeforeKill.filter((id) => !delivered.has(id)).length;
    if (missing === 0 || now() - t >= 60_000) break;
    await sleep(5000);
  }
  const waitedS = round1((now() - t) / 1000);
  finishing = true;
  p1.planned = 'sigterm';
  signal(p1.pid, 'SIGTERM');
  await Promise.race([p1.exited, sleep(60_000)]);
  observer.stop = true;
  for (const ws of wsClients) ws.terminate();
  await observing;
  const lostIds = raisedBeforeKill.filter((id) => !delivered.has(id));
  const outboxIds = new Set(outboxAfterKill.ids);
  const exitsAll = procs.map((p) => ({ k: p.k, pid: p.pid, code: p.exit?.code ?? null, signal: p.exit?.signal ?? null, planned: p.planned ?? null }));
  const result = {
    mode: 'kill9-test',
    sources: SOURCES,
    outbox: useOutbox,
    tmp: TMP,
    kill9: {
      raisedBeforeKill: raisedBeforeKill.length,
      raisedBeforeBrokerKill: before,
      raisedDuringOutage: during,
      raisedBeforeKillIn: { jsonl: jsonlIds.size, wsObserver: observedBeforeKill.size, outboxAfterKill: outboxAfterKill.ids.size, jsonlLinesAtKill: outageJsonl },
      delivered: raisedBeforeKill.length - lostIds.length,
      lost: lostIds.length,
      lostIds,
      lostButInOutboxAfterKill: lostIds.filter((id) => outboxIds.has(id)).length,
      raisedBeforeKillInOutbox: raisedBeforeKill.filter((id) => outboxIds.has(id)).length,
      waitedS,
      messagesInTopic: last.messages,
      duplicates: last.messages - delivered.size,
    },
    outboxScan: { dir: OUTBOX_DIR, afterKill: outboxAfterKill.files, afterKillDistinctIds: outboxAfterKill.ids.size, atEnd: scanOutbox().files },
    summaries: procs.map((p) => ({ k: p.k, kafka: summaryLine(p, 'kafka summary'), outbox: summaryLine(p, 'outbox summary') })),
    exits: { unplanned: exitsAll.filter((e) => e.planned === null).length, all: exitsAll },
    logs: procs.map((p) => ({ k: p.k, file: p.log, ...logLevels(p) })),
  };
  if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(result, null, 2) + '\n');
  console.log('\n---- kill -9 test ----');
  console.log(`outbox: ${useOutbox}; ${raisedBeforeKill.length} alerts raised before kill -9 (${during} during the broker outage); ${result.kill9.delivered} reached Kafka within ${waitedS} s of the restart; ${lostIds.length} LOST`);
  console.log(`outbox after the kill held ${outboxAfterKill.ids.size} ids (${result.kill9.raisedBeforeKillInOutbox} of the raised ones)`);
  console.log(`logs and files: ${TMP}${JSON_OUT ? `; JSON: ${JSON_OUT}` : ''}`);
  return lostIds.length > 0 || result.exits.unplanned > 0 ? 1 : 0;
}

// --------------------------------------------------------------------------- main --

let code = 2;
try {
  await setUp();
  code = KILL9 ? await kill9Test() : await chaosRun();
} catch (e) {
  if (!interrupted) console.error(`chaos: ${(e as Error).stack ?? e}`);
  code = 2;
} finally {
  if (!interrupted) say('cleaning up: argus, RTSP server and publishers, broker');
  await cleanup();
}
process.exit(interrupted ? 130 : code);
