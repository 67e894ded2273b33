import { Kafka, logLevel } from 'kafkajs';
import { now } from '../core/clock.js';
import { SampleWindow } from '../core/stats.js';

export interface ConsumeOptions {
  brokers: string[];
  topic: string;
  fromBeginning: boolean;
  /** Print p50/p99 every this many messages. */
  window: number;
  /** Stop after this many messages. */
  count?: number;
  /** Print each message's JSON instead of a summary line. */
  json: boolean;
  groupId?: string;
  out?: NodeJS.WritableStream;
  signal?: AbortSignal;
}

export interface ConsumeSummary {
  messages: number;
  p50: number;
  p99: number;
  /** Detections from a former owner of their camera (argus worker), skipped: see EpochGate. */
  stale: number;
}

/**
 * A claim's epoch is the offset of its record in the owners topic (cluster/view.ts): a
 * non-negative safe integer. Anything else (1e308, −1, 2.5, "7") was not written by a worker.
 */
function isEpoch(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

/**
 * The rule for messages of `argus worker` cameras (README, "Many machines"): every message
 * carries its camera's owner and epoch, and a camera's epoch grows with every new owner. A
 * detections message whose epoch is lower than one already seen for its camera comes from a
 * former owner — results it processed before it stopped, delivered late — and is stale: skip
 * it. Alerts and status messages are never skipped (an alert raised by the former owner while
 * it held the camera is a real alert; de-duplicate alerts by their id). Only a real epoch (see
 * `isEpoch`) is remembered: one record with `"epoch": 1e308` made every later detection of its
 * camera stale for the whole session.
 */
export class EpochGate {
  private readonly latest = new Map<string, number>();
  stale = 0;

  /** False for a stale detections message; remembers the highest epoch of each camera. */
  accept(m: { type?: unknown; source?: unknown; epoch?: unknown }): boolean {
    if (typeof m.source !== 'string' || !isEpoch(m.epoch)) return true;
    const cur = this.latest.get(m.source);
    if (cur === undefined || m.epoch > cur) this.latest.set(m.source, m.epoch);
    if (m.type === 'detections' && cur !== undefined && m.epoch < cur) {
      this.stale++;
      return false;
    }
    return true;
  }
}

/**
 * Reads a topic and prints each message with its source → consumption latency (from `stamps.produced`), and p50/p99
 * over a sliding window. For operators checking a deployment and for our tests.
 */
export async function consume(o: ConsumeOptions): Promise<ConsumeSummary> {
  const out = o.out ?? process.stdout;
  const kafka = new Kafka({ clientId: 'argus-consume', brokers: o.brokers, logLevel: logLevel.NOTHING, connectionTimeout: 3000 });
  const consumer = kafka.consumer({ groupId: o.groupId ?? `argus-consume-${process.pid}-${Date.now()}`, allowAutoTopicCreation: false });
  const gate = new EpochGate();
  const win = new SampleWindow(o.window);
  const all = new SampleWindow(100_000);
  let n = 0;
  await consumer.connect();
  await consumer.subscribe({ topic: o.topic, fromBeginning: o.fromBeginning });
  const done = new Promise<void>((resolve) => {
    o.signal?.addEventListener('abort', () => resolve(), { once: true });
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        if (o.count !== undefined && n >= o.count) return;
        const t = now();
        const text = message.value?.toString() ?? '';
        let latency = NaN;
        let line: string;
        try {
          const m = JSON.parse(text) as { type?: string; source?: string; seq?: number; epoch?: number; owner?: string; stamps?: { produced?: number; captured?: number }; detections?: unknown[]; alert?: { event?: string } };
          if (!gate.accept(m)) {
            if (!o.json) out.write(`stale ${m.source} #${m.seq ?? '?'} from ${m.owner ?? '?'} (epoch ${m.epoch}; a newer owner's was seen): skipped\n`);
            return;
          }
          // From the frame's production at the source (messages before `produced` existed: its capture).
          const from = m.stamps?.produced ?? m.stamps?.captured;
          latency = from ? t - from : NaN;
          line = o.json
            ? text
            : `${m.type ?? '?'} ${m.source ?? '?'} #${m.seq ?? '?'} p${partition} ${m.type === 'alert' ? (m.alert?.event ?? '') : `${m.detections?.length ?? 0} detections`}  source→consume ${latency.toFixed(1)} ms`;
        } catch {
          line = `(not JSON) ${text.slice(0, 80)}`;
        }
        n++;
        if (Number.isFinite(latency)) {
          win.add(latency);
          all.add(latency);
        }
        out.write(line + '\n');
        if (!o.json && n % o.window === 0) out.write(`window ${o.window}: source→consume p50 ${win.percentile(50).toFixed(1)} ms  p99 ${win.percentile(99).toFixed(1)} ms\n`);
        if (o.count !== undefined && n >= o.count) resolve();
      },
    });
  });
  await done;
  await consumer.disconnect();
  const summary = { messages: n, p50: all.percentile(50), p99: all.percentile(99), stale: gate.stale };
  if (!o.json) out.write(`${n} messages: source→consume p50 ${summary.p50.toFixed(1)} ms  p99 ${summary.p99.toFixed(1)} ms${gate.stale ? `; ${gate.stale} stale (a former owner's) skipped` : ''}\n`);
  return summary;
}
