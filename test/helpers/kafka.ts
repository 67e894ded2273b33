import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin, type ITopicConfig } from 'kafkajs';
import { MESSAGE_VERSION, type AlertMessage, type DetectionsMessage } from '../../src/sinks/message.js';
import { createTopicsReady as createTopicsReadyIn } from '../../src/sinks/kafka.js';
import { testPort } from './ports.js';

const run = promisify(execFile);
const SCRIPT = resolve(__dirname, '../../scripts/kafka-broker.sh');

/**
 * Bound on a broker command (a JVM start on a busy 2-core machine takes minutes): it only
 * ends a hang. Test hooks that start a broker use it as their timeout too.
 */
export const BROKER_TIMEOUT_MS = 600_000;

/**
 * Runs scripts/kafka-broker.sh with a port (and so a state dir) of its own. The script waits
 * up to KAFKA_START_TIMEOUT (here 480 s unless set) for the broker to answer.
 */
export async function broker(cmd: 'start' | 'stop' | 'kill' | 'status', port: number, ...args: string[]): Promise<string> {
  return brokerCommand({}, cmd, port, ...args);
}

/**
 * `broker`, with its progress (the script's stderr: a first run's download from Maven Central,
 * the wait for the JVM) shown as it comes when `o.progress` is set, as global setup wants it.
 */
export async function brokerCommand(o: { progress?: boolean }, cmd: 'start' | 'stop' | 'kill' | 'status', port: number, ...args: string[]): Promise<string> {
  const env = { ...process.env, KAFKA_PORT: String(port), KAFKA_START_TIMEOUT: process.env.KAFKA_START_TIMEOUT ?? '480' };
  const child = run('bash', [SCRIPT, cmd, ...args], { env, timeout: BROKER_TIMEOUT_MS });
  if (o.progress) child.child.stderr?.pipe(process.stderr, { end: false });
  const { stdout } = await child;
  return stdout.trim();
}

/**
 * The port of the run's shared broker: KAFKA_PORT where set, else 19092 plus the run's port
 * offset (helpers/ports.ts). Global setup starts it there (and writes it for test.sh, which stops
 * it there), and a test file that finds no KAFKA_BROKERS starts it there too: on another port
 * (19092 beside a KAFKA_PORT), a broker nothing stopped was left running.
 */
export function sharedBrokerPort(): number {
  return Number(process.env.KAFKA_PORT || testPort(19092));
}

/**
 * Where a test file that started the shared broker writes its port, for the run's teardown to
 * stop it (sharedBrokerSetup sets it, without ARGUS_TEST_KAFKA=start).
 */
const STARTED_FILE = 'ARGUS_TEST_KAFKA_STARTED_FILE';

/**
 * The brokers the tests use: $KAFKA_BROKERS (the test command starts one), or a broker this
 * helper starts on the shared broker's port (sharedBrokerPort) when a test file is run on its
 * own, or global setup could not start it. One it started (none ran on the port) is written
 * down for the run's teardown to stop (sharedBrokerSetup), and for test.sh.
 */
export async function testBrokers(ctl: BrokerControl = { ...scriptBroker, start: (port) => broker('start', port) }): Promise<string[]> {
  if (process.env.KAFKA_BROKERS) return process.env.KAFKA_BROKERS.split(',');
  const port = sharedBrokerPort();
  const files = [process.env[STARTED_FILE], process.env.ARGUS_TEST_KAFKA_PORT_FILE].filter((f): f is string => !!f);
  // Written before the start: one that fails half way (a JVM left starting) is stopped too.
  if (files.length > 0 && !(await ctl.running(port))) for (const f of files) writeFileSync(f, `${port}\n`);
  const line = await ctl.start(port);
  const m = /KAFKA_BROKERS=(\S+)/.exec(line);
  if (!m) throw new Error(`kafka-broker.sh start printed no brokers: ${line}`);
  process.env.KAFKA_BROKERS = m[1];
  return m[1].split(',');
}

/** What `sharedBrokerSetup` does to the shared broker: scripts/kafka-broker.sh, or a test's stand-in. */
export interface BrokerControl {
  /** Whether a broker runs (or is starting) on `port`: `status` exits 0. */
  running(port: number): Promise<boolean>;
  /** Starts it (a no-op when it runs); the script's line `KAFKA_BROKERS=...`. */
  start(port: number): Promise<string>;
  stop(port: number): Promise<void>;
}

/** scripts/kafka-broker.sh on a port; `start` shows its progress (a first run's download, the JVM's wait). */
export const scriptBroker: BrokerControl = {
  running: (port) => broker('status', port).then(() => true, () => false),
  start: (port) => brokerCommand({ progress: true }, 'start', port),
  stop: (port) => broker('stop', port).then(() => undefined),
};

/**
 * Global setup's part in the shared broker (sharedBrokerPort); returns its teardown.
 *
 * With ARGUS_TEST_KAFKA=start (the test command sets it) it starts the broker and hands it to the
 * test files in KAFKA_BROKERS; the teardown stops it when none ran on the port as the run began,
 * and its port goes into ARGUS_TEST_KAFKA_PORT_FILE (where set) for test.sh to stop it should
 * vitest die without its teardown. Without it, nothing is asked of the broker at the start (most
 * runs need none): a test file that needs it starts it (testBrokers) and, when none ran on the
 * port, writes its port down, and the teardown stops that one only. A broker that ran before the
 * run (a developer's own), or that another run or a developer started on the port meanwhile, is
 * never stopped. With KAFKA_BROKERS set beforehand nothing starts one, nothing is stopped.
 * (1d1112f asked for the port and the broker's status on every run: a run with a port offset that
 * keeps the test ports but not 19092 under 65000 failed in global setup, no test file ran; and it
 * stopped a broker that was not running when the run began, whoever had started it.)
 */
export async function sharedBrokerSetup(ctl: BrokerControl = scriptBroker, log: (m: string) => void = console.error): Promise<() => Promise<void>> {
  if (process.env.KAFKA_BROKERS) return async () => {};
  if (process.env.ARGUS_TEST_KAFKA !== 'start') {
    const dir = mkdtempSync(join(tmpdir(), 'argus-kafka-started-'));
    const file = join(dir, 'port');
    process.env[STARTED_FILE] = file;
    return async () => {
      const port = existsSync(file) ? Number(readFileSync(file, 'utf8')) : undefined;
      rmSync(dir, { recursive: true, force: true });
      if (port === undefined || !(await ctl.running(port))) return;
      await ctl.stop(port).catch((e: unknown) => log(`global teardown: could not stop the Kafka broker on ${port}: ${(e as Error).message}`));
    };
  }
  const port = sharedBrokerPort();
  const before = await ctl.running(port);
  if (!before && process.env.ARGUS_TEST_KAFKA_PORT_FILE) writeFileSync(process.env.ARGUS_TEST_KAFKA_PORT_FILE, `${port}\n`);
  try {
    const line = await ctl.start(port);
    const m = /KAFKA_BROKERS=(\S+)/.exec(line);
    if (!m) throw new Error(`kafka-broker.sh start printed no brokers: ${line}`);
    process.env.KAFKA_BROKERS = m[1];
  } catch (e) {
    // A test file that finds no KAFKA_BROKERS starts it on the same port: the teardown stops it.
    log(`global setup: could not start the Kafka broker on ${port}; Kafka tests will fail: ${(e as Error).message}`);
  }
  return async () => {
    if (before || !(await ctl.running(port))) return;
    await ctl.stop(port).catch((e: unknown) => log(`global teardown: could not stop the Kafka broker on ${port}: ${(e as Error).message}`));
  };
}

/**
 * Reads a topic from the beginning until `done(messages so far)` holds, or `timeoutMs` passed
 * (then returns what arrived: the caller's assertion says what is missing). The timeout only
 * bounds a hang; reading ends as soon as `done` holds.
 */
export async function readTopicUntil(
  brokers: string[],
  topic: string,
  done: (got: { key: string; value: string; partition: number }[]) => boolean,
  timeoutMs = 120_000,
): Promise<{ key: string; value: string; partition: number }[]> {
  const kafka = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test-${topic}-${Date.now()}-${Math.random()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: { key: string; value: string; partition: number }[] = [];
  await new Promise<void>((res) => {
    const t = setTimeout(res, timeoutMs);
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        got.push({ key: message.key?.toString() ?? '', value: message.value?.toString() ?? '', partition });
        if (done(got)) {
          clearTimeout(t);
          res();
        }
      },
    });
  });
  await consumer.disconnect();
  return got;
}

/** Reads `count` messages from a topic (from the beginning), or what arrived before the timeout. */
export function readTopic(brokers: string[], topic: string, count: number, timeoutMs = 120_000): Promise<{ key: string; value: string; partition: number }[]> {
  return readTopicUntil(brokers, topic, (got) => got.length >= count, timeoutMs);
}

export function uniqueTopic(prefix: string): string {
  return `${prefix}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** The pid (= process group) of the broker scripts/kafka-broker.sh runs on `port`. */
export function brokerPid(port: number): number {
  // as scripts/kafka-broker.sh, which broker() runs with this environment
  const dir = process.env.ARGUS_KAFKA_STATE || `/tmp/argus-kafka-${port}`;
  const pid = Number(readFileSync(`${dir}/kafka.pid`, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`no broker pid for port ${port}`);
  // That broker's JVM still (as the script's running_pid checks): a stale pid file's pid may be
  // another process's since, and a stall would freeze that one's whole process group.
  let cmdline: string[] = [];
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    // gone
  }
  if (!cmdline.includes(`-Dargus.kafka.state=${dir}`)) throw new Error(`the broker pid file for port ${port} names pid ${pid}, which is not that broker (gone, or another process's since)`);
  return pid;
}

/**
 * Freezes (SIGSTOP) or resumes (SIGCONT) the broker on `port`: a stalled broker keeps its sockets
 * open but answers nothing. A stop returns once every thread of the broker's JVM is stopped:
 * kill() only queues the signal, and on a busy machine a JVM thread already running can answer
 * a request or two before it takes it (seen: three alerts acknowledged "after" the stop).
 */
export function stallBroker(port: number, stalled: boolean): void {
  const pid = brokerPid(port);
  const sig = stalled ? 'SIGSTOP' : 'SIGCONT';
  try {
    process.kill(-pid, sig);
  } catch {
    process.kill(pid, sig);
  }
  if (!stalled) return;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const end = Date.now() + 60_000; // a hang bound only
  while (!allThreadsStopped(pid)) {
    if (Date.now() > end) throw new Error(`broker ${pid} on port ${port} did not stop within 60 s of SIGSTOP`);
    Atomics.wait(pause, 0, 0, 5);
  }
}

/** Whether every thread of process `pid` is in the stopped state (T in /proc/PID/task/TID/stat). */
function allThreadsStopped(pid: number): boolean {
  const tasks = readdirSync(`/proc/${pid}/task`);
  for (const tid of tasks) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state !== 'T' && state !== 't') return false;
  }
  return tasks.length > 0;
}

let alertSeq = 0;

/** What a frame's messages share (source, seq, stamps, frame, model), stamped now, for the sinks' tests. */
function testFrameFields(source: string, seq: number): Omit<DetectionsMessage, 'type'> {
  const t = Date.now();
  return {
    version: MESSAGE_VERSION,
    source,
    seq,
    pts: 0,
    capturedAt: new Date(t).toISOString(),
    producedBy: 'captured',
    stamps: { produced: t, captured: t, preprocessed: t, inferStart: t, inferEnd: t, postprocessed: t, emitted: t, published: t },
    frame: { width: 768, height: 432 },
    model: { name: 'test', version: '0' },
    dropped: 0,
    detections: [],
  };
}

/** A detections message with no detection as argus publishes it, frame `seq` of `source`, for the sinks' tests. */
export function testDetections(source: string, seq: number): DetectionsMessage {
  return { type: 'detections', ...testFrameFields(source, seq) };
}

/** An alert message as argus publishes it, for the sinks' tests; with a snapshot of `snapshotBytes` base64 characters when > 0. */
export function testAlert(source: string, id: string, snapshotBytes = 0): AlertMessage {
  return {
    type: 'alert',
    ...testFrameFields(source, alertSeq++),
    alert: {
      id,
      rule: 'sink-test',
      severity: 'critical',
      event: 'test.sink',
      message: `sink test ${id}`,
      ...(snapshotBytes > 0 ? { snapshot: { contentType: 'image/jpeg' as const, data: randomBytes(Math.ceil((snapshotBytes * 3) / 4)).toString('base64').slice(0, snapshotBytes), width: 832, height: 468 } } : {}),
    },
  };
}

/** Creates `topics` and waits until each partition of each has a leader, 60 s at most (the sinks' and workers' own, src/sinks/kafka.ts). */
export async function createTopicsReady(admin: Admin, o: { topics: ITopicConfig[] }): Promise<void> {
  await createTopicsReadyIn(admin, o.topics, { withinMs: 60_000 });
}

/** Makes `topic` (one partition) taking records of at most `maxMessageBytes` (its max.message.bytes): what a broker refuses as too large. */
export async function createSmallTopic(brokers: string[], topic: string, maxMessageBytes: number): Promise<void> {
  const admin = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: String(maxMessageBytes) }] }] });
  } finally {
    await admin.disconnect();
  }
}
