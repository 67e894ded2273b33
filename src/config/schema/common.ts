import { z } from 'zod';
import { rememberSecret } from '../../core/redact.js';

/**
 * A number of the configuration: finite. YAML spells infinity `.inf` (and `${env:X}` set to
 * `.inf` reads as one), which z.number() takes: a `watchdog.stallFactor: .inf` never restarted
 * a stalled source, a `dwellLimitSec: .inf` never raised its event. (`.nan` is refused by
 * z.number() itself; load.ts words both alike.) Every number of schema/ is declared through it.
 */
export const FINITE_MESSAGE = 'must be a finite number (not .inf or -.inf)';
export const finite = () => z.number().finite(FINITE_MESSAGE);

/**
 * A password or token of the configuration: remembered as it is read (core/redact
 * rememberSecret), so that it is redacted wherever it appears, whatever characters it holds.
 */
export const secret = () => z.string().superRefine((v) => rememberSecret(v));

/**
 * A leading `~` of a path (`~` or `~/…`): a shell's home folder, which neither YAML nor argus
 * expands. Taken as it is, `dir: ~/argus/snapshots` made a folder named `~` beside the YAML (one
 * a later `rm -rf ~/…` typed to clean it up would mistake for the home folder), and `uri:
 * ~/cam.mp4` was "file not found: /etc/argus/~/cam.mp4".
 */
export const HOME_TILDE = /^~(\/|$)/;
export const TILDE_MESSAGE = 'a leading ~ is not the home folder here (only a shell expands it): write the full path, or ${env:HOME}/…';

/** A path of the configuration (a file or a folder; relative: from the YAML's folder): not empty, no leading `~` (HOME_TILDE). */
export const filePath = () => z.string().min(1).refine((p) => !HOME_TILDE.test(p), TILDE_MESSAGE);

/** The longest id (a camera's id is a Kafka key and a claim's field: the cluster's owners view reads at most 256 characters). */
export const MAX_ID_LENGTH = 128;

/**
 * The id of a source, zone, line or rule: letters, digits, dot, dash, underscore; not only dots
 * (an id names files, as the annotated video's `{source}`: `..` would be the folder above).
 */
export const id = z
  .string()
  .regex(/^(?!\.+$)[A-Za-z0-9_.-]+$/, 'use letters, digits, dot, dash or underscore (not only dots)')
  .max(MAX_ID_LENGTH, `at most ${MAX_ID_LENGTH} characters`);

/**
 * The longest wait a millisecond setting may ask for: Node runs a timer of more than 2^31 − 1 ms
 * after 1 ms (a `startTimeoutMs` of 10^11 restarted its source every millisecond).
 */
/**
 * A frame rate (`fps` of a source or of the annotated video): more than 0 and at least one frame
 * an hour, at most 240. A rate such as 1e-300 passed as positive and gave no frame at all, the run
 * ending with status 0 and nothing said.
 */
export const MIN_FPS = 1 / 3600;
export const frameRate = () => finite().min(MIN_FPS, 'at least one frame an hour (1/3600 = 0.000278)').max(240);

export const MAX_TIMER_MS = 2_147_483_647;
/** A millisecond setting, a whole number from `min` to MAX_TIMER_MS (about 24.8 days). */
export const ms = (min: number) => finite().int().min(min).max(MAX_TIMER_MS, `at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest timer Node runs`);

/** A Kafka bootstrap broker: host:port, the port 1–65535. */
export const brokerAddress = z
  .string()
  .regex(/^[^\s:]+:\d+$/, 'use host:port')
  .refine((s) => {
    const m = /:(\d+)$/.exec(s);
    return !m || (Number(m[1]) >= 1 && Number(m[1]) <= 65535);
  }, 'the port is 1–65535');

/**
 * A list of brokers (sinks.kafka.brokers, cluster.brokers), each host:port; an item may hold
 * several, comma-separated, as Kafka's own tools and argus's `--brokers` take them:
 * `brokers: ["${env:KAFKA_BROKERS}"]` with KAFKA_BROKERS=b1:9092,b2:9092 was refused as one item,
 * "use host:port". No host or port holds a comma, so the split changes no valid list.
 */
export const brokerList = z
  .array(
    z.string().superRefine((item, ctx) => {
      const parts = brokersOf(item);
      if (parts.length === 0) ctx.addIssue({ code: 'custom', message: 'use host:port' });
      parts.forEach((part, n) => {
        const r = brokerAddress.safeParse(part);
        // The part is not quoted: a broker written with credentials in it must not reach a log.
        if (!r.success) ctx.addIssue({ code: 'custom', message: `${parts.length > 1 ? `broker ${n + 1} of its comma-separated list: ` : ''}${brokerHint(part) ?? r.error.issues[0]?.message ?? 'use host:port'}` });
      });
    }),
  )
  .min(1)
  .transform((list) => list.flatMap(brokersOf));

/**
 * The brokers of one item of a broker list: host:port, or several comma-separated, each without
 * the spaces around it. A lone broker with a space after it (docker-compose's env_file keeps one)
 * was refused, "use host:port", where the same broker in a list was taken.
 */
function brokersOf(item: string): string[] {
  return item
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * How to write a broker given in a form Kafka takes elsewhere, where "use host:port" did not say
 * what was wrong (never quoting it: it may hold credentials): several separated by spaces, a
 * listener's URL (`SASL_SSL://host:9092`, from a broker's server.properties), an IPv6 address
 * (kafkajs splits a broker at its colons, and `[::1]:9092` cannot be reached).
 */
function brokerHint(part: string): string | undefined {
  if (/^[a-z][a-z0-9_+.-]*:\/\//i.test(part)) return "use host:port, without a listener's scheme (SASL_SSL://, PLAINTEXT://): TLS and SASL are set by ssl and sasl";
  if (/\s/.test(part)) return 'use host:port, several separated by commas';
  if (/^\[[0-9a-f:.]*\]/i.test(part) || /^[0-9a-f.]*:[0-9a-f.]*:[0-9a-f:.]*$/i.test(part)) return 'use host:port: an IPv6 address cannot be a broker here (the Kafka client splits it at its colons): use a host name for it';
  return undefined;
}

/** The longest Kafka topic name (the broker's own limit). */
export const MAX_TOPIC_LENGTH = 249;

/** Why `name` is no Kafka topic name (what the broker refuses), or undefined. */
export function topicNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) return 'a Kafka topic name: letters, digits, dot, dash or underscore';
  if (name === '.' || name === '..') return 'a Kafka topic name: not . or ..';
  if (name.length > MAX_TOPIC_LENGTH) return `a Kafka topic name: at most ${MAX_TOPIC_LENGTH} characters`;
  return undefined;
}

/**
 * A Kafka topic, checked as the broker checks it. `topics.detections: "bad topic"` was taken,
 * and the run then warned every 5 s that its topics could not be created, dropping every
 * detection and keeping every alert in the outbox, for as long as it ran.
 */
export const kafkaTopic = z.string().superRefine((name, ctx) => {
  const problem = topicNameProblem(name);
  if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
});
