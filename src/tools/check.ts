import { constants, type Stats } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { firstValueFrom, take, timeout } from 'rxjs';
import { SourceAnalyzer } from '../analytics/analyzer.js';
import { unknownClasses } from '../config/classes.js';
import { loadPipeline } from '../config/load.js';
import type { PipelineConfig, SourceConfig } from '../config/schema.js';
import { withDeadline } from '../core/clock.js';
import { ArgusError, ErrorCodes, type ErrorCode } from '../core/errors.js';
import { deviceProblem, notAnInput } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import { redact, redactDeep } from '../core/redact.js';
import { checksCertificate } from '../core/rtsp-relay.js';
import { forTerminalLines } from '../core/text.js';
import type { Detector } from '../inference/detector.js';
import { H264_ENCODER, missingH264Encoder } from '../annotate/video-writer.js';
import { ffmpegOutputFor } from '../pipeline/detect.js';
import { deadLetterPathOf, httpPort, httpPortIgnored, jsonlPathOf, outboxCluster, jsonlWrites, outboxBeside, outboxDir, outboxEnabled } from '../pipeline/run.js';
import { listenProblem } from '../server/http.js';
import { loadDetector, pipelineBaseDir, resolveSourceUrl, settingOf } from '../pipeline/pipeline.js';
import { annotatePaths, annotateRefusal } from '../sinks/annotate.js';
import { jsonlTargetRefusal } from '../sinks/jsonl.js';
import { FILE as OUTBOX_FILE, otherPipelinesJournal, outboxHeldBy, outboxRoomShortfall, unsafeFolderRefusal } from '../sinks/outbox.js';
import { brokersText, commandKafkaConfig, reachKafka } from '../sinks/kafka-reach.js';
import { sourceKind } from '../sources/ffmpeg-args.js';
import { configuredFfmpegPath, describeFfmpeg, resolveFfmpeg, type FfmpegChoice } from '../sources/ffmpeg-path.js';
import { readCameraCa } from '../sources/rtsp-tap.js';
import { supervisedSource } from '../sources/supervised-source.js';

/** One thing `argus check` looked at: passed, or a problem with its code and the field or file it names. */
export interface CheckItem {
  /** What was checked: `pipeline`, `model`, `ffmpeg`, `source`, `classes`, `sinks`, `annotate`, `outbox`, `server`, `kafka`, `probe`. */
  check: string;
  ok: boolean;
  /** Passed, with what a run warns of at its start (the outbox's volume smaller than its bounds need): said, not counted as a problem. */
  warning?: boolean;
  /** A problem's code (ArgusError). */
  code?: ErrorCode;
  /** The model's item when no session was made within the bound: still being opened as the check ends (said as a note at its exit, not an error). */
  late?: boolean;
  /** The setting (`sources[0].uri`) or file the item is about. */
  field?: string;
  message: string;
  /** `--probe`: the first frame's source size and rate. */
  width?: number;
  height?: number;
  fps?: number;
}

export interface CheckReport {
  file: string;
  ok: boolean;
  problems: number;
  items: CheckItem[];
}

export interface CheckOptions {
  /** Connect to the Kafka brokers (within `timeoutMs`). */
  connect?: boolean;
  /** Read each enabled source's first frame (within `timeoutMs`). */
  probe?: boolean;
  /** Bound on each network step (a broker's answer, a source's first frame, an asset's download), ms. Default CHECK_TIMEOUT_MS. */
  timeoutMs?: number;
  log?: LogFn;
  /** Bound on making the model's session, ms (default MODEL_CHECK_TIMEOUT_MS, or `timeoutMs` when longer). */
  modelTimeoutMs?: number;
  /** Loads the model (tests; default the run's loadDetector). */
  loadDetector?: typeof loadDetector;
  /** The outbox volume's free bytes (tests; default statfs, as the run measures it). */
  freeBytes?: (dir: string) => Promise<number>;
  /** Called once the pipeline file is read (or failed to be): the CLI's start ends there (core/starting.ts). */
  onRead?: () => void;
}

/** Default bound on each of `argus check`'s network steps, ms. */
export const CHECK_TIMEOUT_MS = 10_000;

/**
 * Default bound on making the model's session, ms: a CPU session takes seconds, a TensorRT
 * engine built at a first start minutes (the run waits for it; the check says so and goes on).
 */
export const MODEL_CHECK_TIMEOUT_MS = 120_000;

/** An error as an item: its code (VAP_ERR_INTERNAL for an uncoded one), and its message without the file named before it. */
function problem(check: string, e: unknown, file: string, field?: string): CheckItem {
  const code = e instanceof ArgusError ? e.code : ErrorCodes.INTERNAL;
  const text = redact(e instanceof Error ? e.message : String(e));
  const message = text.startsWith(`${file}: `) ? text.slice(file.length + 2) : text;
  // `field: …` first in the message names the field, where the caller did not.
  const named = field ?? /^([A-Za-z_][\w.]*(?:\[\d+\][\w.]*)*): /.exec(message)?.[1];
  return { check, ok: false, code, ...(named ? { field: named } : {}), message };
}

/**
 * A pipeline's configuration's errors, one item each: the schema's issues are listed one a line
 * (`  sources[0].rate: …`) in one VAP_ERR_CONFIG, as are unknown classes (config/classes.ts).
 */
function configProblems(check: string, e: unknown, file: string): CheckItem[] {
  const one = problem(check, e, file);
  const [head, ...lines] = one.message.split('\n');
  const issues = lines.filter((l) => /^ {2}\S/.test(l));
  // One about the file itself (not there, not YAML) names it.
  if (!(e instanceof ArgusError) || issues.length === 0) return [one.field ? one : { ...one, field: file, message: `${file}: ${one.message}` }];
  return issues.map((l) => {
    const text = l.slice(2);
    const field = /^(\(root\)|[^:\s]+): /.exec(text)?.[1];
    return { check, ok: false, code: e.code, field: field ?? file, message: `${head.replace(/:?$/, ':')} ${text}` };
  });
}

/**
 * Checks a pipeline file without running it: its configuration (every problem, not the first),
 * then what a run needs: the model (its session made, its input shape fitting the decoder),
 * ffmpeg, each source's file, the class names of its zones, lines and rules against the
 * model's labels, the sinks' settings (the JSONL file's folder writable; with `connect`, the
 * Kafka brokers answering); with `probe`, each source's first frame. Every network step is
 * bounded by `timeoutMs`. Never throws for what it finds: each is an item of the report.
 */
export async function checkPipeline(file: string, options: CheckOptions = {}): Promise<CheckReport> {
  const timeoutMs = options.timeoutMs ?? CHECK_TIMEOUT_MS;
  const log: LogFn = options.log ?? (() => {});
  const items: CheckItem[] = [];
  const report = (): CheckReport => {
    const problems = items.filter((i) => !i.ok).length;
    // Every item redacted, the ones said as passed too (a path, a source's url): a secret argus
    // was given, or one from an environment variable named as one, is starred wherever it went.
    return { file, ok: problems === 0, problems, items: redactDeep(items) };
  };
  let config: PipelineConfig;
  try {
    config = await loadPipeline(file);
  } catch (e) {
    items.push(...configProblems('pipeline', e, file));
    return report();
  } finally {
    options.onRead?.();
  }
  const sources = config.sources.filter((s) => s.enabled);
  items.push({ check: 'pipeline', ok: true, field: file, message: `valid: ${config.sources.length} source(s), ${sources.length} enabled${config.cluster ? ', a worker YAML (cluster section: argus worker runs it)' : ''}` });
  const baseDir = pipelineBaseDir(file);
  const setting = (field: string) => settingOf({ configFile: file }, field);
  const fieldOf = (s: SourceConfig) => `sources[${config.sources.indexOf(s)}]`;

  // The model, loaded while ffmpeg and the sources are looked at (an asset's download bounded).
  const signal = AbortSignal.timeout(Math.max(timeoutMs, 60_000));
  // The providers the session could not have (`cuda` on a host without CUDA), as the detector
  // logs each when it falls back: the run does the same, and infers on the next one.
  const fellBack: { provider: string; reason: string }[] = [];
  const modelLog: LogFn = (msg, fields, level) => {
    if (level === 'warn' && typeof fields?.provider === 'string' && typeof fields.reason === 'string') fellBack.push({ provider: fields.provider, reason: fields.reason });
    log(msg, fields, level);
  };
  const loading = (options.loadDetector ?? loadDetector)(config, { baseDir, configFile: file, log: modelLog, signal }).then(
    (d) => ({ detector: d }),
    (e: unknown) => ({ error: e }),
  );

  let ff: FfmpegChoice | undefined;
  try {
    ff = config.ffmpegPath ? await describeFfmpeg(configuredFfmpegPath(config.ffmpegPath, baseDir), 'config ffmpegPath', setting('ffmpegPath')) : await resolveFfmpeg();
    items.push({ check: 'ffmpeg', ok: true, field: config.ffmpegPath ? 'ffmpegPath' : undefined, message: `ffmpeg ${ff.version} at ${ff.path} (${ff.reason})` });
  } catch (e) {
    items.push(problem('ffmpeg', e, file, 'ffmpegPath'));
  }

  const urls = new Map<SourceConfig, string>();
  for (const s of sources) {
    const field = fieldOf(s);
    try {
      const url = await resolveSourceUrl(s, baseDir, ff?.path ?? 'ffmpeg', (m) => log(m), setting(field), signal);
      if (sourceKind(url) === 'file') {
        let st: Stats;
        try {
          st = await stat(url);
          await access(url, constants.R_OK);
        } catch (e) {
          throw new ArgusError(ErrorCodes.SOURCE_OPEN, `${field}.uri: ${url}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
        }
        const bad = notAnInput(st);
        if (bad) throw new ArgusError(bad.code, `${field}.uri: ${url}: ${bad.why}`);
      } else if (sourceKind(url) === 'v4l2') {
        const node = url.replace(/^v4l2:\/\//i, '');
        const why = await deviceProblem(node);
        if (why) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `${field}.uri: ${node}: ${why}`);
      }
      if (checksCertificate(s.uri, s.tls) && s.tls.ca) {
        await readCameraCa(resolve(baseDir, s.tls.ca)).catch((e: Error) => {
          throw new ArgusError(ErrorCodes.CONFIG, `${field}.${e.message}`);
        });
      }
      urls.set(s, url);
      items.push({ check: 'source', ok: true, field: `${field}.uri`, message: `${s.id}: ${sourceKind(url) === 'file' ? `file ${url}, readable` : sourceKind(url) === 'v4l2' ? `device ${url}, a character device argus may open` : `${sourceKind(url)} stream`}` });
    } catch (e) {
      // The field its message names (`sources[0].tls.ca` for the CA file), else the uri.
      const item = problem('source', e, file);
      items.push(item.field ? item : { ...item, field: `${field}.uri` });
    }
  }

  const modelMs = options.modelTimeoutMs ?? Math.max(timeoutMs, MODEL_CHECK_TIMEOUT_MS);
  const loaded = await withDeadline(loading, modelMs, 'late').catch(() => {
    // Released once made: the check goes on without it.
    void loading.then((l) => ('detector' in l ? l.detector.release() : undefined)).catch(() => undefined);
    return { late: true } as const;
  });
  const detector: Detector | undefined = 'detector' in loaded ? loaded.detector : undefined;
  const modelField = config.model.path ? 'model.path' : 'model.manifest';
  try {
    if ('late' in loaded) {
      const trt = config.model.providers.includes('tensorrt');
      items.push({ check: 'model', ok: true, warning: true, late: true, field: trt ? 'model.providers' : modelField, message: `${trt ? 'model.providers' : modelField}: no session made within ${modelMs / 1000} s${trt ? ' (a TensorRT engine is built at a first start, for minutes; later starts read it from its cache)' : ''}: a run waits for it before its first frame; its input, labels and the class names of zones, lines and rules were not checked` });
    } else if (!detector) {
      items.push(problem('model', (loaded as { error: unknown }).error, file, modelField));
    } else {
      const d = detector;
      items.push({ check: 'model', ok: true, field: modelField, message: `${d.manifest.name}: session made on ${d.provider}, input ${d.inputWidth}x${d.inputHeight} fits the ${d.manifest.decoder.type} decoder, ${d.labels.length} labels` });
      for (const f of fellBack) {
        const at = config.model.providers.indexOf(f.provider as (typeof config.model.providers)[number]);
        items.push({ check: 'model', ok: true, warning: true, field: at >= 0 ? `model.providers[${at}]` : 'model.providers', message: `model.providers: ${f.provider} is not available on this host (${f.reason}): a run falls back, as this check did, and infers on ${d.provider}` });
      }
      const unknown = sources.flatMap((s) => unknownClasses(s, d.labels, fieldOf(s)));
      for (const text of unknown) items.push(problem('classes', new ArgusError(ErrorCodes.CONFIG, text), file));
      if (unknown.length === 0) items.push({ check: 'classes', ok: true, message: 'every class of the zones, lines and rules is one of the model\'s labels' });
    }
    const inputs = [...urls.values()].filter((u) => sourceKind(u) === 'file').map((u) => resolve(u));
    await checkSinks(config, file, baseDir, inputs, options.connect === true, timeoutMs, items);
    await checkCluster(config, file, options.connect === true, timeoutMs, items);
    await checkAnnotate(config, baseDir, inputs, ff, timeoutMs, items);
    await checkOutbox(config, baseDir, items, options.freeBytes);
    await checkServer(config, file, timeoutMs, items);
    if (options.probe && ff) {
      for (const [s, url] of urls) items.push(await probeSource(s, url, fieldOf(s), ff.path, detector, config, baseDir, timeoutMs, log, file));
    }
  } finally {
    await detector?.release();
  }
  return report();
}

/**
 * The sinks: the JSONL file as a run opens it (not a source's file or the pipeline, its folder
 * writable, the file writable where it is there; nothing made; that a run appends to it, said), Kafka's brokers (with
 * `connect`: answering). `inputs`: the sources' files, resolved.
 */
async function checkSinks(config: PipelineConfig, file: string, baseDir: string, inputs: readonly string[], connect: boolean, timeoutMs: number, items: CheckItem[]): Promise<void> {
  const jsonl = config.sinks.jsonl?.path;
  if (jsonl && jsonl !== '-') {
    const path = resolve(baseDir, jsonl);
    const refused = jsonlTargetRefusal(path, inputs, file, 'sinks.jsonl.path');
    const folder = refused ? undefined : await unwritableFolder(dirname(path));
    const target = refused || folder ? undefined : await unwritableTarget(path);
    const why = refused?.message ?? (folder ? `sinks.jsonl.path: ${path}: its folder cannot be written (${folder})` : target ? `sinks.jsonl.path: ${path}: ${target}` : undefined);
    items.push(why ? { check: 'sinks', ok: false, code: ErrorCodes.SINK_FILE, field: 'sinks.jsonl.path', message: why } : { check: 'sinks', ok: true, field: 'sinks.jsonl.path', message: `${path}: its folder is writable; ${await appendNote(path)}` });
  }
  const kafka = config.sinks.kafka;
  if (!kafka) return;
  if (!connect) {
    items.push({ check: 'kafka', ok: true, field: 'sinks.kafka.brokers', message: `${brokersText(kafka.brokers)}: well formed (--connect to reach them)` });
    return;
  }
  const { Kafka } = await import('kafkajs');
  const admin = new Kafka(commandKafkaConfig('argus-check', kafka)).admin();
  try {
    await reachKafka(kafka.brokers, admin, { timeoutMs, hint: (refused) => (refused ? 'check sinks.kafka.sasl' : 'check sinks.kafka.brokers and that Kafka runs there') });
    items.push({ check: 'kafka', ok: true, field: 'sinks.kafka.brokers', message: `${brokersText(kafka.brokers)}: answered` });
    // Topics there already with fewer partitions than argus asks for (the run's warning at its
    // start); a worker's cluster topics are checked on the cluster's brokers (checkCluster).
    const { fewerPartitions, sinkWantedPartitions } = await import('../sinks/kafka.js');
    const fewer = await withDeadline(fewerPartitions(admin, sinkWantedPartitions(kafka)), timeoutMs, 'partitions').catch(() => []);
    for (const f of fewer) items.push({ check: 'kafka', ok: true, warning: true, field: 'sinks.kafka.partitions', message: `sinks.kafka: ${f.message}` });
    // Not waited for long: a broker that answered once may still hang its goodbye.
    await withDeadline(admin.disconnect(), timeoutMs, 'disconnect').catch(() => undefined);
  } catch (e) {
    items.push(problem('kafka', e, file, 'sinks.kafka.brokers'));
  }
}

/**
 * A worker YAML's cluster topics, on the brokers and with the TLS and SASL a worker uses for them
 * (cluster.brokers, .ssl, .sasl, else the Kafka sink's): with `connect`, those brokers answer
 * (said apart from the sink's where they differ), a cluster.sessionTimeoutMs outside the brokers'
 * range and a cluster topic there already that deletes records are problems (VAP_ERR_CONFIG: the
 * worker refuses them at start), and a cameras topic with
 * fewer partitions than cluster.slots a warning. Before, only a cluster on the sink's very brokers
 * and credentials was checked, for its partitions only: a `cluster.brokers` nothing answered at
 * passed, and its worker waited for them for ever.
 */
async function checkCluster(config: PipelineConfig, file: string, connect: boolean, timeoutMs: number, items: CheckItem[]): Promise<void> {
  const c = config.cluster;
  if (!c) return;
  const { checkSessionTimeout, clusterBrokers, clusterKafkaAuth } = await import('../cluster/worker.js');
  let brokers: string[];
  try {
    brokers = clusterBrokers(config);
  } catch (e) {
    items.push(problem('kafka', e, file, 'cluster.brokers'));
    return;
  }
  const sinks = config.sinks.kafka;
  const sinkBrokers = sinks !== undefined && c.brokers === undefined && c.ssl === undefined && c.sasl === undefined;
  if (!connect) {
    if (!sinkBrokers) items.push({ check: 'kafka', ok: true, field: 'cluster.brokers', message: `${brokersText(brokers)}: well formed (--connect to reach them)` });
    return;
  }
  // The sink's brokers did not answer: said once, under sinks.kafka.brokers.
  if (sinkBrokers && items.some((i) => i.check === 'kafka' && !i.ok && i.field === 'sinks.kafka.brokers')) return;
  const { Kafka } = await import('kafkajs');
  const { checkClusterTopics } = await import('../cluster/view.js');
  const admin = new Kafka(commandKafkaConfig('argus-check', { brokers, ...clusterKafkaAuth(config) })).admin();
  // What a failure to reach them names: the cluster's own brokers; else the sink's, reached with
  // the cluster's own TLS or SASL where given (the cause, where those brokers answered the sink's
  // check: before, "check cluster.brokers and that Kafka runs there", a field the file lacked,
  // about a broker just said to answer). Refused credentials name the SASL settings in use.
  const saslField = c.sasl !== undefined || !sinks?.sasl ? 'cluster.sasl' : 'sinks.kafka.sasl';
  const own = [c.ssl !== undefined && 'cluster.ssl', c.sasl !== undefined && 'cluster.sasl'].filter((f): f is string => f !== false);
  const sinkAnswered = items.some((i) => i.check === 'kafka' && i.ok && !i.warning && i.field === 'sinks.kafka.brokers');
  const [field, unreached] =
    c.brokers !== undefined
      ? ['cluster.brokers', 'check cluster.brokers and that Kafka runs there']
      : own.length > 0 && sinkAnswered
        ? [own[0], `they answered the Kafka sink (sinks.kafka.brokers) with its TLS and SASL: check ${own.join(' and ')}`]
        : ['sinks.kafka.brokers', `check sinks.kafka.brokers and that Kafka runs there${own.length > 0 ? ` (the cluster reaches them with ${own.join(' and ')})` : ''}`];
  try {
    await reachKafka(brokers, admin, { timeoutMs, hint: (refused) => (refused ? `check ${saslField}` : unreached) });
    if (!sinkBrokers) items.push({ check: 'kafka', ok: true, field: 'cluster.brokers', message: `${brokersText(brokers)}: answered (the cluster's brokers)` });
    // The worker's own refusals at start (a session timeout the group coordinator would refuse at
    // every join, a cluster topic that deletes records) and too few slots, its warning: read side
    // by side, within one --timeout (a broker that answered and then stalls costs it once). What
    // is not read within it is left to a worker's start, which says what it finds.
    const [session, topics] = await Promise.allSettled([
      withDeadline(checkSessionTimeout(admin, c.sessionTimeoutMs), timeoutMs, 'session timeout'),
      withDeadline(checkClusterTopics(admin, { cameras: c.camerasTopic, owners: c.ownersTopic, slots: c.slots }), timeoutMs, 'cluster topics'),
    ]);
    for (const r of [session, topics]) if (r.status === 'rejected' && r.reason instanceof ArgusError && r.reason.code === ErrorCodes.CONFIG) items.push(problem('kafka', r.reason, file));
    if (topics.status === 'fulfilled') for (const f of topics.value) items.push({ check: 'kafka', ok: true, warning: true, field: 'cluster.slots', message: f });
    await withDeadline(admin.disconnect(), timeoutMs, 'disconnect').catch(() => undefined);
  } catch (e) {
    items.push(problem('kafka', e, file, field));
  }
}

/**
 * The annotated video (sinks.annotate), as the run opens it: each source's file refused as the
 * run refuses it (annotateRefusal: not an H.264 container, a source's file, the JSONL sink's, a
 * folder), its folder (or the nearest one above it, which the run makes it in) writable, the file
 * writable where it is there; and the ffmpeg argus uses has the H.264 encoder the video is
 * written with (missingH264Encoder, within `timeoutMs`). Nothing is made.
 */
async function checkAnnotate(config: PipelineConfig, baseDir: string, inputs: readonly string[], ff: FfmpegChoice | undefined, timeoutMs: number, items: CheckItem[]): Promise<void> {
  const a = config.sinks.annotate;
  if (!a) return;
  const field = 'sinks.annotate.path';
  const fail = (message: string): void => void items.push({ check: 'annotate', ok: false, code: ErrorCodes.SINK_FILE, field, message });
  const paths = annotatePaths(a.path, config.sources.filter((s) => s.enabled).map((s) => s.id), baseDir);
  const refused = annotateRefusal({ inputs, writtenBy: jsonlWrites(jsonlPathOf(config, { baseDir })) }, paths);
  if (refused) return fail(refused.message);
  for (const file of new Set(paths.values())) {
    const above = await nearestExisting(dirname(file));
    const folder = await unwritableFolder(above);
    if (folder) return fail(`${field}: ${file}: its folder cannot be ${above === dirname(file) ? 'written' : 'made'} (${folder})`);
    const target = await unwritableTarget(file);
    if (target) return fail(`${field}: ${file}: ${target}`);
  }
  if (ff) {
    const missing = await missingH264Encoder(ff.path, timeoutMs);
    if (missing) return void items.push({ check: 'annotate', ok: false, code: ErrorCodes.SINK_FILE, field: config.ffmpegPath ? 'ffmpegPath' : field, message: missing });
  }
  items.push({ check: 'annotate', ok: true, field, message: `${[...new Set(paths.values())].join(', ')}: writable${ff ? `, ${H264_ENCODER} in ${ff.path}` : ''}` });
}

/**
 * The server's address, as the run listens on it (server.host, and $ARGUS_HTTP_PORT or
 * server.port): listened on and closed at once (listenProblem), so a port another program holds,
 * a privileged one as non-root, or a host that is not this machine's is said as the run would
 * stop with it (VAP_ERR_SERVER_LISTEN), naming server.port or server.host.
 */
async function checkServer(config: PipelineConfig, file: string, timeoutMs: number, items: CheckItem[]): Promise<void> {
  const server = config.server;
  // The variable alone serves nothing: the run warns of it at its start (a health check asking
  // that port is never answered), and so does the check.
  const ignored = httpPortIgnored(config, process.env, file);
  if (ignored) return void items.push({ check: 'server', ok: true, warning: true, message: ignored });
  if (!server) return;
  let port: number;
  try {
    port = httpPort(process.env, server.port);
  } catch (e) {
    return void items.push(problem('server', e, file, 'server.port'));
  }
  const refused = await listenProblem(server.host, port, timeoutMs);
  const code = (refused?.cause as NodeJS.ErrnoException | undefined)?.code;
  const field = code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ETIMEDOUT' ? 'server.host' : 'server.port';
  if (refused) return void items.push(problem('server', refused, file, field));
  items.push({ check: 'server', ok: true, field: 'server.port', message: port === 0 ? `${server.host}: a free port is picked at start` : `${server.host}:${port}: free to listen on` });
}

/**
 * The outbox folder (when the run keeps one: outbox.enabled, a Kafka sink by default) as the run
 * opens it: the folder (or the nearest one above it, which the run makes it in) writable, not
 * one another user could plant alerts in (the run refuses it: unsafeFolder), its lock not held
 * by a running argus (the run refuses then: outboxHeldBy), and the room its volume has for
 * three times outbox.maxBytes and the dead-letter file (the run warns: outboxRoomShortfall,
 * a warning here too). Nothing is made.
 */
async function checkOutbox(config: PipelineConfig, baseDir: string, items: CheckItem[], freeBytes?: (dir: string) => Promise<number>): Promise<void> {
  if (!outboxEnabled(config)) return;
  const dir = outboxDir(config, baseDir);
  const field = 'outbox.dir';
  const fail = (message: string): void => void items.push({ check: 'outbox', ok: false, code: ErrorCodes.OUTBOX, field, message: `${field}: ${message}` });
  const st = await stat(dir).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : e));
  if (st instanceof Error) return fail(`${dir}: ${st.code ?? st.message}`);
  if (st && !st.isDirectory()) return fail(`${dir} is not a folder`);
  const cannot = await unwritableFolder(st ? dir : await nearestExisting(dir));
  if (cannot) return fail(`${dir}: ${st ? 'cannot be written' : 'cannot be made'} (${cannot})`);
  if (st) {
    const unsafe = await unsafeFolderRefusal(dir).catch(() => undefined);
    if (unsafe) return fail(unsafe.replace(/^outbox: /, ''));
    const held = await outboxHeldBy(dir);
    if (held) return fail(held.replace(/^outbox: /, ''));
    const other = await otherPipelinesJournal(dir, config.name, outboxCluster(config));
    if (other) return fail(other);
  }
  const journal = st ? ((await stat(join(dir, OUTBOX_FILE)).catch(() => undefined))?.size ?? 0) : 0;
  const short = await outboxRoomShortfall({ dir, maxBytes: config.outbox.maxBytes, beside: outboxBeside(config, deadLetterPathOf(config, baseDir)), freeBytes }, journal).catch(() => undefined);
  if (short) items.push({ check: 'outbox', ok: true, warning: true, field: 'outbox.maxBytes', message: `outbox.maxBytes: a run warns at its start: ${short.message.replace(/^outbox: /, '')}` });
  else items.push({ check: 'outbox', ok: true, field, message: `${dir}: ${st ? 'writable, held by no other argus' : 'made by the run (its folder writable)'}, room for its bounds` });
}

/**
 * `path`, or the nearest path above it that is there (a folder, or a file where a folder would
 * have to be made, which unwritableFolder refuses): where a run's makeDir starts making folders.
 */
async function nearestExisting(path: string): Promise<string> {
  let p = resolve(path);
  while (dirname(p) !== p && (await stat(p).then(() => false, (e: NodeJS.ErrnoException) => e.code === 'ENOENT' || e.code === 'ENOTDIR'))) p = dirname(p);
  return p;
}

/**
 * Why this process could not make a file in `dir`, or undefined. The JSONL sink makes no
 * folder: a missing one fails the run's start, so it fails the check (nothing is made here).
 */
async function unwritableFolder(dir: string): Promise<string | undefined> {
  try {
    if (!(await stat(dir)).isDirectory()) return `${dir} is not a folder`;
    await access(dir, constants.W_OK);
    return undefined;
  } catch (e) {
    return `${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
}

/**
 * How a run writes the JSONL file: appended to, each start's lines after the last's (a message's
 * `run` tells the starts apart), what is there kept. (It said only that the folder was writable,
 * and a reader of the check could not tell a restart's lines would follow the earlier run's.)
 */
async function appendNote(path: string): Promise<string> {
  const st = await stat(path).catch(() => undefined);
  const how = "each start's lines after the last start's (a message's run tells the starts apart)";
  if (!st) return `not there yet: a run makes it, and later runs append to it, ${how}`;
  return st.isFile() ? `a run appends to it (${st.size} bytes there now, kept), ${how}` : 'a run writes to it as it is (not a regular file: a named pipe or a device)';
}

/**
 * Why the run could not open `path` for writing where it is there already (a folder, a file
 * this process may not write: EISDIR, EACCES at the run's start), or undefined (not there: the
 * run makes it; a named pipe or a device: opened as they are).
 */
async function unwritableTarget(path: string): Promise<string | undefined> {
  let st: Stats;
  try {
    st = await stat(path);
  } catch {
    return undefined;
  }
  if (st.isDirectory()) return 'is a folder, not a file';
  try {
    await access(path, constants.W_OK);
    return undefined;
  } catch (e) {
    return `cannot be written (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
}

/** The frames a probe asks ffmpeg for when the model did not load: any size does to see a first frame. */
const PROBE_OUTPUT = { width: 64, height: 64, pixelFormat: 'rgb24', align: 'center', padValue: 114 } as const;

/**
 * A source's first frame, as a run would read it (its supervised ffmpeg), within `timeoutMs`:
 * its size and rate, or VAP_ERR_SOURCE_TIMEOUT (or the source's own error: it is tried once
 * more at most, not for ever); then its zones and lines placed on it (a pixel point outside
 * that frame: VAP_ERR_CONFIG naming the point, as the run fails the source at its first frame).
 */
async function probeSource(s: SourceConfig, url: string, field: string, ffmpegPath: string, detector: Detector | undefined, config: PipelineConfig, baseDir: string, timeoutMs: number, log: LogFn, file: string): Promise<CheckItem> {
  let info: { width: number; height: number; fps?: number } | undefined;
  const frames$ = supervisedSource({
    id: s.id,
    input: { url, kind: sourceKind(url), rate: s.rate, loop: false, fps: s.fps, rtspTransport: s.rtspTransport, cameraClock: s.cameraClock, sendCredentialsTo: s.sendCredentialsTo, inputArgs: s.inputArgs, decode: s.decode, tls: { ...s.tls, ca: s.tls.ca && resolve(baseDir, s.tls.ca) } },
    relayLog: (msg, fields, level) => log(`source ${s.id}: ${msg}`, { source: s.id, ...fields }, level),
    output: detector ? ffmpegOutputFor(detector, config.model.resize) : PROBE_OUTPUT,
    ffmpegPath,
    reconnect: { ...s.reconnect, maxAttempts: 1 },
    watchdog: { ...s.watchdog, startTimeoutMs: Math.min(s.watchdog.startTimeoutMs, timeoutMs) },
    onStreamInfo: (i) => (info = { width: i.width, height: i.height, fps: i.fps }),
  });
  try {
    const frame = await firstValueFrom(
      frames$.pipe(
        take(1),
        timeout({ first: timeoutMs, with: () => Promise.reject(new ArgusError(ErrorCodes.SOURCE_TIMEOUT, `${field}: no first frame within ${timeoutMs / 1000} s`)) }),
      ),
    );
    frame.release();
    // The zones and lines placed on that frame as a run places them on its first: a pixel point
    // outside it fails the source there (VAP_ERR_CONFIG), which the probe knows by now.
    if (info && detector && unknownClasses(s, detector.labels, field).length === 0) {
      try {
        new SourceAnalyzer(s, detector.labels, field, (m) => log(m, { source: s.id }, 'warn')).init(info.width, info.height);
      } catch (e) {
        return problem('probe', e, file);
      }
    }
    const size = info ? `${info.width}x${info.height}` : 'size unknown';
    return { check: 'probe', ok: true, field: `${field}.uri`, message: `${s.id}: first frame ${size}${info?.fps ? ` at ${info.fps} fps` : ''}`, ...(info ? { width: info.width, height: info.height } : {}), ...(info?.fps ? { fps: info.fps } : {}) };
  } catch (e) {
    return problem('probe', e, file, `${field}.uri`);
  }
}

/** The report as lines for a terminal: one per item, problems with their code, then the count. */
export function formatCheck(r: CheckReport): string {
  // A problem whose message does not name the field it is about says it first (`model.path: model "…": file not found`).
  const where = (i: CheckItem) => (!i.ok && i.field && !i.message.includes(i.field) ? `${i.field}: ` : '');
  const lines = r.items.map((i) => `${i.ok ? (i.warning ? 'WARNING' : 'ok     ') : 'PROBLEM'} ${i.check.padEnd(8)} ${i.ok ? '' : `${i.code}: `}${forTerminalLines(where(i) + i.message)}`);
  lines.push(r.ok ? `${r.file}: no problems found` : `${r.file}: ${r.problems} problem(s)`);
  return lines.map(forTerminalLines).join('\n') + '\n';
}
