import { logLevel, type KafkaConfig } from 'kafkajs';
import type { KafkaSinkConfig } from '../config/schema.js';
import { brokerAddress } from '../config/schema/common.js';
import { withDeadline } from '../core/clock.js';
import { ArgusError, ErrorCodes, isArgusError } from '../core/errors.js';
import { redact, redactBroker } from '../core/redact.js';

/**
 * How long a command (`argus consume`, `argus cameras`, `argus cluster`) waits for the brokers
 * to answer at all before giving up with VAP_ERR_KAFKA_UNREACHABLE. kafkajs alone gave a broker
 * that accepts connections and never answers 30 s, then failed with "Broker not connected",
 * naming no broker; a port that refuses took 9 s of retries and named no code.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

/** The brokers as an error names them: credentials redacted. */
export function brokersText(brokers: readonly string[]): string {
  return `${brokers.length === 1 ? 'broker' : 'brokers'} ${brokers.map(redactBroker).join(', ')}`;
}

/**
 * How long a command waits for its client's disconnect once it stops waiting (a signal, an
 * error): against a broker that never answers, a group's leave or a disconnect may not end.
 */
export const DISCONNECT_BOUND_MS = 2000;

/** Disconnects a kafkajs client, waiting at most DISCONNECT_BOUND_MS; never fails. */
export async function disconnectBounded(client: { disconnect(): Promise<void> }): Promise<void> {
  await withDeadline(client.disconnect(), DISCONNECT_BOUND_MS, 'disconnect').catch(() => undefined);
}

/**
 * `p`, or VAP_ERR_INTERRUPTED as soon as `signal` aborts (at once if it has): a command's wait
 * on the brokers (a connect, a topic's lookup, a group's join) ends at the first Ctrl-C, not at
 * its bound (a second Ctrl-C killed `argus consume` against a broker that never answered).
 * `said(sig)` is the error's message, `sig` the abort's reason when it is a signal's name.
 */
export function untilStopped<T>(p: Promise<T>, signal: AbortSignal | undefined, said: (sig: string) => string): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ArgusError(ErrorCodes.INTERRUPTED, said(typeof signal.reason === 'string' ? signal.reason : 'a stop signal')));
    // Its outcome after an abort is ignored (a rejection then is no unhandled one).
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export interface ReachOptions {
  /** Default CONNECT_TIMEOUT_MS. */
  timeoutMs?: number;
  /** The command's stop: the connect ends at once with VAP_ERR_INTERRUPTED. */
  signal?: AbortSignal;
  /** The command, for the message of a stop (`consume`). */
  command?: string;
  /** What to check, for the error: `refused` when the brokers answered and refused the SASL credentials. */
  hint: (refused: boolean) => string;
}

/**
 * Connects a kafkajs client (admin, consumer) within the timeout, or fails with
 * VAP_ERR_KAFKA_UNREACHABLE naming the brokers and why, and what to check.
 */
export async function reachKafka(brokers: readonly string[], client: { connect(): Promise<void>; disconnect(): Promise<void> }, o: ReachOptions): Promise<void> {
  const ms = o.timeoutMs ?? CONNECT_TIMEOUT_MS;
  try {
    await untilStopped(withDeadline(client.connect(), ms, `no answer within ${ms / 1000} s`), o.signal, (sig) => `${o.command ? `${o.command}: ` : ''}${sig} while connecting to the Kafka ${brokersText(brokers)}: stopped on the signal`);
  } catch (e) {
    // Not waited for: against a broker that never answers it may not end either.
    void client.disconnect().catch(() => undefined);
    if (isArgusError(e, ErrorCodes.INTERRUPTED)) throw e;
    // A client with SASL settings at a listener that takes none is answered ILLEGAL_SASL_STATE
    // ("Request is not valid given the current SASL state"), and its mechanism refused with
    // UNSUPPORTED_SASL_MECHANISM: the hint said to check where Kafka runs, where Kafka ran.
    const saslType = (e as { type?: unknown })?.type;
    const saslMismatch = saslType === 'ILLEGAL_SASL_STATE' || saslType === 'UNSUPPORTED_SASL_MECHANISM';
    const why = redact((e as Error)?.message ?? String(e)) + (saslType === 'ILLEGAL_SASL_STATE' ? '; this listener takes no SASL' : '');
    // Reached, but the credentials were refused: the hint is about them, not about where Kafka runs.
    const refused = (e as Error)?.name === 'KafkaJSSASLAuthenticationError' || saslMismatch;
    throw new ArgusError(ErrorCodes.KAFKA_UNREACHABLE, `cannot reach the Kafka ${brokersText(brokers)} (${why}): ${o.hint(refused)}`, { cause: e });
  }
}

/**
 * A command's `--brokers`, checked as a YAML's brokers are: kafkajs read `user:secret@host:9092`
 * as host "user", port NaN. VAP_ERR_CONFIG naming the address, credentials redacted.
 */
export function checkBrokerFlags(brokers: readonly string[] | undefined): void {
  for (const b of brokers ?? []) {
    const r = brokerAddress.safeParse(b);
    if (!r.success) throw new ArgusError(ErrorCodes.CONFIG, `--brokers: ${redactBroker(b)}: ${r.error.issues[0]?.message ?? 'use host:port'}`);
  }
}

/**
 * The kafkajs settings of a command (`argus consume`, `cameras`, `cluster`): its TLS and SASL,
 * quiet, and three retries (2 s) rather than kafkajs's five (9 s), so a port that refuses is
 * named as such (ECONNREFUSED) within the connect timeout.
 */
export function commandKafkaConfig(clientId: string, t: { brokers: string[]; ssl?: KafkaSinkConfig['ssl']; sasl?: KafkaSinkConfig['sasl'] }): KafkaConfig {
  return { clientId, brokers: t.brokers, ssl: t.ssl as never, sasl: t.sasl as never, logLevel: logLevel.NOTHING, connectionTimeout: 3000, retry: { retries: 3 } };
}
