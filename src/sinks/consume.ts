import { connect } from 'node:net';
import { Kafka, type KafkaConfig } from 'kafkajs';
import type { KafkaSinkConfig } from '../config/schema.js';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes, isArgusError } from '../core/errors.js';
import { redact } from '../core/redact.js';
import { SampleWindow } from '../core/stats.js';
import { forTerminal } from '../core/text.js';
import { brokersText, checkBrokerFlags, commandKafkaConfig, disconnectBounded, reachKafka, untilStopped } from './kafka-reach.js';

export interface ConsumeOptions extends ConsumeTarget {
  fromBeginning: boolean;
  /** Print p50/p99 every this many records read. */
  window: number;
  /**
   * Stop after this many records read: every record counts, whether it was printed, skipped as
   * stale, not JSON or not an argus message (so a count of records behind a stale owner ends).
   */
  count?: number;
  /** Print each message's JSON instead of a summary line. */
  json: boolean;
  groupId?: string;
  /** How long to wait for the brokers to answer at all, ms. Default CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  out?: NodeJS.WritableStream;
  /** With `json`, where a record that is not JSON is said (stdout then carries only JSON). Default stderr. */
  err?: NodeJS.WritableStream;
  signal?: AbortSignal;
}

/** Where `argus consume` reads: brokers, topic, and how it authenticates. */
export interface ConsumeTarget {
  brokers: string[];
  topic: string;
  /** TLS and SASL, as in sinks.kafka. */
  ssl?: KafkaSinkConfig['ssl'];
  sasl?: KafkaSinkConfig['sasl'];
}

/**
 * `--brokers`, `--topic` and `--config PIPELINE.yaml`: with a pipeline, its Kafka sink's brokers
 * (unless --brokers), TLS and SASL, and its detections topic (unless --topic). Without the
 * pipeline's credentials a secured deployment's topics could not be read at all.
 */
export async function consumeTarget(o: { brokers?: string[]; topic?: string; config?: string }): Promise<ConsumeTarget> {
  checkBrokerFlags(o.brokers);
  if (o.config) {
    // Only the Kafka sink is read: a variable elsewhere (a camera's password) may be unset.
    const { loadPipelineParts } = await import('../config/load.js');
    const k = (await loadPipelineParts(o.config, ['sinks.kafka'])).sinks.kafka;
    if (!k) throw new ArgusError(ErrorCodes.CONFIG, `${o.config}: sinks.kafka: no Kafka sink to read from (give --brokers instead)`);
    return {
      brokers: o.brokers?.length ? o.brokers : k.brokers,
      topic: o.topic ?? k.topics.detections,
      ...(k.ssl !== undefined ? { ssl: k.ssl } : {}),
      ...(k.sasl ? { sasl: k.sasl } : {}),
    };
  }
  if (!o.brokers?.length) throw new ArgusError(ErrorCodes.CONFIG, '--brokers or --config: where is Kafka?');
  return { brokers: o.brokers, topic: o.topic ?? 'argus.detections' };
}

/** The kafkajs settings of `argus consume` for a target. */
export function consumeKafkaConfig(t: ConsumeTarget): KafkaConfig {
  return commandKafkaConfig('argus-consume', t);
}

export interface ConsumeSummary {
  /** Records read (what `count` counts). */
  records: number;
  /** Latency percentiles over the records with a plausible stamp. */
  p50: number;
  p99: number;
  /** Detections from a former owner of their camera (argus worker), skipped: see EpochGate. */
  stale: number;
  /** Records that are JSON but not argus messages, or not JSON at all (tombstones included). */
  notArgus: number;
  /** Messages whose `stamps.produced` (or `captured`) is not a plausible time: left out of the latency figures. */
  implausible: number;
  /** Messages stamped after this process's clock read them (the clocks disagree): left out of the latency figures. */
  ahead: number;
  /** The output's reader went away (`argus consume … | head`): stopped without a summary. */
  readerGone: boolean;
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

const MESSAGE_TYPES = new Set(['detections', 'alert', 'status']);

/** The fields `argus consume` reads; anything may be in a record, so each is checked where it is used. */
interface ArgusRecord {
  type: 'detections' | 'alert' | 'status';
  source: string;
  run?: unknown;
  seq?: unknown;
  epoch?: unknown;
  owner?: unknown;
  state?: unknown;
  stamps?: { produced?: unknown; captured?: unknown } | null;
  detections?: unknown;
  alert?: { event?: unknown } | null;
}

/** A parsed record that is an argus message (an object with a known `type` and a string `source`), else undefined. */
function asArgusMessage(v: unknown): ArgusRecord | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const m = v as Record<string, unknown>;
  return typeof m.type === 'string' && MESSAGE_TYPES.has(m.type) && typeof m.source === 'string' ? (m as unknown as ArgusRecord) : undefined;
}

/** Stamps before this (2000-01-01) or more than a day ahead of this clock are no time a frame was produced at. */
const EARLIEST_STAMP_MS = Date.UTC(2000, 0, 1);
const LATEST_AHEAD_MS = 24 * 3600 * 1000;

/**
 * A record's source → consumption latency at `t` (this process's clock, epoch ms), from when its
 * frame was produced (`stamps.produced`; messages before it existed: `captured`): `ms`; or
 * `aheadMs`, a stamp after `t` (the producer's clock ahead of this one's: another machine's, or
 * an argus started before this machine's clock was set back), which is no latency; 'implausible'
 * for a value that cannot be a time (−1e308, a string, the year 1970 or 2300); undefined when
 * there is none (status messages). (A stamp ahead was a negative latency, in p50/p99 too.)
 */
export function sourceToConsume(m: Pick<ArgusRecord, 'stamps'>, t: number): { ms: number } | { aheadMs: number } | 'implausible' | undefined {
  const s = m.stamps;
  if (typeof s !== 'object' || s === null) return undefined;
  const v = s.produced ?? s.captured;
  if (v === undefined) return undefined;
  if (!(typeof v === 'number' && v >= EARLIEST_STAMP_MS && v <= t + LATEST_AHEAD_MS)) return 'implausible';
  return v > t ? { aheadMs: v - t } : { ms: t - v };
}

/** p50 and p99 of a window of latencies, or that it has none (a topic of status messages: it printed NaN). */
export function latencyFigures(w: SampleWindow): string {
  return w.count === 0 ? 'source→consume: no stamped records' : `source→consume p50 ${w.percentile(50).toFixed(1)} ms  p99 ${w.percentile(99).toFixed(1)} ms`;
}

/** A field of a record as text for the terminal: strings escaped (forTerminal), numbers as they are, anything else '?'. */
const field = (v: unknown): string => (typeof v === 'string' ? forTerminal(v) : typeof v === 'number' ? String(v) : '?');

/**
 * A message's run (message.ts runTag) in short, for a person reading: its last six characters,
 * random ones (the first are the start time, alike for years).
 */
const shortRun = (run: string): string => (run.length > 6 ? run.slice(-6) : run);

/**
 * Which frame of which start a message is, as `#<run>-<seq>` (the run in short, as alert ids
 * write `<run>-<seq>`), or `#<seq>` for a message without a run (an older release's): `seq`
 * starts at 0 at each start, and `#41` alone read alike for two starts' frames. A status message
 * is of no frame (no seq): `#<run>`, its start alone (`#<run>-?` read as a seq gone wrong).
 */
export function frameText(m: Pick<ArgusRecord, 'run' | 'seq'>): string {
  if (m.run === undefined) return `#${field(m.seq)}`;
  const run = typeof m.run === 'string' ? forTerminal(shortRun(m.run)) : '?';
  return m.seq === undefined ? `#${run}` : `#${run}-${field(m.seq)}`;
}

/**
 * A JSON record as one line for --json: as read, unless it spans lines (another producer's
 * pretty-printed JSON), then written again compactly. (Printed as read, it broke the one record
 * a line that `| jq -c` and line readers count on.)
 */
function oneLine(text: string, parsed: unknown): string {
  return /[\n\r]/.test(text) ? JSON.stringify(parsed) : text;
}

/** A write failed because the reader of stdout went away (`| head`): stop quietly, as `argus run --jsonl -` does. */
const readerClosed = (e: NodeJS.ErrnoException) => e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED';

/** A kafkajs error that is, or was caused by, a broker not answering a connection (refused, reset, timed out). */
function connectionLost(e: unknown): boolean {
  for (let c = e as { name?: unknown; cause?: unknown } | undefined; c; c = c.cause as typeof c) {
    if (c.name === 'KafkaJSConnectionError' || c.name === 'KafkaJSConnectionClosedError' || c.name === 'KafkaJSRequestTimeoutError') return true;
  }
  return false;
}

/** How long brokersUnreachable waits for a broker to take a connection, ms. */
const REACH_PROBE_MS = 3000;

/**
 * Why none of `brokers` takes a TCP connection now (`ECONNREFUSED`, `no answer within 3 s`, …),
 * tried at once, each within REACH_PROBE_MS; undefined where one does.
 */
export async function brokersUnreachable(brokers: readonly string[], ms = REACH_PROBE_MS): Promise<string | undefined> {
  const tries = brokers.map(
    (b) =>
      new Promise<string | undefined>((resolve) => {
        const at = b.lastIndexOf(':');
        const s = connect({ host: b.slice(0, at), port: Number(b.slice(at + 1)) });
        const done = (why: string | undefined) => {
          clearTimeout(timer);
          s.destroy();
          resolve(why);
        };
        const timer = setTimeout(() => done(`no answer within ${ms / 1000} s`), ms);
        s.once('connect', () => done(undefined));
        s.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
      }),
  );
  const whys = await Promise.all(tries);
  return whys.some((w) => w === undefined) ? undefined : [...new Set(whys)].join(', ');
}

/**
 * Reads a topic and prints each message with its source → consumption latency (from `stamps.produced`), and p50/p99
 * over a sliding window. For operators checking a deployment and for our tests. Every field of a
 * record is untrusted: it is shown through forTerminal, never as the raw escape sequences it may
 * hold. When the output's reader goes away (EPIPE), it stops at once: no more output, the
 * consumer disconnected, no summary, and the command ends with status 0.
 */
export async function consume(o: ConsumeOptions): Promise<ConsumeSummary> {
  const out = o.out ?? process.stdout;
  const kafka = new Kafka(consumeKafkaConfig(o));
  const consumerGroupId = o.groupId ?? `argus-consume-${process.pid}-${Date.now()}`;
  const consumer = kafka.consumer({ groupId: consumerGroupId, allowAutoTopicCreation: false });
  const gate = new EpochGate();
  const win = new SampleWindow(o.window);
  const all = new SampleWindow(100_000);
  let n = 0;
  let notArgus = 0;
  let implausible = 0;
  let ahead = 0;
  let maxAheadMs = 0;
  let stop: () => void = () => {};
  let outError: NodeJS.ErrnoException | undefined;
  const onOutError = (e: NodeJS.ErrnoException) => {
    outError ??= e;
    stop();
  };
  out.on('error', onOutError);
  const write = (s: string) => {
    if (!outError) out.write(s);
  };
  // A stop while it waits on the brokers (connect, the topic's lookup, the group's join) ends
  // the command at once with VAP_ERR_INTERRUPTED (exit 130); once it reads, with its summary.
  const stopped = (doing: string) => (sig: string) => `consume: ${sig} while ${doing}: stopped on the signal, before any record was read`;
  await reachKafka(o.brokers, consumer, {
    timeoutMs: o.connectTimeoutMs,
    signal: o.signal,
    command: 'consume',
    hint: (refused) => (refused ? 'check sinks.kafka.sasl of --config' : 'is Kafka running there? (--brokers, or sinks.kafka of --config)'),
  });
  try {
    const subscribed = consumer.subscribe({ topic: o.topic, fromBeginning: o.fromBeginning });
    await untilStopped(subscribed, o.signal, stopped(`looking up topic ${forTerminal(o.topic)} on the Kafka ${brokersText(o.brokers)}`)).catch((e: unknown) => {
      // kafkajs said "This server does not host this topic-partition", naming neither.
      const type = (e as { type?: unknown })?.type;
      if (type === 'UNKNOWN_TOPIC_OR_PARTITION') throw new ArgusError(ErrorCodes.SINK_TOPIC, `consume: the Kafka ${brokersText(o.brokers)} has no topic ${forTerminal(o.topic)} (--topic)`, { cause: e });
      if (type === 'TOPIC_AUTHORIZATION_FAILED') throw new ArgusError(ErrorCodes.SINK_TOPIC, `consume: the Kafka ${brokersText(o.brokers)} does not let these credentials read topic ${forTerminal(o.topic)}`, { cause: e });
      throw e;
    });
    /** The line printed for one record (undefined: nothing; with --json a stale or empty record, and one that is not JSON, said on stderr). */
    const describe = (text: string | undefined, partition: number): string | undefined => {
      const t = now();
      if (text === undefined || text === '') {
        notArgus++;
        return o.json ? undefined : '(empty record: a tombstone or no value)';
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        notArgus++;
        const note = `(not JSON) ${forTerminal(text.slice(0, 80))}`;
        // --json output is JSON, one record a line, for `| jq` and other programs: a line that is
        // not JSON there ended such a reader (and so this command) at the first garbage record.
        if (!o.json) return note;
        (o.err ?? process.stderr).write(note + '\n');
        return undefined;
      }
      const m = asArgusMessage(parsed);
      if (!m) {
        notArgus++;
        return o.json ? oneLine(text, parsed) : `(JSON, not an argus message) ${forTerminal(text.slice(0, 80))}`;
      }
      if (!gate.accept(m)) {
        return o.json ? undefined : `stale ${forTerminal(m.source)} ${frameText(m)} from ${field(m.owner)} (epoch ${m.epoch}; a newer owner's was seen): skipped`;
      }
      const l = sourceToConsume(m, t);
      let latency = '';
      if (l === 'implausible') {
        implausible++;
        latency = '  source→consume ? ms (implausible stamp: left out)';
      } else if (l && 'aheadMs' in l) {
        ahead++;
        maxAheadMs = Math.max(maxAheadMs, l.aheadMs);
        latency = `  source→consume ? ms (stamped ${l.aheadMs.toFixed(1)} ms ahead of this clock: the clocks disagree; left out)`;
      } else if (l) {
        win.add(l.ms);
        all.add(l.ms);
        latency = `  source→consume ${l.ms.toFixed(1)} ms`;
      }
      if (o.json) return oneLine(text, parsed);
      const what =
        m.type === 'alert' ? field(m.alert?.event ?? '')
        : m.type === 'status' ? field(m.state)
        : `${Array.isArray(m.detections) ? m.detections.length : 0} detections`;
      return `${m.type} ${forTerminal(m.source)} ${frameText(m)} p${partition} ${what}${latency}`;
    };

    // kafkajs's run resolves too when the join fails: its consumer "crashes" (disconnects and
    // emits CRASH) and run returns, so a group the brokers refuse (its id invalid, no ACL for it)
    // was read as joined and the command waited for records for ever. The join is its GROUP_JOIN
    // event; a crash before it that kafkajs does not restart from (restart: false) is the
    // command's error, one it restarts from (a coordinator still loading the group, retriable) is
    // waited through; after the join, one it does not restart from ends the reading.
    let joinedYet = false;
    let failJoin: (e: unknown) => void = () => {};
    let offJoin: () => void = () => {};
    let failReading: (e: unknown) => void = () => {};
    /** A crash's error in words (the broker's error type, where one is in it or in its cause: kafkajs wraps the last of its retries). */
    const crashWhy = (e: unknown) => {
      let root = e as { type?: unknown; cause?: unknown } | undefined;
      while (root?.cause && typeof root.type !== 'string') root = root.cause as typeof root;
      const type = root?.type;
      return { type, why: redact(`${(e as Error)?.name ?? 'Error'}${typeof type === 'string' ? ` ${type}` : ''}: ${(e as Error)?.message ?? String(e)}`) };
    };
    // A join kafkajs retries is waited through, but said once: a coordinator that never comes (a
    // one-broker Kafka whose offsets.topic.replication.factor is above 1) waited for ever without a word.
    let waitSaid = false;
    const crashError = (e: unknown, doing: string, unreachable?: string) => {
      const { type, why } = crashWhy(e);
      const refused = type === 'GROUP_AUTHORIZATION_FAILED' || type === 'INVALID_GROUP_ID';
      // No broker answered a connection (stopped, crashed, gone from the network): said so, not as a refusal.
      if (unreachable)
        return new ArgusError(
          ErrorCodes.KAFKA_UNREACHABLE,
          `consume: the Kafka ${brokersText(o.brokers)} could not be reached (${unreachable}) while this consumer joined group ${forTerminal(consumerGroupId)} (${forTerminal(why)}): is Kafka running there? (--brokers, or sinks.kafka of --config)`,
          { cause: e },
        );
      return new ArgusError(
        ErrorCodes.KAFKA_UNREACHABLE,
        `consume: the Kafka ${brokersText(o.brokers)} ${doing} group ${forTerminal(consumerGroupId)} (${forTerminal(why)}): ${refused ? 'check that the credentials (sinks.kafka.sasl of --config) may use consumer groups' : 'is Kafka well? (--brokers, or sinks.kafka of --config)'}`,
        { cause: e },
      );
    };
    const groupJoined = new Promise<void>((resolve, reject) => {
      failJoin = reject;
      offJoin = consumer.on(consumer.events.GROUP_JOIN, () => {
        joinedYet = true;
        resolve();
      });
    });
    groupJoined.catch(() => undefined); // (said where it is awaited; not awaited after a stop)
    const offCrash = consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart) {
        if (joinedYet || waitSaid || o.signal?.aborted) return;
        waitSaid = true;
        const g = forTerminal(consumerGroupId);
        const waiting = connectionLost(payload.error) ? `has not been reachable yet for this consumer to join group ${g}` : `has not let this consumer join group ${g} yet`;
        (o.err ?? process.stderr).write(`argus: warning: consume: the Kafka ${brokersText(o.brokers)} ${waiting} (${forTerminal(crashWhy(payload.error).why)}): still trying (Ctrl-C ends the wait)\n`);
        return;
      }
      // kafkajs gives up on a group's coordinator it could not reach with an error of its own
      // (KafkaJSGroupCoordinatorNotFound, no cause): a broker stopped or gone was said "did not let
      // this consumer join". Whether any broker takes a connection now tells the two apart.
      if (!joinedYet) void brokersUnreachable(o.brokers).then((unreachable) => failJoin(crashError(payload.error, 'did not let this consumer join', unreachable)));
      else failReading(crashError(payload.error, `stopped this consumer after ${n} record(s) read, in`));
    });
    let joined: Promise<void> | undefined;
    const done = new Promise<void>((resolve, reject) => {
      stop = resolve;
      failReading = reject;
      if (outError) resolve();
      // kafkajs's run resolves once the consumer has joined its group (and been given partitions).
      joined = consumer.run({
        eachMessage: async ({ message, partition }) => {
          if (outError || (o.count !== undefined && n >= o.count)) return;
          n++;
          const line = describe(message.value?.toString(), partition);
          if (line !== undefined) write(line + '\n');
          if (!o.json && n % o.window === 0) write(`window ${o.window}: ${latencyFigures(win)}\n`);
          if (o.count !== undefined && n >= o.count) resolve();
        },
      });
    });
    // The join (a group's coordinator that never answers, a rebalance waiting on other members)
    // ends at a stop too; output gone or the count read meanwhile end it as they always did.
    await Promise.race([untilStopped(joined!.then(() => groupJoined), o.signal, stopped(`joining the consumer group on the Kafka ${brokersText(o.brokers)}`)), done]);
    // Reading: a stop ends it with the summary.
    const onAbort = () => stop();
    if (o.signal?.aborted) stop();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    await done.finally(() => {
      o.signal?.removeEventListener('abort', onAbort);
      offCrash();
      offJoin();
    });
  } catch (e) {
    // Stopped while waiting on the brokers: said at once, the disconnect not waited for.
    if (isArgusError(e, ErrorCodes.INTERRUPTED)) void consumer.disconnect().catch(() => undefined);
    else await disconnectBounded(consumer);
    throw e;
  }
  // Bounded: the group's leave, against a coordinator that no longer answers, may not end.
  await disconnectBounded(consumer);
  const summary: ConsumeSummary = { records: n, p50: all.percentile(50), p99: all.percentile(99), stale: gate.stale, notArgus, implausible, ahead, readerGone: outError !== undefined && readerClosed(outError) };
  if (outError) {
    if (summary.readerGone) return summary;
    throw new ArgusError(ErrorCodes.SINK_FILE, `consume: writing the output failed (${outError.code ?? outError.message})`, { cause: outError });
  }
  if (!o.json) {
    const notes = [
      gate.stale ? `${gate.stale} stale (a former owner's) skipped` : '',
      notArgus ? `${notArgus} not argus messages` : '',
      implausible ? `${implausible} with an implausible stamp left out of the latency figures` : '',
      ahead ? `${ahead} stamped ahead of this clock (by up to ${maxAheadMs.toFixed(1)} ms: the producer's clock is ahead of this one's, which makes the other latencies too short as well) left out of the latency figures` : '',
    ].filter(Boolean);
    write(`${n} records: ${latencyFigures(all)}${notes.length ? `; ${notes.join('; ')}` : ''}\n`);
  }
  return summary;
}
