import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';

const run = promisify(execFile);
const SCRIPT = resolve(__dirname, '../../scripts/kafka-broker.sh');

/** Runs scripts/kafka-broker.sh with a port (and so a state dir) of its own. */
export async function broker(cmd: 'start' | 'stop' | 'kill' | 'status', port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, cmd, ...args], { env: { ...process.env, KAFKA_PORT: String(port) }, timeout: 240_000 });
  return stdout.trim();
}

/**
 * The brokers the tests use: $KAFKA_BROKERS (the test command starts one), or a broker this
 * helper starts on 19092 when a test file is run on its own.
 */
export async function testBrokers(): Promise<string[]> {
  if (process.env.KAFKA_BROKERS) return process.env.KAFKA_BROKERS.split(',');
  const line = await broker('start', 19092);
  const m = /KAFKA_BROKERS=(\S+)/.exec(line);
  if (!m) throw new Error(`kafka-broker.sh start printed no brokers: ${line}`);
  process.env.KAFKA_BROKERS = m[1];
  return m[1].split(',');
}

/** Reads `count` messages from a topic (from the beginning), or what arrived before the timeout. */
export async function readTopic(brokers: string[], topic: string, count: number, timeoutMs = 30_000): Promise<{ key: string; value: string; partition: number }[]> {
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
        if (got.length >= count) {
          clearTimeout(t);
          res();
        }
      },
    });
  });
  await consumer.disconnect();
  return got;
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
  return pid;
}

/** Freezes (SIGSTOP) or resumes (SIGCONT) the broker on `port`: a stalled broker keeps its sockets open but answers nothing. */
export function stallBroker(port: number, stalled: boolean): void {
  const pid = brokerPid(port);
  const sig = stalled ? 'SIGSTOP' : 'SIGCONT';
  try {
    process.kill(-pid, sig);
  } catch {
    process.kill(pid, sig);
  }
}
