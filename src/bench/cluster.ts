import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { signalChild } from '../core/children.js';
import { makeDirSync } from '../core/files.js';
import { PACKAGE_ROOT } from '../assets/paths.js';
import { createTopicsReady } from '../sinks/kafka.js';

/**
 * The cluster harness of test/cluster/cluster.test.ts and scripts/bench-cluster.ts: worker
 * processes (`argus worker`), a reader of their detections and status messages, and the
 * figures computed from what was read back from Kafka (owner and epoch of every message).
 */

/** What one detections message tells about who ran its frame. */
export interface Seen {
  source: string;
  owner: string;
  epoch: number;
  seq: number;
  dropped: number;
  /** stamps.emitted: when the frame's result was ready, epoch ms (the worker's clock). */
  emitted: number;
  /** stamps.captured */
  captured: number;
  /** When the reader received it, epoch ms. */
  readAt: number;
}

/** A camera run by two owners at once: epochs whose [first, last] emitted intervals overlap. */
export interface Overlap {
  source: string;
  a: { owner: string; epoch: number; from: number; to: number };
  b: { owner: string; epoch: number; from: number; to: number };
}

export interface OwnershipReport {
  /** Epochs seen with more than one owner (impossible unless two workers shared a claim). */
  sharedEpochs: { source: string; epoch: number; owners: string[] }[];
  /** Pairs of epochs of one camera that processed frames in overlapping time. */
  overlaps: Overlap[];
  /** Messages counted (with owner and epoch). */
  messages: number;
  /** (camera, seq, epoch) seen twice (a redelivery, not a double processing; counted apart). */
  redelivered: number;
}

/**
 * Exclusivity, from the messages alone: per camera, every epoch has one owner, and the
 * processing intervals of different epochs do not overlap. Detections of a camera are
 * produced in frame order by its one chain, so an epoch's interval is [first emitted, last emitted].
 */
export function checkOwnership(seen: readonly Seen[]): OwnershipReport {
  const byEpoch = new Map<string, { source: string; epoch: number; owners: Set<string>; from: number; to: number }>();
  const keys = new Set<string>();
  let redelivered = 0;
  for (const m of seen) {
    const k = `${m.source}\u0000${m.epoch}`;
    const fk = `${k}\u0000${m.seq}`;
    if (keys.has(fk)) redelivered++;
    keys.add(fk);
    let e = byEpoch.get(k);
    if (!e) byEpoch.set(k, (e = { source: m.source, epoch: m.epoch, owners: new Set(), from: m.emitted, to: m.emitted }));
    e.owners.add(m.owner);
    e.from = Math.min(e.from, m.emitted);
    e.to = Math.max(e.to, m.emitted);
  }
  const sharedEpochs = [...byEpoch.values()].filter((e) => e.owners.size > 1).map((e) => ({ source: e.source, epoch: e.epoch, owners: [...e.owners] }));
  const overlaps: Overlap[] = [];
  const bySource = new Map<string, { epoch: number; owner: string; from: number; to: number }[]>();
  for (const e of byEpoch.values()) {
    const l = bySource.get(e.source) ?? [];
    l.push({ epoch: e.epoch, owner: [...e.owners][0], from: e.from, to: e.to });
    bySource.set(e.source, l);
  }
  for (const [source, l] of bySource) {
    l.sort((x, y) => x.epoch - y.epoch);
    for (let i = 0; i < l.length; i++) {
      for (let j = i + 1; j < l.length; j++) {
        // Different owners only: one worker restarting a camera (an edit) runs its epochs one after the other.
        if (l[i].owner === l[j].owner) continue;
        if (l[i].from <= l[j].to && l[j].from <= l[i].to) overlaps.push({ source, a: l[i], b: l[j] });
      }
    }
  }
  return { sharedEpochs, overlaps, messages: seen.length, redelivered };
}

/**
 * Frames a camera lost in [from, to] while its epoch ran on: per epoch, the seq numbers missing
 * between its first and last message there, less the frames it dropped on purpose meanwhile
 * (inference busy). Counted over the whole run, not per pair of messages: a frame dropped
 * while the one before it was still in inference is counted in that earlier frame's `dropped`.
 * So the count starts from the `dropped` of the message before the window's first (same
 * epoch): the window's first message already counts the frames dropped while it was in
 * inference, which are inside the window (with no message before it, from its own).
 * An epoch change inside the window counts one (frames were lost across the restart).
 */
export function lostFrames(seen: readonly Seen[], source: string, from: number, to: number): number {
  const all = seen.filter((m) => m.source === source).sort((a, b) => a.epoch - b.epoch || a.seq - b.seq);
  const l = all.filter((m) => m.captured >= from && m.captured <= to);
  let lost = 0;
  let i = 0;
  while (i < l.length) {
    let j = i;
    while (j + 1 < l.length && l[j + 1].epoch === l[i].epoch) j++;
    const run = l.slice(i, j + 1);
    const uniq = new Set(run.map((m) => m.seq)).size;
    const missing = run[run.length - 1].seq - run[0].seq + 1 - uniq;
    const k = all.indexOf(run[0]);
    const base = k > 0 && all[k - 1].epoch === run[0].epoch ? all[k - 1].dropped : run[0].dropped;
    lost += Math.max(0, missing - (run[run.length - 1].dropped - base));
    if (i > 0) lost += 1;
    i = j + 1;
  }
  return lost;
}

/** The first frame of `source` after `t` from an owner other than `not` (its captured stamp), or undefined. */
export function firstFrameAfter(seen: readonly Seen[], source: string, t: number, not?: string): Seen | undefined {
  let best: Seen | undefined;
  for (const m of seen) if (m.source === source && m.captured > t && m.owner !== not && (!best || m.captured < best.captured)) best = m;
  return best;
}

/** The owner of each camera over the last `windowMs` (the latest epoch seen), as of `at`. */
export function currentOwners(seen: readonly Seen[], at: number, windowMs: number): Map<string, { owner: string; epoch: number }> {
  const out = new Map<string, { owner: string; epoch: number }>();
  for (const m of seen) {
    if (m.readAt < at - windowMs) continue;
    const cur = out.get(m.source);
    if (!cur || m.epoch > cur.epoch) out.set(m.source, { owner: m.owner, epoch: m.epoch });
  }
  return out;
}

/** Reads the workers' detections topic from the beginning into `seen`. */
export class Collector {
  readonly seen: Seen[] = [];
  /** Detections messages without owner/epoch (must be none from workers). */
  unowned = 0;
  private consumer: Consumer | undefined;

  constructor(
    private readonly brokers: string[],
    private readonly topic: string,
  ) {}

  async start(): Promise<void> {
    const kafka = new Kafka({ clientId: 'argus-cluster-collector', brokers: this.brokers, logLevel: logLevel.NOTHING });
    // The topic the workers will write (as their sink creates it), so the reader can subscribe first.
    const admin = kafka.admin();
    await admin.connect();
    try {
      if (!(await admin.listTopics()).includes(this.topic)) await createTopicsReady(admin, [{ topic: this.topic, numPartitions: 3, replicationFactor: 1 }], { alreadyMade: true });
    } finally {
      await admin.disconnect();
    }
    this.consumer = kafka.consumer({ groupId: `collector-${this.topic}-${Date.now()}-${Math.random().toString(36).slice(2)}`, maxWaitTimeInMs: 100 });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ message }) => {
        const readAt = Date.now();
        try {
          const m = JSON.parse(message.value?.toString('utf8') ?? '') as { type: string; source: string; owner?: string; epoch?: number; seq: number; dropped: number; stamps: { emitted: number; captured: number } };
          if (m.type !== 'detections') return;
          if (m.owner === undefined || m.epoch === undefined) {
            this.unowned++;
            return;
          }
          this.seen.push({ source: m.source, owner: m.owner, epoch: m.epoch, seq: m.seq, dropped: m.dropped, emitted: m.stamps.emitted, captured: m.stamps.captured, readAt });
        } catch {
          this.unowned++;
        }
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
  }
}

export interface ClusterNames {
  group: string;
  cameras: string;
  owners: string;
  detections: string;
  alerts: string;
  status: string;
}

export function clusterNames(prefix: string): ClusterNames {
  const u = `${prefix}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  return { group: `${u}.workers`, cameras: `${u}.cameras`, owners: `${u}.owners`, detections: `${u}.detections`, alerts: `${u}.alerts`, status: `${u}.status` };
}

/** Writes the workers' YAML into `dir` (W: the worker id, from the environment of each process). */
export function writeWorkerYaml(dir: string, brokers: string[], n: ClusterNames, extra: { slots?: number; sessionTimeoutMs?: number; unreachableAfterMs?: number } = {}): string {
  makeDirSync(dir);
  const file = join(dir, 'worker.yaml');
  writeFileSync(
    file,
    `name: cluster-\${env:W}
model: { warmupRuns: 1, intraOpThreads: 1, resize: fast }
sinks:
  kafka:
    brokers: [${brokers.map((b) => JSON.stringify(b)).join(', ')}]
    topics: { detections: ${n.detections}, alerts: ${n.alerts}, status: ${n.status} }
    lingerMs: 5
cluster:
  workerId: \${env:W}
  group: ${n.group}
  camerasTopic: ${n.cameras}
  ownersTopic: ${n.owners}
  slots: ${extra.slots ?? 32}
  sessionTimeoutMs: ${extra.sessionTimeoutMs ?? 6000}${extra.unreachableAfterMs !== undefined ? `\n  unreachableAfterMs: ${extra.unreachableAfterMs}` : ''}
  labels: { role: "\${env:ROLE,none}" }
outbox: { dir: "${dir}/outbox-\${env:W}" }
alerts: { snapshot: { mode: none } }
server: { host: 127.0.0.1, port: 0 }
`,
  );
  return file;
}

/** Writes a cameras file: each camera an RTSP URL at `fps`. */
export function writeCamerasYaml(file: string, cams: { id: string; uri: string; fps?: number }[]): void {
  writeFileSync(file, `cameras:\n${cams.map((c) => `  - { id: ${c.id}, uri: "${c.uri}", fps: ${c.fps ?? 2} }`).join('\n')}\n`);
}

/** One `argus worker` process. */
export class WorkerProcess {
  child: ChildProcess | undefined;
  log = '';
  exited: Promise<number | null> = Promise.resolve(null);
  /** The HTTP port it listens on (from its log). */
  port = 0;

  constructor(
    readonly id: string,
    private readonly yaml: string,
    private readonly env: NodeJS.ProcessEnv = {},
  ) {}

  start(): void {
    this.log = '';
    this.port = 0;
    const child = spawn(process.execPath, [resolve(PACKAGE_ROOT, 'bin/argus.js'), 'worker', this.yaml, '--no-status'], {
      cwd: PACKAGE_ROOT,
      env: { ...process.env, ...this.env, W: this.id },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const onData = (s: string) => {
      this.log += s;
      if (this.log.length > 2_000_000) this.log = this.log.slice(-1_000_000);
      if (!this.port) {
        const m = /"msg":"listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(this.log);
        if (m) this.port = Number(m[1]);
      }
    };
    child.stdout!.setEncoding('utf8').on('data', onData);
    child.stderr!.setEncoding('utf8').on('data', onData);
    this.exited = new Promise((r) => child.on('exit', (code) => r(code)));
  }

  get pid(): number {
    return this.child?.pid ?? 0;
  }

  signal(sig: NodeJS.Signals): void {
    // (signalChild: never a child without a pid, whose handle's kill hits an arbitrary process.)
    if (this.child) signalChild(this.child, sig);
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT');
    this.signal('SIGTERM');
    const t = setTimeout(() => this.signal('SIGKILL'), 20_000);
    await this.exited;
    clearTimeout(t);
  }

  /** GET /healthz of the worker. */
  async health(): Promise<Record<string, unknown> | undefined> {
    if (!this.port) return undefined;
    try {
      const r = await fetch(`http://127.0.0.1:${this.port}/healthz`);
      return (await r.json()) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }

  /**
   * Detections messages its Kafka sink has dropped (a failed send or a full buffer: by design,
   * counted in `/metrics` as `argus_frames_dropped_total{reason="kafka_buffer"}`); undefined
   * when the worker does not answer.
   */
  async kafkaDropped(): Promise<number | undefined> {
    if (!this.port) return undefined;
    try {
      const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
      const m = /^argus_frames_dropped_total\{[^}]*reason="kafka_buffer"[^}]*\} (\d+)/m.exec(text);
      return m ? Number(m[1]) : 0;
    } catch {
      return undefined;
    }
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(f: () => boolean | Promise<boolean>, ms: number, every = 100): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await f()) return true;
    await sleep(every);
  }
  return f();
}

/** p-th percentile (nearest rank) of numbers. */
export function pct(v: readonly number[], p: number): number {
  if (v.length === 0) return NaN;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
