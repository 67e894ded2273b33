import { createHash, randomUUID } from 'node:crypto';
import { access, copyFile, link, lstat, open, readdir, readFile, readlink, realpath, rename, rm, stat, statfs, utimes, writeFile, type FileHandle } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { makeDir } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import type { SnapshotOmitted } from '../analytics/published.js';
import type { AlertStore } from './kafka.js';
import type { Message } from './message.js';

/** The outbox folder's mode when argus makes it, and its files': its user's alone (the umask may take more away). */
export const PRIVATE_DIR = 0o700;
export const PRIVATE_FILE = 0o600;

/**
 * Why the outbox folder is not safe to journal in, or undefined: writable by every user, or
 * owned by a user other than argus's and root who could have made it there first or put
 * another in its place: a folder in a folder every user may write (`/tmp/argus-lobby`), or in
 * one of that user's own. Its journal is trusted at start: each record in it goes to Kafka as
 * an alert argus raised. A folder of another user's in a folder only root or argus's user can
 * write was given to it by them: a Docker bind mount owned by the host's user with argus
 * running as root in the container (`-v ./data:/data`, the host's `mkdir data` first), a
 * folder the administrator chowned. (Not on systems without uids.)
 */
export async function unsafeFolder(dir: string): Promise<string | undefined> {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  // A link another user made (in /tmp, say) is theirs to point elsewhere later.
  const entry = await lstat(dir);
  if (entry.isSymbolicLink() && entry.uid !== uid && entry.uid !== 0) return `is a link that belongs to another user (uid ${entry.uid}; argus runs as ${uid}), who can point it elsewhere`;
  const real = await realpath(dir);
  const st = await stat(real);
  if ((st.mode & 0o002) !== 0) return `is writable by every user (mode ${(st.mode & 0o7777).toString(8)})`;
  if (st.uid !== uid && st.uid !== 0) {
    const parent = await stat(dirname(real));
    if ((parent.mode & 0o002) !== 0 || parent.uid === st.uid) return `belongs to another user (uid ${st.uid}; argus runs as ${uid}), who could have made it there`;
  }
  return undefined;
}

/** What the outbox refuses an unsafe folder with (unsafeFolder), or undefined: said by the run at open, and by `argus check` beforehand. */
export async function unsafeFolderRefusal(dir: string): Promise<string | undefined> {
  const unsafe = await unsafeFolder(dir);
  return unsafe && `outbox: ${dir} ${unsafe}: another local user could plant alerts in its journal (replayed to Kafka at start), read it, or point its files elsewhere by links; use a folder of argus's own user (chmod o-w, chown), or another outbox.dir`;
}

/**
 * The durable alert outbox: every alert (and the latest status of each source) is appended to
 * a journal on local disk, and fsynced, before any sink sees it; it is removed only once the
 * broker has acknowledged it (or it was parked in the dead-letter file). On start, what the
 * journal still holds is replayed. A `kill -9`, a crash or a power cut therefore loses no
 * alert that was raised: delivery is at least once, and consumers de-duplicate by alert id.
 *
 * Format: one record a line, `<8 hex of sha1(json)> <json>\n`; json is
 * `{"op":"put","key","kind","source","at","value"}` or `{"op":"ack","key","at"}`. A torn last
 * line (the process died mid-write) or a damaged one fails its checksum and is skipped. The
 * file is rewritten with only the live records (write to a temporary file, fsync, rename) when
 * it has grown past twice the live size, and at every open.
 */

export interface OutboxOptions {
  /** Folder of the journal (created if missing). */
  dir: string;
  /** Live records' bytes at most; beyond it the oldest alerts are dropped, each logged as an error. */
  maxBytes: number;
  /** Records older than this are dropped (logged as errors), ms. */
  maxAgeMs: number;
  /** fsync every write (default true). Off trades durability on power loss for speed; a process crash still loses nothing. */
  fsync: boolean;
  log?: LogFn;
  /** Clock (tests). */
  now?: () => number;
  /** This boot's id (tests; default /proc/sys/kernel/random/boot_id). */
  bootId?: string;
  /** How long close() waits for the disk to finish the journal's writes, ms (default 5000). */
  closeWaitMs?: number;
  /** Monotonic clock, ms (tests; default performance.now): what records age by within a run. */
  monotonic?: () => number;
  /**
   * The pipeline whose journal this is (its name): written in the folder (`pipeline`), and a
   * folder another pipeline wrote its name in is refused while its journal holds undelivered
   * records (they are that pipeline's, for its Kafka). Unset: not checked (tools, adoption).
   */
  owner?: string;
  /**
   * An `argus worker`'s cluster (its group, alert topic and brokers: see outboxCluster), written
   * beside `owner`: a folder another worker of the same cluster named as its own is taken (its
   * alerts go to the same Kafka: a worker whose machine died is replayed by one started on its
   * folder), one of another cluster's worker refused as another pipeline's.
   */
  cluster?: string;
  /**
   * A lock whose holder argus cannot check (another host's, or another pid namespace's: a
   * container sharing the volume) is stale once its heartbeat is older than this, ms (default
   * 20 000; the holder touches it every quarter of it).
   */
  lockStaleMs?: number;
  /**
   * Files that grow beside the journal, up to `maxBytes` each (the Kafka dead-letter file, in the
   * outbox folder by default): where one is on the outbox's volume, the room its bounds need
   * counts it (see checkRoom). `field`: the setting that bounds it, as the warning names it.
   */
  beside?: readonly { path: string; maxBytes: number; field: string }[];
  /** The volume's free bytes for `dir` (tests; default statfs: blocks available to argus's user). */
  freeBytes?: (dir: string) => Promise<number>;
  /** How often an open the disk holds up says so, ms (tests; default 30 000). */
  openSayMs?: number;
  /** Whether open says a shortfall of room (checkRoom). Default true; false for a folder only read and emptied (adoptOnce). */
  checkRoom?: boolean;
  /** Read-only at open: how often it looks whether the volume is writable again, ms (tests; default 30 000, see watchWritable). */
  writableCheckMs?: number;
}

export type OutboxKind = 'alert' | 'status';

export interface OutboxRecord {
  key: string;
  kind: OutboxKind;
  source: string;
  /** When it was journaled, epoch ms. */
  at: number;
  /** The boot it was journaled in (its id) and the monotonic clock then, ms since boot: its age across restarts within one boot, whatever the wall clock did. */
  boot?: string;
  up?: number;
  /** The message JSON exactly as it was published. */
  value: string;
}

export interface OutboxStats {
  /** Records not yet acknowledged. */
  pending: number;
  /** Bytes of the pending records. */
  pendingBytes: number;
  appended: number;
  acked: number;
  /** Records found at open (replayed). */
  recovered: number;
  /** Lines skipped at open because their checksum failed (a torn tail, a damaged disk), or their record is of a form this version does not read. */
  corrupt: number;
  /** Of those, damaged ones (not a torn last line): undelivered alerts may be among them. */
  damaged: number;
  /** Where the journal as it was is kept when it had damaged lines (it is rewritten without them). */
  damagedCopy?: string;
  /**
   * Alerts dropped for the size or age bound (only ever grows: a Prometheus counter). Those the
   * Kafka sink delivered after all (`deliveredAfterDrop`) or that were journaled again in full
   * (`rejournaledAfterDrop`) are not lost: `Outbox.lostToBounds` is what is.
   */
  evicted: number;
  /** Alerts dropped for a bound that the Kafka sink delivered after all, from its send buffer. */
  deliveredAfterDrop: number;
  /** Alerts dropped for a bound as they were raised (before their snapshot was done), then journaled again in full. */
  rejournaledAfterDrop: number;
  /** Alerts larger than what maxBytes left when they were journaled: kept over the bound (the newest alert is never dropped by it). */
  oversized: number;
  /** Writes that failed (disk full, I/O error): the message was still handed to the sinks. */
  writeErrors: number;
  /** Messages handed to the sinks before their write was confirmed: the disk took longer than JOURNAL_WAIT_MS (frozen, hung). */
  slowWrites: number;
  /**
   * The volume refuses the journal's writes as read-only (the errno, EROFS): found so at open (the
   * run goes on without the journal), or a write refused so since the journal last held every
   * record (a volume remounted read-only after disk errors). The exit names it (it said "its
   * writes failed: a full disk?").
   */
  readOnly?: string;
  /**
   * Read-only: alerts found in the journal there that are older than maxAgeHours (at open, or aged
   * since), not replayed, and left in it (nothing can be taken out there): counted by each run that
   * finds them, never in `evicted` (the lost); the first start on a writable volume drops them and
   * counts them lost, once. (Each read-only start counted them lost again, exit status 3.)
   */
  agedOnDisk?: number;
  /** Read-only at open, and the volume found writable since (watchWritable): a restart journals the alerts again. */
  writableAgain?: boolean;
}

/**
 * What an alert journaled when raised says of its snapshot (Publisher.reserve): that record is
 * replayed only if argus stopped before the alert with its snapshot was on disk, which says
 * nothing of the snapshot itself. The alert may have been handed to Kafka in full already (the
 * disk hung or was full: it goes on unjournaled after JOURNAL_WAIT_MS, or at once on a failed
 * write), or its snapshot may have been rendered a moment before the crash. (It said "argus
 * stopped … before the snapshot was rendered", reason `failed`: after a hung disk and a crash, a
 * consumer that had the alert with its picture was then told the picture was never rendered.)
 */
export const RESERVED_OMITTED: SnapshotOmitted = {
  reason: 'unknown',
  detail: 'journaled when the alert was raised, before its snapshot was known; argus stopped (a crash, kill -9 or power cut) before the alert with its snapshot was on disk, and it was replayed from the outbox without it: the snapshot may never have been rendered, or this alert may have been delivered with it already (same id)',
};

/** RESERVED_OMITTED as releases before it wrote it into a record (its JSON, exactly), and what replaces it at open. */
const RESERVED_BEFORE = '"snapshotOmitted":{"reason":"failed","detail":"argus stopped (a crash, kill -9 or power cut) before the snapshot was rendered; replayed from the outbox without it"}';
const RESERVED_NOW = `"snapshotOmitted":${JSON.stringify(RESERVED_OMITTED)}`;

/** An alert record an older release journaled when raised, saying what RESERVED_OMITTED says now; any other as it is. */
function reservedSaidTruly(r: OutboxRecord): OutboxRecord {
  return r.kind === 'alert' && r.value.includes(RESERVED_BEFORE) ? { ...r, value: r.value.replace(RESERVED_BEFORE, RESERVED_NOW) } : r;
}

/** The journal's name in the outbox folder. */
export const FILE = 'outbox.log';
/** How long an alert waits for the disk to confirm its journal write before it is handed on anyway, ms. */
export const JOURNAL_WAIT_MS = 1000;
/** While the open has not finished, it says so this often, ms (longer than the default lock wait, LOCK_STALE_MS, which says itself). */
const OPEN_SAY_MS = 30_000;
/** How long close() waits for the disk, ms. */
const CLOSE_WAIT_MS = 5000;
/**
 * Writes every byte of `b` to `f` (a write may take only part: a full disk, a file size limit;
 * one that takes nothing is ENOSPC), each part counted in `took` as it goes; its length.
 */
async function writeFully(f: FileHandle, b: Buffer, took?: (n: number) => void): Promise<number> {
  let off = 0;
  while (off < b.length) {
    const { bytesWritten } = await f.write(b, off, b.length - off);
    if (bytesWritten <= 0) throw Object.assign(new Error('short write: the disk took no more bytes'), { code: 'ENOSPC' });
    off += bytesWritten;
    took?.(bytesWritten);
  }
  return b.length;
}

/**
 * Opens a file of the outbox folder for reading without waiting, and only if it is a regular
 * file: a named pipe there (the journal, the lock) was opened by a thread of libuv's pool that
 * then waited for a writer for good; the start hung, and no signal ended argus (its exit waits
 * for that thread), only SIGKILL. Anything else is an error saying so.
 */
async function openRegular(path: string): Promise<FileHandle> {
  const fh = await open(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  if (!(await fh.stat()).isFile()) {
    await fh.close();
    throw new Error('it is not a regular file: a named pipe, a device?');
  }
  return fh;
}

/** A lock file's text ('' if it cannot be read, or is no regular file: see openRegular). */
async function readLockText(path: string): Promise<string> {
  const fh = await openRegular(path).catch(() => undefined);
  if (!fh) return '';
  try {
    return await fh.readFile('utf8');
  } catch {
    return '';
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Damaged journals kept (the newest). */
const DAMAGED_KEPT = 3;
/** The names keepDamaged gives (an ISO time, `:` and `.` as `-`, and a number when two come in one ms). */
const DAMAGED_NAME = /^outbox\.damaged-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z(-\d)?\.log$/;

/** The journal of `dir` kept under a name of its own (a hard link, else a copy), the oldest beyond DAMAGED_KEPT removed; its path, or undefined if that failed. */
async function keepDamaged(dir: string): Promise<string | undefined> {
  const path = join(dir, FILE);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  let kept: string | undefined;
  for (let i = 0; i < 10 && !kept; i++) {
    const name = join(dir, `outbox.damaged-${stamp}${i ? `-${i}` : ''}.log`);
    try {
      await link(path, name).catch((e: NodeJS.ErrnoException) => (e.code === 'EEXIST' ? Promise.reject(e) : copyFile(path, name, fsConstants.COPYFILE_EXCL)));
      kept = name;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
    }
  }
  if (!kept) return undefined;
  // Only names this makes: a file named by hand stays, and takes none of the places.
  const old = (await readdir(dir).catch(() => [] as string[])).filter((f) => DAMAGED_NAME.test(f)).sort();
  for (const f of old.slice(0, Math.max(0, old.length - DAMAGED_KEPT))) await rm(join(dir, f), { force: true }).catch(() => undefined);
  return kept;
}

/**
 * Writes a small mark file of the outbox folder (`adopted`, `pipeline`): a new file renamed over
 * its name, so a named pipe there is replaced, not opened (a plain write's open waited for a
 * reader for good, and the start with it), and a crash leaves the old mark or the new one.
 * Failures are ignored (the mark is written again at the next start).
 */
async function writeMark(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    await rm(tmp, { force: true });
    await writeFile(tmp, text, { mode: PRIVATE_FILE, flag: 'wx' });
    await rename(tmp, path);
  } catch {
    await rm(tmp, { force: true }).catch(() => undefined);
  }
}

/** A failed compaction is tried again after this long at the soonest, ms. */
const COMPACT_RETRY_MS = 10_000;
const LOCK = 'outbox.lock';
/** The name of the pipeline whose journal the folder holds (OutboxOptions.owner). */
const OWNER = 'pipeline';
/** Written once the journals of the folders older releases used were taken over (Outbox.adoptOnce). */
const ADOPTED = 'adopted';

/**
 * The pipeline an outbox folder's mark (OWNER) names as its journal's, and its worker's cluster
 * (OutboxOptions.cluster); `name` undefined: none (an older release's folder, or a tool's), or
 * unreadable (no regular file: see openRegular).
 */
async function ownerOf(dir: string): Promise<{ name?: string; cluster?: string }> {
  const fh = await openRegular(join(dir, OWNER)).catch(() => undefined);
  const text = fh ? await fh.readFile('utf8').catch(() => '') : '';
  await fh?.close().catch(() => undefined);
  try {
    const o = JSON.parse(text) as { name?: unknown; cluster?: unknown };
    if (typeof o.name !== 'string') return {};
    return { name: o.name, ...(typeof o.cluster === 'string' ? { cluster: o.cluster } : {}) };
  } catch {
    return {};
  }
}

/**
 * Why pipeline `name` (a worker of `cluster`, when given) must not take the outbox folder `dir`
 * whose mark is `mark` (ownerOf) and whose journal holds `records`, or undefined: the mark names
 * another pipeline, not a worker of the same cluster, and its journal still holds undelivered
 * records, which are that pipeline's, for its Kafka. The run refuses the folder with it
 * (Outbox.claim) and `argus check` reports it (otherPipelinesJournal).
 */
function foreignJournal(dir: string, mark: { name?: string; cluster?: string }, name: string, cluster: string | undefined, records: Iterable<OutboxRecord>): string | undefined {
  const named = mark.name;
  if (named === undefined || named === name || (cluster !== undefined && mark.cluster === cluster)) return undefined;
  let alerts = 0;
  let all = 0;
  for (const r of records) {
    all++;
    if (r.kind === 'alert') alerts++;
  }
  if (all === 0) return undefined;
  return `${dir} holds the journal of the pipeline ${JSON.stringify(named)} (${alerts} undelivered alert(s), ${all - alerts} status(es)), for its Kafka; this pipeline is ${JSON.stringify(name)}: give it its own outbox.dir (or, if it is ${JSON.stringify(named)} renamed, run it once under its old name to deliver them, or remove ${join(dir, OWNER)})`;
}

/**
 * Why a run of pipeline `name` (a worker of `cluster`) would refuse the outbox folder `dir` as
 * another pipeline's (foreignJournal), or undefined; for `argus check`.
 */
export async function otherPipelinesJournal(dir: string, name: string, cluster?: string): Promise<string | undefined> {
  const mark = await ownerOf(dir);
  if (mark.name === undefined || mark.name === name) return undefined;
  return foreignJournal(dir, mark, name, cluster, await readOutbox(dir).catch(() => []));
}

/**
 * The lock of a folder on a read-only volume, where no lock file can be made: an abstract Unix
 * socket (Linux; no file, nothing written) named after the folder's device and inode, bound by
 * the run that reads the journal there while it runs (and by a writable start until its lock file
 * is made, so that the two cannot both start on one folder: see lock). The kernel lets one process bind a name and
 * frees it when that process ends, whatever ends it (kill -9 too): no stale lock to judge. (Before,
 * two argus on one read-only folder both replayed what its journal held: every consumer got those
 * alerts twice, and more at each start.) It is seen by the processes of this host in the same
 * network namespace (two containers sharing the volume, each with its own network, do not see
 * each other's), and any local user can bind such a name: one who binds it first makes the start
 * refuse the folder as in use (said, naming who answers), never replay it twice.
 */
function guardName(st: { dev: number; ino: number }): string {
  return `\0argus-outbox-${st.dev}-${st.ino}`;
}

/** How long a holder of a read-only folder's guard has to say who it is, ms (a frozen one holds it all the same). */
const GUARD_ANSWER_MS = 3000;

/**
 * Who holds the read-only guard of the folder `dir` (guardName), as its holder says it ("pid N, a
 * run on the read-only volume"), or undefined: none holds it (or not Linux, or no such folder).
 */
async function guardHolder(dir: string): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined;
  const st = await stat(dir).catch(() => undefined);
  if (!st) return undefined;
  return new Promise((done) => {
    const c = connect(guardName(st));
    let text = '';
    const t = setTimeout(() => {
      c.destroy();
      done('a process that does not answer (frozen?), a run on the read-only volume');
    }, GUARD_ANSWER_MS);
    t.unref();
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      if (text.length < 200) text += d;
    });
    c.on('end', () => {
      clearTimeout(t);
      // (Its words go into the log: any local user can hold such a name, so no control characters.)
      done(text.replace(/[^\x20-\x7e]/g, '?').trim() || 'a process that did not say who it is');
    });
    c.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(t);
      // No listener under the name (ECONNREFUSED): none holds it.
      done(e.code === 'ECONNREFUSED' || e.code === 'ENOENT' ? undefined : `a process that answers ${e.code ?? e.message}`);
    });
  });
}

/**
 * Binds the guard of the folder `dir` for this process: the server, or who holds it already
 * (guardHolder's words; `words`: what this one answers, asked). A bind that fails otherwise (not Linux, no such folder) holds
 * nothing and refuses nothing: undefined.
 */
async function holdGuard(dir: string, words: () => string): Promise<Server | { heldBy: string } | undefined> {
  if (process.platform !== 'linux') return undefined;
  const st = await stat(dir).catch(() => undefined);
  if (!st) return undefined;
  const server = createServer((c) => {
    c.on('error', () => undefined);
    c.end(words());
  });
  const bound = await new Promise<NodeJS.ErrnoException | undefined>((done) => {
    server.once('error', done);
    server.listen(guardName(st), () => done(undefined));
  });
  if (!bound) {
    server.unref();
    return server;
  }
  if (bound.code !== 'EADDRINUSE') return undefined;
  return { heldBy: (await guardHolder(dir)) ?? '' };
}

/** How often a run that found its outbox read-only looks whether it is writable again, ms (Outbox.watchWritable). */
const WRITABLE_CHECK_MS = 30_000;

/** After taking over a stale lock, how long to wait before checking it is still this opening's (see takeLock). */
const TAKEOVER_SETTLE_MS = 250;
/** Folders this process has open (the pid lock cannot tell two runs of one process apart). */
const openHere = new Set<string>();

/** What checkRoom lets the volume lack: the lock's and the folder's marks' blocks. */
const ROOM_SLACK = 64 * 1024;

/** The nearest folder that exists at or above `dir` (a file not made yet is on its volume). */
async function nearestFolder(dir: string): Promise<{ dev: number } | undefined> {
  for (let d = resolve(dir), i = 0; i < 64; d = dirname(d), i++) {
    const st = await stat(d).catch(() => undefined);
    if (st) return st;
    if (dirname(d) === d) return undefined;
  }
  return undefined;
}

/**
 * Where `path` leads when it is a symbolic link whose target is not made yet (a dead-letter file
 * linked to another volume before its first message): the file is made there, on that volume,
 * not on the link's. Else `path`. (Links of links are followed up to a bound.)
 */
async function linkTarget(path: string): Promise<string> {
  let p = resolve(path);
  for (let i = 0; i < 16; i++) {
    const st = await lstat(p).catch(() => undefined);
    if (!st?.isSymbolicLink()) return p;
    const to = await readlink(p).catch(() => undefined);
    if (to === undefined) return p;
    p = resolve(dirname(p), to);
  }
  return p;
}

/** The journal key of a message: alerts by id, statuses by source (only the latest is kept). */
export function outboxKey(m: Message): { key: string; kind: OutboxKind } | undefined {
  if (m.type === 'alert') return { key: `alert:${m.alert.id}`, kind: 'alert' };
  if (m.type === 'status') return { key: `status:${m.source}`, kind: 'status' };
  return undefined;
}

function line(obj: object): string {
  const json = JSON.stringify(obj);
  return `${createHash('sha1').update(json).digest('hex').slice(0, 8)} ${json}\n`;
}

/** A journal write's failure, in the words the exit says it with (Outbox.whyOffDisk): a full disk only where the errno says so. */
function writeFailure(code: string): string | undefined {
  // Said as the volume's state (stats.readOnly: "its volume is read-only, EROFS: make it writable …").
  if (code === 'EROFS') return undefined;
  if (code === 'ENOSPC') return 'its writes failed (ENOSPC): the disk is full';
  if (code === 'EDQUOT') return "its writes failed (EDQUOT): argus's user's disk quota is used up";
  if (code === 'EFBIG') return 'its writes failed (EFBIG): the file size limit was reached';
  return `its writes failed (${code})`;
}

/** The monotonic clock, ms since boot (CLOCK_MONOTONIC, the same for every process of a boot). */
/** The clocks a record's age is read from: since boot, wall, and the outbox's monotonic one (ms). */
interface ClockReading {
  up: number;
  wall: number;
  mono: number;
}

function sinceBoot(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/**
 * Alerts dropped for a bound that are remembered, should the Kafka sink deliver them after all
 * (its send buffer holds alertBufferSize alerts, 10 000 by default): a few MB of keys at most.
 * The first dropped are kept, not the last: the sink holds an outage's oldest alerts in memory
 * and leaves the newer ones in the journal (spill), and the journal drops its oldest first, so
 * the drops past the sink's memory are of alerts it can no longer send (see Outbox.spill).
 */
const DROPPED_KEPT = 50_000;
/**
 * Beyond DROPPED_KEPT, the latest drops are remembered too, this many: an alert dropped as it was
 * raised is journaled again in full a moment later (rejournaledAfterDrop), whatever came before.
 */
const DROPPED_LATELY = 4096;

/** No record is longer than this (outbox.maxBytes is at most 192 MiB in all), characters. */
const MAX_JOURNAL_LINE = 256 * 1024 * 1024;

/** The live records of a journal, fed line by line (see parseJournal and readJournal). */
class JournalReader {
  readonly records = new Map<string, OutboxRecord>();
  corrupt = 0;
  /** Lines whose checksum holds but whose record this version does not read (another op, a value of another form: a newer argus's). */
  unknown = 0;
  torn = false;

  /** One line without its '\n'; `terminated` false for a last line the file ends in. */
  line(l: string, terminated: boolean): void {
    if (l.length === 0) return;
    const json = l.slice(9);
    let rec: { op?: string; key?: string; kind?: OutboxKind; source?: string; at?: number; value?: string; boot?: string; up?: number } | undefined;
    if (l[8] === ' ' && createHash('sha1').update(json).digest('hex').slice(0, 8) === l.slice(0, 8)) {
      try {
        rec = JSON.parse(json) as typeof rec;
      } catch {
        rec = undefined;
      }
    }
    if (!rec || typeof rec.key !== 'string') {
      if (!terminated) this.torn = true;
      else this.corrupt++;
      return;
    }
    const records = this.records;
    if (rec.op === 'put' && typeof rec.value === 'string') {
      // A newer status replaces the older one (and moves to the end); an alert's full record
      // (its snapshot done) replaces the one of its raise in its place (see Outbox.append).
      if (!(rec.kind !== 'status' && records.get(rec.key)?.kind === 'alert')) records.delete(rec.key);
      records.set(rec.key, { key: rec.key, kind: rec.kind === 'status' ? 'status' : 'alert', source: String(rec.source ?? ''), at: Number(rec.at ?? 0), value: rec.value, ...(typeof rec.boot === 'string' && typeof rec.up === 'number' ? { boot: rec.boot, up: rec.up } : {}) });
    } else if (rec.op === 'ack') {
      const cur = records.get(rec.key);
      if (cur && (rec.at === undefined || rec.at === cur.at)) records.delete(rec.key);
    } else {
      // Not skipped unsaid: the rewrite at open would erase it, an alert among them.
      this.unknown++;
    }
  }
}

/** Parses a journal's text: live records in order of first append, plus counts. */
export function parseJournal(text: string): { records: Map<string, OutboxRecord>; corrupt: number; unknown: number; torn: boolean } {
  const r = new JournalReader();
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    r.line(text.slice(start, end), nl >= 0);
    start = end + 1;
  }
  return { records: r.records, corrupt: r.corrupt, unknown: r.unknown, torn: r.torn };
}

/**
 * Alerts not yet delivered in the journals of the other folders beside `dir` (other pipelines'
 * default outboxes under one state directory) that no argus holds (no lock file: none has it
 * open, none died holding it; nor a run on a read-only volume reads it: its guard, see holdGuard), by folder name. A pipeline renamed, or a worker whose id changed
 * (its default is the machine's name), leaves its undelivered alerts in a folder that no run
 * opens again: they are on disk, but nothing sends them. At most `maxFolders` folders are read.
 */
export async function strandedAlerts(dir: string, maxFolders = 100): Promise<Map<string, number>> {
  const own = resolve(dir);
  const root = resolve(own, '..');
  const found = new Map<string, number>();
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const e of entries.filter((x) => x.isDirectory()).slice(0, maxFolders)) {
    const path = join(root, e.name);
    if (path === own || (await stat(join(path, LOCK)).catch(() => undefined))) continue;
    // One a run reads on a read-only volume (no lock file there: its guard, holdGuard) is that run's: it replays them.
    if ((await guardHolder(path)) !== undefined) continue;
    const alerts = (await readOutbox(path).catch(() => [])).filter((r) => r.kind === 'alert').length;
    if (alerts > 0) found.set(e.name, alerts);
  }
  return found;
}

/**
 * Reads a journal file as a stream, line by line: a journal can outgrow what one string holds
 * (V8's limit is about 512 MiB; a journal whose compaction kept failing on a full disk got
 * there, and argus could not start at all, with "cannot read … (undefined)"). Only the live
 * records are kept. A missing file reads as empty.
 */
async function readJournal(path: string): Promise<{ records: Map<string, OutboxRecord>; corrupt: number; unknown: number; torn: boolean }> {
  const r = new JournalReader();
  // The pieces of the line read so far: joined once its end comes (adding each chunk to the
  // piece before was quadratic on a long line: 2.7 s for 64 MiB without a newline).
  let parts: string[] = [];
  let partsLength = 0;
  /** A line longer than any record can be (a damaged region): skipped up to its end, counted once. */
  let skipping = false;
  try {
    const fh = await openRegular(path);
    for await (const chunk of fh.createReadStream({ encoding: 'utf8', highWaterMark: 1 << 20 })) {
      const text = chunk as string;
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        if (!skipping) {
          parts.push(text.slice(start, nl));
          r.line(parts.length === 1 ? parts[0] : parts.join(''), true);
        }
        parts = [];
        partsLength = 0;
        skipping = false;
        start = nl + 1;
      }
      if (start < text.length && !skipping) {
        parts.push(text.slice(start));
        partsLength += text.length - start;
        if (partsLength > MAX_JOURNAL_LINE) {
          skipping = true;
          parts = [];
          r.corrupt++;
        }
      }
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (!skipping) r.line(parts.join(''), false);
  return { records: r.records, corrupt: r.corrupt, unknown: r.unknown, torn: r.torn };
}

/** Reads a journal folder without opening it for writing (tools, the chaos run). */
export async function readOutbox(dir: string): Promise<OutboxRecord[]> {
  return [...(await readJournal(join(dir, FILE))).records.values()];
}

/** How long a lock argus cannot check by its pid (another host's or pid namespace's) is held after its holder last touched it, ms (OutboxOptions.lockStaleMs). */
export const LOCK_STALE_MS = 20_000;

/** What a run says when another argus holds the outbox folder `dir`. */
function inUseText(dir: string, why: string): string {
  return `outbox: ${dir} is in use by another argus (${why}); give each pipeline its own outbox.dir`;
}

/**
 * Whether a lock's holder is a live process, judged by its pid: only one of this host, pid
 * namespace and boot can be (the boot id tells two hosts of one name apart, both in their
 * initial namespace); the same pid alive is the holder only if it is the same process (same
 * boot, same start). Another's, or an unreadable lock (being written): 'unchecked'.
 */
async function judgeHolder(held: LockOwner | undefined, self: LockOwner): Promise<'alive' | 'dead' | 'unchecked'> {
  const boot = (o: LockOwner) => o.identity.split(' ')[0];
  if (!held || held.host !== self.host || held.ns !== self.ns || (boot(held) && boot(held) !== boot(self))) return 'unchecked';
  return (await pidAlive(held.pid)) && (held.identity.split(' ').length < 2 || held.identity === (await processIdentity(held.pid))) ? 'alive' : 'dead';
}

/** Who holds a lock argus cannot check by its pid, as an error names them. */
function holderWhere(held: LockOwner | undefined, self: LockOwner): string {
  return held ? `pid ${held.pid} on ${held.host === self.host ? 'this host, in another pid namespace (a container)' : `host ${held.host}`}` : 'a lock being written or damaged';
}

/**
 * Why a run could not take the outbox folder `dir` now, as the run would say it (VAP_ERR_OUTBOX),
 * or undefined: its lock held by a live argus of this host (judged as the run judges it), or by
 * one argus cannot check whose lock is touched while it is watched (the run would wait `staleMs`
 * for it to stop, then refuse). Watched for one heartbeat (a quarter of `staleMs`) and a second,
 * never by its mtime against this clock, as the run never does: the holder touches it with its
 * own clock, and another host's may be minutes off (one a minute behind, alive, passed as not
 * held). Takes nothing: for `argus check`.
 */
export async function outboxHeldBy(dir: string, staleMs = LOCK_STALE_MS): Promise<string | undefined> {
  const path = join(dir, LOCK);
  const st = await stat(path).catch(() => undefined);
  if (!st) {
    // A run on a read-only volume holds its folder by the guard, with no lock file (holdGuard).
    const reading = await guardHolder(dir);
    return reading === undefined ? undefined : inUseText(dir, reading);
  }
  const self = await ownIdentity();
  const held = parseLock(await readLockText(path), self);
  const holder = await judgeHolder(held, self);
  if (holder === 'alive') return inUseText(dir, `pid ${held!.pid}`);
  if (holder === 'unchecked' && (await touchedWithin(path, st.mtimeMs, staleMs / 4 + 1000))) return inUseText(dir, `${holderWhere(held, self)}, its lock touched in the last ${staleMs / 1000} s`);
  return undefined;
}

/** Whether the file at `path`, of mtime `first`, is touched (its mtime changes) within `ms`; one removed is not. */
async function touchedWithin(path: string, first: number, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    await new Promise((r) => setTimeout(r, Math.min(250, ms)));
    const m = (await stat(path).catch(() => undefined))?.mtimeMs;
    if (m === undefined) return false;
    if (m !== first) return true;
  }
  return false;
}

/** This boot's id and a process's start time (Linux /proc), so a pid reused after a reboot or a crash is not taken for the lock's owner. */
async function processIdentity(pid: number): Promise<string> {
  const boot = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => '?')).trim();
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Field 22 (starttime) counts from after the command name, which may hold spaces: split after ')'.
  const start = stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '?' : '?';
  return `${boot} ${start}`;
}

/** Who holds a lock: a pid is checkable only on the same host, in the same pid namespace. */
interface LockOwner {
  pid: number;
  host: string;
  /** The pid namespace (`pid:[4026531836]`): containers have their own, where argus is often pid 1. */
  ns: string;
  /** processIdentity of the pid. */
  identity: string;
  /** This opening's own id (so close() removes only its own lock). */
  id: string;
}

async function ownIdentity(): Promise<LockOwner> {
  return { pid: process.pid, host: hostname(), ns: await readlink('/proc/self/ns/pid').catch(() => '?'), identity: await processIdentity(process.pid), id: randomUUID() };
}

/** A lock file's owner; the format before hosts and namespaces were written (`pid boot start`) reads as this host's and namespace's. */
function parseLock(text: string, self: LockOwner): LockOwner | undefined {
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (typeof o.pid === 'number' && typeof o.host === 'string' && typeof o.ns === 'string') return { pid: o.pid, host: o.host, ns: o.ns, identity: String(o.identity ?? ''), id: String(o.id ?? '') };
  } catch {
    // the older format
  }
  const [pidText, ...who] = text.trim().split(' ');
  const pid = Number(pidText);
  return Number.isInteger(pid) && pid > 0 ? { pid, host: self.host, ns: self.ns, identity: who.join(' '), id: '' } : undefined;
}

/**
 * Whether a process lives. A killed one that its parent has not reaped yet (a zombie) still
 * answers a signal 0 but holds nothing: a worker started again right after a `kill -9` found its
 * lock "in use" by the dead one and exited (init reaped it 1.1 s later here; a parent that never
 * reaps, such as a container's pid 1 that is not an init, kept every restart out).
 */
async function pidAlive(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // The state is the field after the command name, which may hold spaces: read after the last ')'.
  const state = stat ? stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) : '';
  return state !== 'Z' && state !== 'X';
}

/**
 * What the outbox's volume lacks for its bounds, or undefined: three times maxBytes for the
 * journal and its compaction copy (see compactAt), plus the bound of each `beside` file on the
 * same volume. The room is its free space, the journal (`fileBytes`) and those files as they
 * are. The dead-letter file sits in the outbox folder by default and grows to 100 MB, which
 * the advice of three times maxBytes left out: on a volume sized by it, a few parked alerts
 * filled it, no compaction copy fitted, and every alert of the next broker outage was in memory
 * only (a kill -9 lost them; seen: 10 alerts, 43 KB, within maxBytes 64 KiB on 192 KiB).
 * A folder not made yet is measured on the nearest one above it (`argus check`, before a run).
 * The run warns with its message at open; `argus check` says it beforehand.
 */
export async function outboxRoomShortfall(o: Pick<OutboxOptions, 'dir' | 'maxBytes' | 'beside' | 'freeBytes'>, fileBytes: number): Promise<{ message: string; have: number; need: number } | undefined> {
  const { maxBytes } = o;
  const dir = await existingFolder(o.dir);
  const free = o.freeBytes ?? (async (d: string) => {
    const f = await statfs(d);
    return f.bavail * f.bsize;
  });
  const [room, own] = await Promise.all([free(dir), stat(dir)]);
  let have = room + fileBytes;
  let need = 3 * maxBytes;
  const shared: string[] = [];
  for (const b of o.beside ?? []) {
    if (b.maxBytes <= 0) continue;
    const st = await stat(b.path).catch(() => undefined);
    // A named pipe or a device holds nothing (the dead-letter bound is a file's).
    if (st && !st.isFile()) continue;
    const on = st ?? (await nearestFolder(dirname(await linkTarget(b.path))));
    if (!on || on.dev !== own.dev) continue;
    have += st?.size ?? 0;
    need += b.maxBytes;
    shared.push(`${b.field} (${b.maxBytes} bytes) for ${b.path}`);
  }
  // The lock and the folder's marks take a block or two each (on tmpfs, 4 KiB): a volume of three
  // times maxBytes exactly, as advised, is not warned of for them.
  if (have + ROOM_SLACK >= need) return undefined;
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const message = `outbox: the volume of ${o.dir} has room for ${mib(have)}, less than the ${mib(need)} the outbox needs (three times outbox.maxBytes${shared.length > 0 ? `, and ${shared.join(', ')} on the same volume` : ''}): a long broker outage can fill it, and the alerts raised after are then not protected against a crash; give it more room, or lower outbox.maxBytes${shared.length > 0 ? ' or sinks.kafka.deadLetterMaxBytes, or put sinks.kafka.deadLetterPath on another volume' : ''}`;
  return { message, have, need };
}

/** `dir`, or the nearest folder above it that exists. */
async function existingFolder(dir: string): Promise<string> {
  for (let d = resolve(dir), i = 0; i < 64; d = dirname(d), i++) {
    if (await stat(d).then((st) => st.isDirectory(), () => false)) return d;
    if (dirname(d) === d) break;
  }
  return resolve(dir);
}

/** Whether an error (or the error it wraps: takeLock's) says the volume is read-only. */
function readOnlyVolume(e: unknown): boolean {
  const code = (x: unknown) => (x as NodeJS.ErrnoException | undefined)?.code;
  return code(e) === 'EROFS' || code((e as { cause?: unknown } | undefined)?.cause) === 'EROFS';
}

/**
 * What the start says when the outbox folder `dir` cannot be made (VAP_ERR_OUTBOX): a file where
 * it, or a folder above it, would be is named as a file (it said "cannot create … (EEXIST)", or
 * ENOTDIR, and left the reader to find which path was in the way).
 */
async function cannotCreate(dir: string, e: unknown): Promise<string> {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EEXIST' || code === 'ENOTDIR') {
    for (let p = resolve(dir), i = 0; i < 64; p = dirname(p), i++) {
      const st = await stat(p).catch(() => undefined);
      if (st && !st.isDirectory()) return `outbox: ${p} is a file, not a folder${p === resolve(dir) ? '' : ` (outbox.dir ${dir} would be made in it)`}; set outbox.dir to a folder (made if missing), or move the file away`;
      if (st || dirname(p) === p) break;
    }
  }
  return `outbox: cannot create ${dir} (${code ?? (e as Error).message}); set outbox.dir to a writable folder`;
}

export class Outbox {
  private fh!: FileHandle;
  private readonly live = new Map<string, OutboxRecord>();
  private liveBytes = 0;
  private fileBytes = 0;
  /** Lines waiting for the writer, with who waits for them. */
  private queue: { text: string; bytes: number; done?: () => void }[] = [];
  private writing: Promise<void> | undefined;
  private closed = false;
  private recoveredRecords: OutboxRecord[] = [];
  private readonly log: LogFn;
  private readonly clock: () => number;
  private readonly mono: () => number;
  /**
   * Each live record's birth on the monotonic clock: when this process journaled it, or, for a
   * record found at open, that moment less its age then by the wall clock. Ages are measured on
   * it, so a wall clock stepped forward (a box without a real-time clock, set by NTP after boot)
   * does not make every undelivered alert "older than maxAgeHours" at once.
   */
  private readonly born = new Map<string, number>();
  private ageTimer: NodeJS.Timeout | undefined;
  /** Who this opening is, as written in the lock, and the timer that keeps the lock's mtime fresh. */
  private owner: LockOwner | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** This boot's id ('' where unknown: ages then come from the wall clock). */
  private bootId = '';
  /** The folder's real path, the key of openHere. */
  private hereKey = '';
  /** Another argus took the lock over: this one writes the journal no more. */
  private lockLost = false;
  private closing: Promise<void> | undefined;
  readonly stats: OutboxStats = { pending: 0, pendingBytes: 0, appended: 0, acked: 0, recovered: 0, corrupt: 0, damaged: 0, evicted: 0, deliveredAfterDrop: 0, rejournaledAfterDrop: 0, oversized: 0, writeErrors: 0, slowWrites: 0 };
  /**
   * The alerts this run dropped for a bound (the first DROPPED_KEPT; those the sink found gone, let go: see spill): the Kafka sink
   * may still hold them in its send buffer (alertBufferSize alerts), which a journal over its
   * bound does not empty, and deliver them; their ack then counts them in `deliveredAfterDrop`,
   * out of the lost (lostToBounds).
   * (Each was counted and said as lost: the exit said "N alert(s) could not be delivered and are
   * lost", status 3, when Kafka had every one.)
   */
  private readonly droppedKeys = new Set<string>();
  /** Drops past DROPPED_KEPT: the latest DROPPED_LATELY (see dropped). */
  private readonly droppedLately = new Set<string>();

  /** Whether `key` was remembered as dropped (dropped): it no longer is. */
  private forgetDropped(key: string): boolean {
    return this.droppedKeys.delete(key) || this.droppedLately.delete(key);
  }
  /** Bytes (UTF-8, as written) of the lines waiting for the writer (bounded: see enqueue). */
  private queuedBytes = 0;

  private constructor(private readonly o: OutboxOptions) {
    this.log = o.log ?? (() => {});
    this.clock = o.now ?? Date.now;
    this.mono = o.monotonic ?? (() => performance.now());
  }

  /**
   * Opens (or creates) the journal in `dir`, takes its lock (another live argus on the same
   * folder is an error naming it), recovers what it holds and rewrites it compacted.
   */
  static async open(o: OutboxOptions): Promise<Outbox> {
    const ob = new Outbox(o);
    // A disk that does not answer (a hung network mount) holds the open, and a run's start with
    // it: no source starts, nothing is detected. Said while it lasts (it was silent: argus looked
    // started, and did nothing).
    const every = o.openSayMs ?? OPEN_SAY_MS;
    const began = performance.now();
    const say = setInterval(() => {
      const s = Math.round((performance.now() - began) / 1000);
      ob.log(`outbox: opening the journal in ${o.dir} has taken ${s} s so far (a disk or network mount that does not answer?); a run starts no source until it is open: nothing is detected meanwhile`, { dir: o.dir, code: ErrorCodes.OUTBOX, waitedS: s }, 'error');
    }, every);
    say.unref();
    try {
      await ob.init();
    } finally {
      clearInterval(say);
    }
    return ob;
  }

  private async init(): Promise<void> {
    const { dir } = this.o;
    this.bootId = this.o.bootId ?? (await readFile('/proc/sys/kernel/random/boot_id', 'utf8').catch(() => '')).trim();
    let made = true;
    try {
      // Its own user's alone (when argus makes it): the journal holds every alert (snapshots
      // embedded), the lock the holder's pid and host. Files made by umask 022 were readable by
      // every local user.
      await makeDir(dir, PRIVATE_DIR);
    } catch (e) {
      // A read-only volume: run without the journal (see readOnly), as on a full disk.
      if (!readOnlyVolume(e)) throw new ArgusError(ErrorCodes.OUTBOX, await cannotCreate(dir, e), { cause: e });
      this.readOnly = (e as NodeJS.ErrnoException).code ?? 'EROFS';
      made = false;
    }
    if (made) {
      const unsafe = await unsafeFolderRefusal(dir);
      if (unsafe) throw new ArgusError(ErrorCodes.OUTBOX, unsafe);
    }
    await this.lock();
    try {
      // (No folder: no journal to read.)
      if (made) await this.load();
      else {
        this.updateStats();
        // The age bound holds for what is held in memory too, as load sets it.
        this.ageTimer = setInterval(() => this.expire(), 60_000);
        this.ageTimer.unref();
      }
    } catch (e) {
      if (!this.readOnly) await this.unlock();
      this.releaseGuard();
      openHere.delete(this.hereKey);
      throw e;
    }
    if (this.readOnly && this.o.checkRoom === false) {
      // A folder only read and emptied (adoptOnce): nothing is journaled there.
      this.log(`outbox: ${dir} is on a read-only volume (${this.readOnly}): what it holds is read, but cannot be taken out there (read again at every start until the volume is writable)`, { dir, code: ErrorCodes.OUTBOX, errno: this.readOnly }, 'warn');
      return;
    }
    if (this.readOnly) {
      this.stats.readOnly = this.readOnly;
      const found = this.pendingAlerts;
      this.log(`outbox: ${dir} is on a read-only volume (${this.readOnly}): argus runs and publishes alerts without the journal, NOT protected against a crash, kill -9 or power cut (each refused write counted in argus_outbox_events_total{event="write_errors"}; the exit says what was not on disk)${found > 0 ? `; the ${found} undelivered alert(s) found in it are replayed, and replayed again at every start until the volume is writable (they cannot be marked delivered there)` : ''}${made ? '' : `; the folder is not there (a volume not mounted? its journal is replayed once it is: mount it rather than make this one writable, where a new journal would be hidden by it)`}; make the volume writable, or set outbox.dir to a writable folder, and restart`, { dir, code: ErrorCodes.OUTBOX, errno: this.readOnly }, 'error');
      this.watchWritable();
      return;
    }
    if (this.o.checkRoom !== false) await this.checkRoom().catch(() => undefined);
  }

  /**
   * The outbox's volume is read-only (its errno), found at open: argus runs without the journal,
   * as it does when the disk is full, rather than refusing to start (a volume remounted read-only
   * after disk errors, then a restart: every camera went blind, not only its alerts unprotected).
   * What the journal holds is read and replayed; nothing is written (no lock, no rewrite); each
   * line refused is a write error, and `journaled` is false once a record is only in memory.
   */
  private readOnly: string | undefined;

  /** Read-only (readOnly): the alerts found in the journal at open, on disk whatever this run does with them. */
  private foundOnDisk: ReadonlySet<string> = new Set();

  /**
   * Read-only: a record of `k` this run keeps in memory only. For the exit (journaled), an alert
   * found on disk is still there, whatever form it is sent in now (replace), and replayed at the
   * next start; so is an older status of a source, said anew by its next run. (Any append set it
   * before: a camera's first status change, and every run with alerts found on disk and Kafka down
   * said they "could not all be written … those not on disk are lost", none being lost.)
   */
  private offDisk(k: { key: string; kind: string }): void {
    if (k.kind === 'alert' && !this.foundOnDisk.has(k.key)) this.unjournaled = true;
  }

  /**
   * Says at open (a warning) when the outbox's volume has less room than its bounds need: three
   * times maxBytes for the journal and its compaction copy (see compactAt), plus the bound of each
   * `beside` file on the same volume. The room is its free space, the journal and those files as
   * they are. The dead-letter file sits in the outbox folder by default and grows to 100 MB, which
   * the advice of three times maxBytes left out: on a volume sized by it, a few parked alerts
   * filled it, no compaction copy fitted, and every alert of the next broker outage was in memory
   * only (a kill -9 lost them; seen: 10 alerts, 43 KB, within maxBytes 64 KiB on 192 KiB).
   */
  private async checkRoom(): Promise<void> {
    const short = await outboxRoomShortfall(this.o, this.fileBytes);
    if (short) this.log(short.message, { dir: this.o.dir, have: short.have, need: short.need }, 'warn');
  }

  private async load(): Promise<void> {
    const { dir } = this.o;
    let read: Awaited<ReturnType<typeof readJournal>>;
    try {
      read = await readJournal(join(dir, FILE));
    } catch (e) {
      throw new ArgusError(ErrorCodes.OUTBOX, `outbox: cannot read ${join(dir, FILE)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
    }
    const { records, torn, unknown } = read;
    // Before anything here changes the journal (its age bound, the rewrite): another pipeline's is left as it is.
    await this.claim(records);
    // Records of a form this version does not read are kept aside and said as damaged ones are
    // (before, skipped unsaid and erased by the rewrite below: a downgrade lost them).
    const corrupt = read.corrupt + unknown;
    this.stats.corrupt = corrupt + (torn ? 1 : 0);
    if (torn) this.log('outbox: the last journal record was torn (the process died while writing it, or the disk was full); skipped', { dir });
    this.stats.damaged = corrupt;
    if (corrupt > 0) {
      // The rewrite below leaves only the lines that read back: the journal as it was is kept
      // (a hard link, no copy), so the damaged records can still be looked at or recovered by hand.
      this.stats.damagedCopy = this.readOnly ? undefined : await keepDamaged(dir);
    }
    const at = this.readClocks();
    for (const found of records.values()) {
      const r = reservedSaidTruly(found);
      this.addLive(r, this.ageOf(r, at), Buffer.byteLength(this.putLine(r)), at.mono);
    }
    // (A journal an adoption appended to, then a crash: the records taken over are after this one's own.)
    this.sortLive();
    // Read-only: what is found stays on disk whatever happens to it here, aged ones too (expire).
    if (this.readOnly) this.foundOnDisk = new Set([...this.live.values()].filter((r) => r.kind === 'alert').map((r) => r.key));
    this.expire();
    this.recoveredRecords = [...this.live.values()];
    this.stats.recovered = this.recoveredRecords.length;
    const rewritten = this.readOnly ? false : await this.rewrite();
    if (!rewritten && this.stats.damagedCopy) {
      // Not rewritten (no room for a copy): the journal, damaged lines included, is still the
      // file appended to, so the link is no copy "as it was": removed, and not said.
      await rm(this.stats.damagedCopy, { force: true }).catch(() => undefined);
      this.stats.damagedCopy = undefined;
    }
    if (corrupt > 0) {
      const where = this.stats.damagedCopy
        ? `the journal as it was is kept as ${this.stats.damagedCopy}`
        : rewritten
          ? 'the journal as it was could not be kept (no link or copy could be made)'
          : `the journal could not be rewritten without them and is kept as it is (${join(dir, FILE)})`;
      const what = [read.corrupt > 0 ? `${read.corrupt} damaged journal record(s)` : '', unknown > 0 ? `${unknown} journal record(s) of a form this argus does not read (written by a newer one?)` : ''].filter(Boolean).join(' and ');
      this.log(`outbox: ${what} skipped (undelivered alerts may be among them); ${where}`, { dir }, 'error');
    }
    this.updateStats();
    this.ageTimer = setInterval(() => this.expire(), 60_000);
    this.ageTimer.unref();
  }

  /**
   * The folder's journal taken for this pipeline (OutboxOptions.owner): one that another pipeline
   * named as its own and whose journal still holds undelivered records is refused, naming it; else
   * this pipeline's name is written in. (Two pipelines given one outbox.dir, run one after the
   * other: each replayed at start what the other had left undelivered, to its own Kafka, and
   * that pipeline's alerts went to another's brokers, acknowledged there, gone from its journal.)
   * A folder without the name (an older release's) is taken as this pipeline's, as before; so
   * is one another worker of this worker's cluster named (OutboxOptions.cluster), logged.
   */
  private async claim(records: ReadonlyMap<string, OutboxRecord>): Promise<void> {
    const name = this.o.owner;
    if (name === undefined) return;
    // None (an older release's folder), or unreadable: taken.
    const mark = await ownerOf(this.o.dir);
    const named = mark.name;
    // Its own (its cluster written in, when the mark has it not, or another: as before, by its name).
    if (named === name) {
      if (mark.cluster !== this.o.cluster) await this.markOwner();
      return;
    }
    const refusal = foreignJournal(this.o.dir, mark, name, this.o.cluster, records.values());
    if (refusal) throw new ArgusError(ErrorCodes.OUTBOX, `outbox: ${refusal}`);
    const alerts = [...records.values()].filter((r) => r.kind === 'alert').length;
    if (named !== undefined && records.size > 0) this.log(`outbox: the journal of worker ${JSON.stringify(named)} of this cluster, with ${alerts} undelivered alert(s), is taken over by ${JSON.stringify(name)} (the same Kafka)`, { dir: this.o.dir }, 'warn');
    await this.markOwner();
  }

  /** Whether a folder's mark is of a worker of this worker's cluster (OutboxOptions.cluster). */
  private sameCluster(mark: { cluster?: string }): boolean {
    return this.o.cluster !== undefined && mark.cluster === this.o.cluster;
  }

  /** Writes OWNER (at open, and again when the folder is made again: journalLost). */
  private async markOwner(): Promise<void> {
    if (this.o.owner === undefined) return;
    await writeMark(join(this.o.dir, OWNER), `${JSON.stringify({ name: this.o.owner, ...(this.o.cluster !== undefined ? { cluster: this.o.cluster } : {}) })}\n`);
  }

  /**
   * A record's age, ms, found in a journal: on the monotonic clock when it was journaled in this
   * boot (a wall clock stepped forward between two runs evicts nothing), by the wall clock across
   * a reboot.
   */
  private ageOf(r: OutboxRecord, at: ClockReading = this.readClocks()): number {
    return r.boot === this.bootId && r.up !== undefined && r.up <= at.up ? at.up - r.up : at.wall - r.at;
  }

  /**
   * The clocks, read once for all the records of a journal: read again for each, two records
   * journaled in the same millisecond (`up` is whole milliseconds) got ages a read apart, and
   * when the reads straddled a millisecond the later record came out older and was replayed
   * before the earlier one (seen under load).
   */
  private readClocks(): ClockReading {
    return { up: sinceBoot(), wall: this.clock(), mono: this.mono() };
  }

  /**
   * Takes over, once, what the journals in `folders` hold: the folders older releases used for
   * this pipeline's outbox (pipeline names mapped to folders other than today's). Only the
   * records `ours` accepts (runPipeline: from a folder in the state folder, those of the
   * pipeline's own sources): such a folder was shared under the old names and is another pipeline's own today (`lobby_cam` was also
   * `lobby cam`'s, `__` also `..`'s), so taking all of it sent that pipeline's alerts to this
   * one's Kafka; the others stay there, for it. Each record is journaled here (on disk) before it
   * is acknowledged there, and replayed with this opening's own (takeRecovered), so none is lost;
   * one already here (journaled by an adoption that was cut short before its acknowledgement
   * there, or a newer status of the source) is not journaled or replayed again, only taken out
   * there. A folder another argus holds is left to it (it replays what its journal holds). Done
   * once: `ADOPTED` here records it, written when every folder was read (one that could not be,
   * an unsafe folder say, is logged and tried again at the next start), so what the other
   * pipeline journals there later is never taken. Returns how many records were taken over.
   */
  async adoptOnce(folders: readonly string[], ours: (r: OutboxRecord, from: string) => boolean = () => true): Promise<number> {
    const mark = join(this.o.dir, ADOPTED);
    if (folders.length === 0) return 0;
    if (await stat(mark).catch(() => undefined)) {
      this.adopted = folders;
      return 0;
    }
    let taken = 0;
    let complete = true;
    for (const from of folders) {
      if (!(await stat(join(from, FILE)).catch(() => undefined))) continue;
      // A folder another pipeline of this release took as its own (its mark, see claim): all it
      // holds is that pipeline's, replayed to its Kafka when it opened it, and journaled there by it
      // since (with sources of the same ids as this one's, they were taken here before, for this
      // pipeline's Kafka, and taken out of its journal). Left to it; nothing of this one's is there.
      const mark = this.o.owner === undefined ? {} : await ownerOf(from);
      const named = mark.name;
      if (named !== undefined && named !== this.o.owner && !this.sameCluster(mark)) {
        this.log(`outbox: ${from} is the pipeline ${JSON.stringify(named)}'s (its mark ${OWNER}): what it holds is left to it, not taken over`, { dir: this.o.dir });
        continue;
      }
      let old: Outbox;
      try {
        // Without an age bound there: this pipeline's is not the other's, whose undelivered alerts
        // such a folder may hold (`lobby cam` with maxAgeHours 1 dropped `lobby_cam`'s older ones
        // there, logged as its own). This one's bound is applied below to what it takes.
        // Nor as this pipeline's: only what `ours` accepts is taken, and the rest left there.
        // Nor its room checked: nothing is journaled there any more (fa18ec5 warned of the old
        // folder's volume, and of the dead-letter file on it, at the start that took it over).
        old = await Outbox.open({ ...this.o, dir: from, maxAgeMs: Infinity, owner: undefined, cluster: undefined, checkRoom: false });
      } catch (e) {
        // Held by a running argus: it replays what the journal holds, ours among it.
        if ((e as { inUse?: boolean }).inUse) continue;
        complete = false;
        this.log(`outbox: the journal an older release kept in ${from} could not be read (${(e as Error).message}); its alerts stay there, tried again at the next start`, { dir: this.o.dir }, 'error');
        continue;
      }
      try {
        const found = old.takeRecovered();
        const records = found.filter((r) => ours(r, from));
        const others = found.length - records.length;
        if (others > 0) this.log(`outbox: ${others} undelivered record(s) in ${from} are of sources this pipeline does not have (the folder is another pipeline's too): left there`, { dir: this.o.dir }, 'warn');
        if (records.length === 0) continue;
        // Already here (an adoption cut short, a newer status): taken out there, not replayed twice.
        // Older than this pipeline's bound: dropped (logged), as at its own open.
        const at = this.readClocks();
        // Where nothing can be taken out there (either side read-only: see the ack below), an aged
        // one stays there too, found again at every start: said aged (agedOnDisk), not lost each time.
        const stays = this.readOnly !== undefined || old.readOnly !== undefined;
        const aged: string[] = [];
        const fresh = records.filter((r) => {
          if ((this.live.get(r.key)?.at ?? -Infinity) >= r.at) return false;
          if (this.ageOf(r, at) <= this.o.maxAgeMs) return true;
          if (r.kind === 'alert' && stays) aged.push(r.key.slice(6));
          else if (r.kind === 'alert') this.dropped(r, this.tooOld());
          return false;
        });
        if (aged.length > 0) this.agedOnDisk(aged, from);
        const written = fresh.map((r) => {
          const prev = this.live.get(r.key);
          if (prev) this.dropLive(prev);
          const line = this.putLine(r);
          const bytes = Buffer.byteLength(line);
          this.addLive(r, this.ageOf(r, at), bytes, at.mono);
          return new Promise<void>((done) => this.enqueue(line, done, bytes));
        });
        await Promise.all(written);
        const replaced = new Set(fresh.map((r) => r.key));
        const before = this.recoveredRecords.length;
        this.recoveredRecords = this.recoveredRecords.filter((r) => !replaced.has(r.key));
        this.recoveredRecords.push(...fresh);
        this.stats.recovered += this.recoveredRecords.length - before;
        this.updateStats();
        taken += fresh.length;
        // On disk here: gone there. (Not on disk, a write failed, or this folder's volume is
        // read-only: they stay there too. Read-only here, its writes are refused without failing,
        // and they were taken out there: held in this run's memory alone, lost to a crash, and
        // at the next start on no disk at all; the exit said them kept.)
        if (this.journaled && !this.readOnly) old.ack(records.map(recordMessage));
        else complete = false;
        if (fresh.length > 0) this.log(`outbox: replaying ${fresh.length} undelivered record(s) an older release left in ${from} (the folder it used for this pipeline's name)`, { dir: this.o.dir });
      } finally {
        await old.close();
      }
      // Taken out there only if that reached its disk (a full one, say, did not; a read-only one
      // refuses it without a failed write): else tried again at the next start (what is here
      // already is not replayed twice). Marked done, they stayed there for good, for whatever
      // opens that folder (another pipeline's today) to send again.
      if (!old.journaled || old.readOnly) complete = false;
    }
    // Oldest first, as a journal's own.
    this.recoveredRecords.sort((a, b) => a.at - b.at);
    // And so among the live records: the bounds take them in this order, the oldest first
    // (expire stops at the first young one). Put after this one's own, an older record taken
    // over outlived maxAgeHours behind them, and maxBytes dropped this one's newer ones first.
    if (taken > 0) this.sortLive();
    if (complete) {
      this.adopted = folders;
      await this.markAdopted();
    }
    return taken;
  }

  /** The folders adoptOnce is done with (ADOPTED is in this folder), if it is. */
  private adopted: readonly string[] | undefined;

  /** Writes ADOPTED (at adoption, and again when the folder is made again: journalLost). */
  private async markAdopted(): Promise<void> {
    if (!this.adopted) return;
    await writeMark(join(this.o.dir, ADOPTED), `${JSON.stringify({ at: this.clock(), folders: this.adopted })}\n`);
  }

  private async lock(): Promise<void> {
    const path = join(this.o.dir, LOCK);
    // The folder itself, not the name it was given: a second name for it (a symlink) is the same journal.
    const key = (this.hereKey = await realpath(this.o.dir).catch(() => resolve(this.o.dir)));
    if (openHere.has(key)) throw Object.assign(new ArgusError(ErrorCodes.OUTBOX, `outbox: ${this.o.dir} is already open in this process; give each pipeline its own outbox.dir`), { inUse: true });
    openHere.add(key);
    // A folder that could not be made (read-only): no lock to take (and no journal there to replay twice).
    if (this.readOnly) return;
    // The folder's guard first, by every start, a writable one too, until its lock is made: held
    // by a run on the read-only volume (the volume writable again since, or read-only still), that
    // run replays what the journal holds, and a second would send it again. Its bind is the one
    // step two starts cannot both pass: a writable start that only looked for a holder (none yet),
    // then made its lock, and a read-only one that looked for a lock (none yet: EROFS), then
    // bound the guard, both replayed the journal (a read-only mount of the folder beside a
    // read-write one in one network namespace, or a remount between the two).
    await this.takeGuard(key);
    try {
      await this.takeLock(path);
    } catch (e) {
      await this.lockFile?.fh.close().catch(() => undefined);
      this.lockFile = undefined;
      // A read-only volume (no lock can be made, nor a dead one's taken over): run without the
      // journal (readOnly), the folder held by its guard, which needs no write (holdGuard). Held
      // by a live argus: refused, as anywhere.
      if (readOnlyVolume(e)) {
        this.readOnly = ((e as { cause?: NodeJS.ErrnoException }).cause ?? (e as NodeJS.ErrnoException)).code ?? 'EROFS';
        // (Its lock looked for with the guard held: a writable start holds it until its lock is
        // made, so either this one found that lock, or that start was refused by the guard.)
        return;
      }
      this.releaseGuard();
      openHere.delete(key);
      throw e;
    }
    // The lock made holds the folder now (a read-only start finds it, and judges it). (The guard
    // held on would be named after an inode that a folder deleted while this runs leaves to
    // another folder, refused then as in use.)
    this.releaseGuard();
  }

  /**
   * Read-only at open: looks every 30 s whether the volume is writable again (a remount, a volume
   * mounted at last), and says so once, as an error, with `writableAgain` in the stats and health:
   * the journal is not taken up while argus runs, so its alerts stay unprotected until a restart
   * (before, nothing said the restart was due). Not taken up: a rewrite from memory would erase
   * the alerts found there that the memory bound dropped (said kept, read again at the next start),
   * and the lock would have to be taken against a start made meanwhile; a restart does all of it.
   */
  private watchWritable(): void {
    const every = this.o.writableCheckMs ?? WRITABLE_CHECK_MS;
    let looking = false;
    this.writableTimer = setInterval(() => {
      if (looking || this.closed) return;
      looking = true;
      void existingFolder(this.o.dir)
        .then((at) => access(at, fsConstants.W_OK))
        .then(
          () => {
            if (this.closed || !this.writableTimer) return;
            clearInterval(this.writableTimer);
            this.writableTimer = undefined;
            this.stats.writableAgain = true;
            this.log(`outbox: ${this.o.dir} is on a writable volume again; this run goes on without the journal (it is not taken up while argus runs): its alerts are NOT protected until argus is restarted, which replays and journals them there`, { dir: this.o.dir, code: ErrorCodes.OUTBOX }, 'error');
          },
          () => undefined,
        )
        .finally(() => (looking = false));
    }, every);
    this.writableTimer.unref();
  }

  private writableTimer: NodeJS.Timeout | undefined;

  /** The folder's guard (holdGuard): read-only, held while this opening is open; writable, while its lock is made (see lock). */
  private guard: Server | undefined;

  /** Holds the folder's read-only guard, or refuses the folder as in use, naming who holds it. */
  private async takeGuard(key: string): Promise<void> {
    // (Let go between its bind and the look at who holds it: tried again.)
    for (let tries = 0; tries < 3; tries++) {
      const got = await holdGuard(this.o.dir, () => (this.readOnly ? `pid ${process.pid}, a run on the read-only volume, not locked there` : `pid ${process.pid}`));
      if (got === undefined) return;
      if (!('heldBy' in got)) {
        this.guard = got;
        return;
      }
      if (got.heldBy === '') continue;
      openHere.delete(key);
      throw this.inUse(got.heldBy);
    }
    // Bound each time, and none listening each time: a socket bound under the name and not
    // listened on (any local user can make one). Held all the same: refused (before, the start
    // went on holding nothing, and so did a second one: both replayed the journal).
    openHere.delete(key);
    throw this.inUse("a process that holds the folder's name and takes no connection");
  }

  /** Lets the read-only guard go (close, or an open that failed after it was taken). */
  private releaseGuard(): void {
    if (this.writableTimer) clearInterval(this.writableTimer);
    this.writableTimer = undefined;
    this.guard?.close();
    this.guard = undefined;
  }

  /**
   * Takes the journal's lock. A lock of this host and pid namespace whose process is gone (or
   * is another process under a reused pid) is taken over at once. One argus cannot check (another
   * host, or another pid namespace: two containers on one volume, both pid 1) is taken over only
   * once its holder has stopped touching it for `lockStaleMs`; while it is touched, it is held.
   * (Before, a container found pid 1, its own pid, in the other's lock, took it for dead, and
   * both wrote the journal: one's alerts went to a file the other had renamed away.)
   */
  private async takeLock(path: string): Promise<void> {
    const self = (this.owner = await ownIdentity());
    const staleMs = this.o.lockStaleMs ?? LOCK_STALE_MS;
    let tookOver = false;
    for (let tries = 0; tries < 3; tries++) {
      try {
        await this.createLock(path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new ArgusError(ErrorCodes.OUTBOX, `outbox: cannot lock ${path} (${(e as NodeJS.ErrnoException).code})`, { cause: e });
        // The file judged, by inode and mtime: it is removed below only if it is still that one.
        const judged = await stat(path).catch(() => undefined);
        if (!judged) continue; // released meanwhile: take it
        const judgedText = await readLockText(path);
        const held = parseLock(judgedText, self);
        const holder = await judgeHolder(held, self);
        if (holder === 'alive') throw this.inUse(`pid ${held!.pid}`);
        if (holder === 'unchecked') {
          // Another host's or namespace's, or unreadable (being written): held while it is touched.
          const where = holderWhere(held, self);
          const state = await this.waitStale(path, staleMs, where, judged.mtimeMs);
          if (state === 'touched') {
            // Touched by its holder, or replaced by another argus that took it over first: name who holds it now.
            const now = parseLock(await readLockText(path), self);
            const who = now && now.id !== held?.id ? `pid ${now.pid} on ${now.host === self.host ? 'this host' : `host ${now.host}`}, which took the lock over` : where;
            throw this.inUse(`${who}, its lock touched in the last ${staleMs / 1000} s`);
          }
          if (state === 'gone') continue; // released meanwhile: take it
        }
        // Left by a process that died. Two argus starting together both judge it so: each
        // removes only the file it judged (removeJudged), and the one that finds it already
        // replaced looks again.
        if (await this.removeJudged(path, judged, judgedText, self.id)) tookOver = true;
        continue;
      }
      if (tookOver) {
        // removeJudged never removes another's new lock, but a taker that does not use it (an
        // older argus, a person's `rm`) may have replaced this one since it was written: look
        // again a moment later, and give way if this one is no longer there.
        await new Promise((r) => setTimeout(r, TAKEOVER_SETTLE_MS));
        const held = parseLock(await readLockText(path), self);
        // (One held empty, on a full disk, is still this opening's if it is the file it made.)
        const mine = held ? held.id === self.id : (await this.ownerlessLock(path)) === 'mine';
        if (!mine) throw this.inUse(held ? `pid ${held.pid} on ${held.host}, which took the lock over at the same moment` : 'another argus taking the lock over at the same moment');
      }
      this.startHeartbeat(path, staleMs);
      return;
    }
    throw new ArgusError(ErrorCodes.OUTBOX, `outbox: cannot lock ${path}`);
  }

  /**
   * Removes the lock at `path` only if it is still the file judged stale (same inode, mtime and
   * text), with no time window: the lock is first moved aside (a rename is atomic: whatever is
   * at `path` at that instant moves), then the file moved is checked. If it is another argus's
   * lock, written since the judgement, it is put back under its name by a hard link (same inode
   * and content: its holder's heartbeat and close() see their own lock) and false is returned.
   * (Checking, then removing, left a window: a taker slowed between the two removed the other's
   * new lock, and both held it.)
   */
  private async removeJudged(path: string, judged: { ino: number; mtimeMs: number }, judgedText: string, id: string): Promise<boolean> {
    const aside = `${path}.${id}.stale`;
    try {
      await rename(path, aside);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false; // removed meanwhile: look again
      throw new ArgusError(ErrorCodes.OUTBOX, `outbox: cannot take over ${path} (${(e as NodeJS.ErrnoException).code})`, { cause: e });
    }
    const moved = await stat(aside).catch(() => undefined);
    const text = await readLockText(aside);
    if (moved && moved.ino === judged.ino && moved.mtimeMs === judged.mtimeMs && text === judgedText) {
      await rm(aside, { force: true });
      return true;
    }
    await link(aside, path).catch(() => undefined); // fails only if a third has written one since: theirs stands
    await rm(aside, { force: true });
    return false;
  }

  /**
   * Makes the lock at `path` (EEXIST if there is one) with this opening's owner in it. A disk
   * too full for those few bytes (the file itself is made: it takes no data block) does not stop
   * the start: the lock is held empty, as another argus sees a lock being written (held while its
   * heartbeat touches it), and the heartbeat writes the owner in once there is room. (Before, the
   * start failed with "cannot lock … (ENOSPC)", and the empty lock left made the next start wait
   * for it: argus could not run, nor replay its journal, on a full state volume.)
   */
  private async createLock(path: string): Promise<void> {
    const fh = await open(path, 'wx', PRIVATE_FILE);
    try {
      await this.fillLock(fh);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOSPC' && code !== 'EDQUOT') {
        await fh.close().catch(() => undefined);
        await rm(path, { force: true }).catch(() => undefined);
        throw e;
      }
      await fh.truncate(0).catch(() => undefined);
      await this.holdLock(fh, true);
      this.log(`outbox: the disk is full: no room for the owner in the lock ${path}; it is held empty (another argus waits on its heartbeat) and the owner written in once there is room`, { dir: this.o.dir }, 'warn');
      return;
    }
    await this.holdLock(fh, false);
  }

  /**
   * The lock this opening made (last), kept open: a lock at its name that holds no owner (empty:
   * being written, or held on a full disk) is this opening's only if it is that file (device and
   * inode; held open, its inode cannot be reused by another's after it was removed). An empty one
   * that is not was taken for this one's, or for one to wait on: another argus's that took it
   * over on a full disk, and this one's compactions then renamed its journal over the other's.
   * `empty`: the owner is still to be written in (fillEmptyLock).
   */
  private lockFile: { fh: FileHandle; id: string; empty: boolean } | undefined;

  private async holdLock(fh: FileHandle, empty: boolean): Promise<void> {
    const st = await fh.stat().catch(() => undefined);
    await this.lockFile?.fh.close().catch(() => undefined);
    this.lockFile = { fh, id: st ? `${st.dev}:${st.ino}` : '', empty };
  }

  /** Whose a lock at `path` whose text holds no owner is: this opening's (the file it made), another's, or none is there. */
  private async ownerlessLock(path: string): Promise<'mine' | 'another' | 'none'> {
    const st = await stat(path).catch(() => undefined);
    return !st ? 'none' : this.lockFile?.id && `${st.dev}:${st.ino}` === this.lockFile.id ? 'mine' : 'another';
  }

  /** Writes this opening's owner into its lock file (from its start; a seam for tests of a full disk). */
  private async fillLock(fh: FileHandle): Promise<void> {
    const b = Buffer.from(`${JSON.stringify(this.owner)}\n`);
    for (let off = 0; off < b.length; ) {
      const { bytesWritten } = await fh.write(b, off, b.length - off, off);
      if (bytesWritten <= 0) throw Object.assign(new Error('short write: the disk took no more bytes'), { code: 'ENOSPC' });
      off += bytesWritten;
    }
  }

  /** The owner written into a lock held empty, if there is room now. */
  private async fillEmptyLock(): Promise<void> {
    const held = this.lockFile;
    if (!held?.empty) return;
    try {
      await this.fillLock(held.fh);
    } catch {
      await held.fh.truncate(0).catch(() => undefined);
      return;
    }
    held.empty = false;
  }

  private inUse(why: string): ArgusError {
    return Object.assign(new ArgusError(ErrorCodes.OUTBOX, inUseText(this.o.dir, why)), { inUse: true });
  }

  /**
   * Keeps the lock's mtime fresh (one touch at a time: on a frozen disk they would pile up on
   * libuv's 4 threads), and checks it is still this opening's: if another argus took it over
   * (this one was frozen, a VM paused, for longer than lockStaleMs), this one stops journaling
   * at once and says so, rather than writing a journal the other now owns.
   */
  private startHeartbeat(path: string, staleMs: number): void {
    let busy = false;
    this.heartbeat = setInterval(() => {
      if (busy) return;
      busy = true;
      void (async () => {
        const missing = (await lstat(path).catch((e: NodeJS.ErrnoException) => e.code)) === 'ENOENT';
        const held = parseLock(await readLockText(path), this.owner!);
        if (held && held.id !== this.owner!.id) return this.loseLock(held);
        // No lock (removed, or the folder deleted): written again, and the writer checks the
        // journal (journalLost makes the folder, the lock and the journal again), with no alert
        // needed to set it going.
        if (missing && !this.closed && !this.closing) {
          await this.relock().catch(() => undefined);
          return this.enqueue('');
        }
        // Held empty (a full disk): an empty lock there that is not the file this opening made is
        // another argus's, which took it over (this one frozen meanwhile); touching it kept both going.
        if (!held && (await this.ownerlessLock(path)) === 'another') return this.loseLock(undefined);
        await this.fillEmptyLock();
        await utimes(path, new Date(), new Date()).catch(() => undefined);
      })().finally(() => (busy = false));
    }, staleMs / 4);
    this.heartbeat.unref();
  }

  private loseLock(by: LockOwner | undefined): void {
    if (this.lockLost) return;
    this.lockLost = true;
    this.lockTakenBy = by ? `pid ${by.pid} on ${by.host}` : 'another argus, its lock not written yet';
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.log(`outbox: the journal's lock was taken over by ${by ? `pid ${by.pid} on ${by.host}` : 'another argus (its lock not written yet: a full disk?)'} (this process was frozen for longer than its heartbeat allows); this process stops writing the journal: its undelivered alerts are no longer protected`, { dir: this.o.dir }, 'error');
  }

  /**
   * Watches a lock for `staleMs` (and a bit): 'touched' if its mtime changes (its holder is
   * alive), 'gone' if it is removed, 'stale' if neither happens. The mtime is never compared with
   * this host's clock (another host's may be minutes off).
   */
  private async waitStale(path: string, staleMs: number, where: string, first: number): Promise<'touched' | 'gone' | 'stale'> {
    const mtime = async () => (await stat(path).catch(() => undefined))?.mtimeMs;
    this.log(`outbox: the journal is locked by ${where}; waiting ${staleMs / 1000} s for its heartbeat to stop`, { dir: this.o.dir }, 'warn');
    const end = performance.now() + staleMs + Math.min(1000, staleMs / 4);
    while (performance.now() < end) {
      await new Promise((r) => setTimeout(r, Math.min(1000, staleMs / 4)));
      const m = await mtime();
      if (m === undefined) return 'gone';
      if (m !== first) return 'touched';
    }
    return 'stale';
  }

  /** The undelivered record under `key`, if any. */
  get(key: string): OutboxRecord | undefined {
    return this.live.get(key);
  }

  /**
   * For a sink with memory bounds (Kafka): the key of a journaled message, and the message
   * loaded back by key (undefined once it was acknowledged or dropped by the bounds).
   */
  spill(): AlertStore {
    // A key the sink left here and finds gone (has, load) is let go by it: one dropped for a bound
    // is lost for good, and no longer remembered (droppedKeys keeps room for those the sink holds).
    const gone = (key: string) => void this.forgetDropped(key);
    return {
      key: (m) => outboxKey(m)?.key ?? '',
      has: (key) => this.live.has(key) || (gone(key), false),
      replace: (m, json) => this.replace(m, json),
      load: (key) => {
        const r = this.live.get(key);
        if (!r) gone(key);
        return r ? { json: r.value, message: recordMessage(r) } : undefined;
      },
    };
  }

  /** Records the previous run left undelivered, oldest first (to be replayed once). */
  takeRecovered(): OutboxRecord[] {
    const r = this.recoveredRecords;
    this.recoveredRecords = [];
    return r;
  }

  get dir(): string {
    return this.o.dir;
  }

  /**
   * Journals a message; resolves once it is on disk (fsynced). Writes are grouped: all
   * messages that arrive while a write is in progress go to disk in the next one. A failed
   * write is logged and counted, and still resolves: the journal never holds an alert back.
   */
  append(m: Message, json: string): Promise<void> {
    const k = outboxKey(m);
    if (!k || this.closed) return Promise.resolve();
    const prev = this.live.get(k.key);
    // An alert's full record (its snapshot done) takes the place of the one journaled when it was
    // raised: its time, and so its age and its place in the order, the replay's after a crash.
    // Moved to the end, alerts were replayed in the order their snapshots finished in, a track's
    // exit before its entry. (A status is a newer state: it goes to the end.)
    const same = prev?.kind === 'alert' && k.kind === 'alert' ? prev : undefined;
    const rec: OutboxRecord = same
      ? { key: k.key, kind: k.kind, source: m.source, at: same.at, value: json, ...(same.boot !== undefined ? { boot: same.boot, up: same.up } : {}) }
      : { key: k.key, kind: k.kind, source: m.source, at: this.clock(), value: json, boot: this.bootId, up: Math.round(sinceBoot()) };
    const text = this.putLine(rec);
    const bytes = Buffer.byteLength(text);
    // Read-only: the record is in memory only.
    if (this.readOnly) this.offDisk(k);
    if (same) this.replaceLive(rec, bytes);
    else {
      if (prev) this.dropLive(prev);
      this.addLive(rec, 0, bytes);
      // Dropped by a bound as it was raised (before its snapshot was done), journaled again now in full: not lost.
      if (!prev && this.forgetDropped(k.key)) {
        this.stats.rejournaledAfterDrop++;
        this.log(`outbox: alert ${k.key.slice(6)}, dropped from the journal undelivered before its snapshot was done, is journaled again with it: not lost`, { source: m.source, alertId: k.key.slice(6) });
      }
    }
    this.stats.appended++;
    // Resolves when the record is on disk, or after JOURNAL_WAIT_MS if the disk has not
    // answered by then (frozen, hung): the alert is then handed on unprotected (counted, logged)
    // and written when the disk answers. Waiting for the disk held every alert back from every
    // sink for as long as it hung.
    const journaled = new Promise<void>((done) => {
      let waiting = true;
      const t = setTimeout(() => {
        if (!waiting) return;
        waiting = false;
        this.stats.slowWrites++;
        if (this.stats.slowWrites === 1 || this.stats.slowWrites % 100 === 0) {
          this.log(`outbox: the disk has not confirmed a journal write for ${JOURNAL_WAIT_MS} ms; alerts are handed on before they are on disk (${this.stats.slowWrites} so far)`, { dir: this.o.dir }, 'error');
        }
        done();
      }, JOURNAL_WAIT_MS);
      t.unref();
      this.enqueue(
        text,
        () => {
          if (!waiting) return;
          waiting = false;
          clearTimeout(t);
          done();
        },
        bytes,
      );
    });
    // After its record is queued: the acks of what the bound drops follow it. (Evicted first,
    // an ack went before its record, and the next start read it back as undelivered.) A status
    // too: its bytes count as an alert's (checked after alerts only, statuses took the journal
    // past maxBytes, and the volume sized from it).
    this.enforceBytes(rec);
    this.updateStats();
    // A source's records resolve in the order they were journaled. One that finds the writer's
    // queue full resolves at once (not queued), while one queued before it waits for the disk (up
    // to JOURNAL_WAIT_MS): a camera's newer status was handed to the sinks before its older one,
    // which the Kafka sink then kept as the camera's latest (and the status topic ended on it).
    const before = this.lastOf.get(m.source);
    const inOrder = before ? before.then(() => journaled) : journaled;
    this.lastOf.set(m.source, inOrder);
    void inOrder.then(() => {
      if (this.lastOf.get(m.source) === inOrder) this.lastOf.delete(m.source);
    });
    return inOrder;
  }

  /** Alerts this run dropped for a bound and did not deliver or journal again since: lost (the exit's count). */
  get lostToBounds(): number {
    return this.stats.evicted - this.stats.deliveredAfterDrop - this.stats.rejournaledAfterDrop;
  }

  /** Each source's last append not yet resolved (see append). */
  private readonly lastOf = new Map<string, Promise<void>>();

  /**
   * The undelivered alert `m` as it is now to be published (Kafka's copy without its snapshot,
   * too large with it): its record rewritten under the same key, in its place and with its age, so
   * a replay sends what Kafka took and the journal holds one record of it. Nothing when the alert
   * is no longer in the journal (acknowledged, dropped by the bounds): it is not journaled again.
   */
  replace(m: Message, json: string): void {
    const k = outboxKey(m);
    const cur = k ? this.live.get(k.key) : undefined;
    if (!k || this.closed || cur?.kind !== 'alert') return;
    const rec: OutboxRecord = { ...cur, value: json };
    const text = this.putLine(rec);
    const bytes = Buffer.byteLength(text);
    if (this.readOnly) this.offDisk(k);
    this.replaceLive(rec, bytes);
    this.enqueue(text, undefined, bytes);
    this.updateStats();
  }

  /**
   * The broker acknowledged these messages (or they were dead-lettered): forget them. After
   * close(), nothing, as append and replace do: the journal is closed, and what it holds is
   * replayed at the next start (at least once; consumers de-duplicate by alert id). (Before, the
   * ack's line was queued for a closed file: a write error counted and logged (EBADF), and the
   * run's exit said its undelivered alerts were not all on disk.)
   */
  ack(messages: readonly Message[]): void {
    if (this.closed) return;
    for (const m of messages) {
      const k = outboxKey(m);
      if (!k) continue;
      const cur = this.live.get(k.key);
      if (!cur && this.forgetDropped(k.key)) {
        this.stats.deliveredAfterDrop++;
        this.log(`outbox: alert ${k.key.slice(6)}, dropped from the journal undelivered, was handled by the Kafka sink after all, from its send buffer (acknowledged by the broker, or parked if logged so): not lost to the bound`, { source: m.source, alertId: k.key.slice(6) });
        continue;
      }
      // A status is forgotten only if it is the one journaled last (a newer one stays).
      if (!cur || (cur.kind === 'status' && !sameStatus(cur, m))) continue;
      this.dropLive(cur);
      this.stats.acked++;
      this.enqueue(line({ op: 'ack', key: cur.key, at: cur.at }));
    }
    this.updateStats();
  }

  /** `bytes`: the line's UTF-8 length, where the caller has it (counted here otherwise). */
  private enqueue(text: string, done?: () => void, bytes = Buffer.byteLength(text)): void {
    if (this.lockLost) {
      this.stats.writeErrors++;
      done?.();
      return;
    }
    if (this.readOnly) {
      // Said at open, and again every 100th line refused (the metrics count each).
      if (++this.stats.writeErrors % 100 === 0) this.log(`outbox: ${this.o.dir} is on a read-only volume (${this.readOnly}): alerts are still published but not protected against a crash (${this.stats.writeErrors} journal writes refused so far)`, { dir: this.o.dir, code: ErrorCodes.OUTBOX, errno: this.readOnly }, 'error');
      done?.();
      return;
    }
    // Bounded: while the disk does not answer, lines past maxBytes are not queued; the live
    // records (bounded by maxBytes themselves) are all written by the rewrite once it answers.
    // One line larger than that (an oversized alert, kept: enforceBytes) goes in an empty queue.
    // In bytes as written: counted in characters, a queue of labels or source names in a script
    // of 3-byte characters held three times maxBytes.
    if (this.queuedBytes > 0 && this.queuedBytes + bytes > this.o.maxBytes) {
      this.unjournaled = true;
      this.offDiskCause = `the disk did not answer its writes while more than outbox.maxBytes (${this.o.maxBytes} bytes) waited: a hung or frozen disk?`;
      done?.();
      return;
    }
    this.queuedBytes += bytes;
    this.queue.push({ text, bytes, done });
    this.writing ??= this.writeLoop();
  }

  private async writeLoop(): Promise<void> {
    // Begun from append's enqueue, before the bound has dropped what the new record displaces:
    // the liveBytes seen then were over maxBytes, and compactAt (twice them) let the batch check
    // below pass a whole batch beyond twice maxBytes. After this tick, what append does is done
    // (and every record queued in it goes in the first batch).
    await Promise.resolve();
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        this.queuedBytes = 0;
        const body = batch.length === 1 ? batch[0].text : batch.map((b) => b.text).join('');
        let bodyBytes = 0;
        for (const b of batch) bodyBytes += b.bytes;
        // Counted before it is written: a batch that would take the journal past compactAt is
        // covered by a compaction instead (it writes every live record; the batch's acks are of
        // records gone from them). Checked only after it, the journal passed twice maxBytes by a
        // whole batch (up to maxBytes: what piled up during one slow write), and with its copy the
        // three times maxBytes the volume is sized for.
        if (this.fileBytes + bodyBytes > this.compactAt() && !this.closed && this.mono() >= this.compactAfter && (await this.rewrite())) {
          for (const b of batch) b.done?.();
          continue;
        }
        // After a failed or short write the file may end mid-line: start on a fresh line, so the
        // torn piece fails its checksum alone and the records after it read back.
        const text = (this.realign ? '\n' : '') + body;
        try {
          await writeFully(this.fh, Buffer.from(text), (n) => (this.fileBytes += n));
          if (this.o.fsync) await this.fh.datasync();
          this.realign = false;
          // The file written is still the journal under its name: a folder deleted (a cleanup job,
          // an `rm -rf`) or moved away while argus ran took it along, and every write after went
          // on "working" into a file no name led to, lost at the next crash, the exit saying kept.
          const moved = !(await this.inPlace());
          const restored = moved && (await this.journalLost());
          // Writes work again after some failed (a full disk that has room now): the records those
          // held are only in memory, so the journal is rewritten with every live record at once.
          // (Not where it cannot be put back: no folder, another argus's lock; looked at again next time.)
          if (this.unjournaled && moved === restored) await this.rejournal(moved ? 'outbox: the journal was written again in its place, with every undelivered record' : 'outbox: journal writes work again; rewritten with every undelivered record');
        } catch (e) {
          this.realign = true;
          const spell = !this.unjournaled;
          this.unjournaled = true;
          this.offDiskCause = writeFailure((e as NodeJS.ErrnoException).code ?? (e as Error).message);
          this.stats.writeErrors++;
          if ((e as NodeJS.ErrnoException).code === 'EROFS') this.stats.readOnly = 'EROFS';
          // Counted on its own (writeErrors also counts failed compactions: one at open, on a
          // full disk, kept every later write failure of the run unsaid until the 100th), and
          // said again when a new spell of failures starts a minute or more after the last said.
          const failures = ++this.failedWrites;
          if ((spell && this.mono() - this.failureSaidAt >= 60_000) || failures % 100 === 0) {
            this.failureSaidAt = this.mono();
            this.log(`outbox: journal write failed (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); alerts are still published but not protected against a crash`, { dir: this.o.dir, failures, code: ErrorCodes.OUTBOX, errno: (e as NodeJS.ErrnoException).code }, 'error');
          }
          // What fills the disk (or the file size limit) may be the journal itself, its delivered
          // records waiting for the next compaction: compact now rather than when the file is big
          // (a small state volume never got there, and every alert after was unprotected).
          await this.rejournal('outbox: the journal was compacted after a failed write; every undelivered record is on disk again');
        }
        for (const b of batch) b.done?.();
        if (this.fileBytes > this.compactAt() && !this.closed && this.mono() >= this.compactAfter) await this.rewrite();
      }
    } finally {
      this.writing = undefined;
    }
  }

  /**
   * The journal rewritten with every live record after writes failed (`unjournaled`), unless a
   * compaction failed a moment ago; `said` is logged when it worked.
   */
  private async rejournal(said: string): Promise<void> {
    if (!this.unjournaled || this.closed || this.mono() < this.compactAfter) return;
    // The lines queued now are covered by the rewrite (it writes every live record):
    // written after it, an older status would land after the newer one it holds.
    const covered = this.queue.length;
    if (!(await this.rewrite())) return;
    this.unjournaled = false;
    this.offDiskCause = undefined;
    this.stats.readOnly = undefined;
    for (const q of this.queue.splice(0, covered)) {
      this.queuedBytes -= q.bytes;
      q.done?.();
    }
    // Said once, then every 100th time (a disk that refuses every other write rewrote and said it each time).
    if (++this.rejournaled === 1 || this.rejournaled % 100 === 0) this.log(said, { dir: this.o.dir, pending: this.live.size, times: this.rejournaled });
  }

  /** Rewrites after failed writes so far. */
  private rejournaled = 0;
  /** The journal file written (device and inode), to tell it is still the one under its name. */
  private journalId = '';

  /** Opens the journal for appending, and notes which file it is and its size. */
  private async openJournal(path: string): Promise<void> {
    this.fh = await open(path, 'a', PRIVATE_FILE);
    // By its name, as inPlace looks (a handle's fstat may name a file otherwise on some file systems: overlayfs).
    const st = await stat(path).catch(() => this.fh.stat());
    this.journalId = `${st.dev}:${st.ino}`;
    // What compactAt is measured against: the file as it is. (Counted from 0 when the compaction at
    // open failed, a full disk, the journal then grew twice maxBytes past what it held: ~250 KB
    // for maxBytes 64 KiB, over the three times maxBytes the volume is sized for.)
    this.fileBytes = st.size;
  }

  /** Whether the file written is still the journal under its name in the folder. */
  private async inPlace(): Promise<boolean> {
    const st = await stat(join(this.o.dir, FILE)).catch(() => undefined);
    return st !== undefined && `${st.dev}:${st.ino}` === this.journalId;
  }

  /**
   * The journal was removed or replaced under argus (its folder deleted or moved): the folder is
   * made again (its user's alone, and checked as at open) and locked again, and the journal is
   * marked to be rewritten with every live record. Whether that can be tried (logged either way).
   */
  private async journalLost(): Promise<boolean> {
    this.unjournaled = true;
    this.offDiskCause = 'its journal was removed or replaced while argus ran (its folder deleted or moved?) and could not be written there again';
    // Until it can be put back, nothing is written there (rewrite): a compaction renamed the
    // journal into a folder refused as unsafe, or one whose lock is not this opening's.
    this.adrift = true;
    const { dir } = this.o;
    try {
      await makeDir(dir, PRIVATE_DIR);
      const unsafe = await unsafeFolder(dir);
      if (unsafe) throw new Error(`it ${unsafe}`);
      // Another argus may have made the folder, its lock and journal since (a start while the
      // folder was gone): its journal is never replaced by this one's; this one gives way.
      if (!(await this.relock())) return false;
      // The adoption done (its mark went with the folder): else the next start took again, from an
      // older release's folder that is another pipeline's today, what that one journaled there since.
      if (!(await stat(join(dir, ADOPTED)).catch(() => undefined))) await this.markAdopted();
      // And whose journal it is (its mark went with the folder too).
      if (!(await stat(join(dir, OWNER)).catch(() => undefined))) await this.markOwner();
    } catch (e) {
      if (this.journalLostSaid++ % 100 === 0) this.log(`outbox: the journal ${join(dir, FILE)} was removed or replaced while argus ran, and cannot be written again there (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); undelivered alerts are not protected against a crash`, { dir }, 'error');
      return false;
    }
    if (this.journalLostSaid++ % 100 === 0) this.log(`outbox: the journal ${join(dir, FILE)} was removed or replaced while argus ran (its folder deleted or moved?); it is written again there with every undelivered record`, { dir, pending: this.live.size }, 'error');
    this.adrift = false;
    return true;
  }

  /** The journal was removed or replaced and cannot be put back in its folder yet (journalLost): no rewrite goes there. */
  private adrift = false;

  private journalLostSaid = 0;

  /**
   * Writes this opening's lock again where none is (the folder was deleted); whether the lock
   * there is this opening's. One another argus wrote meanwhile stands, its owner written in or not
   * yet (empty, not the file this opening made): this one gives way to it (loseLock).
   */
  private async relock(): Promise<boolean> {
    if (!this.owner || this.lockLost) return false;
    const path = join(this.o.dir, LOCK);
    await this.createLock(path).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    const held = parseLock(await readLockText(path), this.owner);
    if (held && held.id !== this.owner.id) this.loseLock(held);
    if (held) return held.id === this.owner.id;
    const whose = await this.ownerlessLock(path);
    if (whose === 'another') this.loseLock(undefined);
    // This opening's own, held empty; or gone again meanwhile: looked at again next time.
    return whose === 'mine';
  }

  /** Journal writes that failed (not compactions), and when one was last said (monotonic ms). */
  private failedWrites = 0;
  private failureSaidAt = -Infinity;
  /** close() gave up on the disk: what it had not written may be missing. */
  private gaveUp = false;

  /**
   * Whether the journal holds every undelivered record (false after failed writes, until a rewrite
   * works). Read-only: every undelivered alert (see offDisk).
   */
  get journaled(): boolean {
    return !this.unjournaled && !this.lockLost && !this.gaveUp;
  }

  /**
   * What /healthz and /api/sources say of it (authorised): whether the undelivered alerts would
   * survive a crash now (journaled), how many wait, and a read-only volume's errno. A read-only
   * or failing volume was said only in the log, at the start and at the exit.
   */
  health(): { journaled: boolean; pendingAlerts: number; readOnly?: string; agedOnDisk?: number; writableAgain?: boolean; offDisk?: string } {
    const offDisk = this.whyOffDisk();
    return { journaled: this.journaled, pendingAlerts: this.pendingAlerts, ...(this.stats.readOnly ? { readOnly: this.stats.readOnly } : {}), ...(this.stats.agedOnDisk ? { agedOnDisk: this.stats.agedOnDisk } : {}), ...(this.stats.writableAgain ? { writableAgain: true } : {}), ...(offDisk ? { offDisk } : {}) };
  }

  /**
   * Why the journal does not hold every undelivered record (journaled false), in words, as argus
   * saw it: another argus took its lock over, its writes failed (the errno: a full disk only where
   * it said ENOSPC), the disk did not answer them, the journal was removed, the stop gave up on the
   * disk; undefined while it does, or where only a read-only volume is the cause (`readOnly` says
   * that). The exit texts name it; before, each said "its writes failed: a full disk?".
   */
  whyOffDisk(): string | undefined {
    const why: string[] = [];
    if (this.lockLost) why.push(`another process took the journal's lock over (${this.lockTakenBy}) while this one was frozen: this one wrote the journal no more`);
    if (this.unjournaled && this.offDiskCause) why.push(this.offDiskCause);
    if (this.gaveUp) why.push(`the disk did not finish the journal's writes within ${(this.closeWaitedMs ?? 0) / 1000} s at the stop`);
    return why.length > 0 ? why.join('; ') : undefined;
  }

  /** Why writes left records in memory only (see whyOffDisk), while `unjournaled`; a read-only volume's has none (`readOnly`). */
  private offDiskCause: string | undefined;
  /** Who took the lock over (loseLock). */
  private lockTakenBy: string | undefined;
  /** How long close waited for the disk before it gave up (gaveUp). */
  private closeWaitedMs: number | undefined;

  private realign = false;
  /** A write failed since the journal last held every live record (see writeLoop). */
  private unjournaled = false;
  /** After a failed compaction, the next is not tried before this (monotonic ms): it failed after every write batch. */
  private compactAfter = 0;
  private compactFailures = 0;

  /**
   * The journal's size past which it is compacted: twice its live records (at least 4 MiB, so a
   * few live records are not rewritten after every write), but no more than twice maxBytes while
   * they are within it. The journal then never passes 2 × maxBytes (plus a write), nor the
   * journal and its copy during a compaction 3 × maxBytes: the state volume a long outage needs.
   * (Before, a journal of a small maxBytes grew to 4 MiB first: on a volume of twice maxBytes,
   * as advised, a broker outage filled it, no copy fitted beside it, and every alert after was
   * unprotected for the rest of the outage.)
   */
  private compactAt(): number {
    const twiceLive = 2 * this.liveBytes + 64 * 1024;
    return this.liveBytes <= this.o.maxBytes ? Math.min(Math.max(4 * 1024 * 1024, twiceLive), 2 * this.o.maxBytes) : twiceLive;
  }

  /** Writes the live records to a new file and swaps it in (atomic rename), then reopens for appending; false if that failed. */
  private async rewrite(): Promise<boolean> {
    if (this.lockLost || this.adrift) return false;
    const path = join(this.o.dir, FILE);
    const tmp = `${path}.tmp`;
    try {
      await this.writeCopy(tmp);
      await rename(tmp, path);
      const d = await open(this.o.dir, 'r').catch(() => undefined);
      await d?.sync().catch(() => undefined);
      await d?.close();
      await this.fh?.close().catch(() => undefined);
      await this.openJournal(path);
      this.realign = false;
      this.compactAfter = 0;
      this.compactFailures = 0;
      return true;
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      this.stats.writeErrors++;
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      if (!this.fh) {
        // At open (a full disk, say): go on appending to the journal as it is rather than
        // refusing to start; it is compacted once a rewrite succeeds.
        try {
          await this.openJournal(path);
          this.realign = true;
        } catch (e2) {
          throw new ArgusError(ErrorCodes.OUTBOX, `outbox: cannot write ${path} (${(e2 as NodeJS.ErrnoException).code ?? (e2 as Error).message})`, { cause: e2 });
        }
      }
      this.compactAfter = this.mono() + COMPACT_RETRY_MS;
      if (++this.compactFailures === 1 || this.compactFailures % 100 === 0) this.log(`outbox: compaction failed (${why}); the journal keeps growing until it works (tried again after ${COMPACT_RETRY_MS / 1000} s; ${this.compactFailures} failure(s) so far)`, { dir: this.o.dir, code: ErrorCodes.OUTBOX, errno: (e as NodeJS.ErrnoException).code }, 'error');
      return false;
    }
  }

  /** The live records as one journal written to `path` (a new file), synced; its size. */
  private async writeCopy(path: string): Promise<number> {
    // Record by record: one string of the whole journal could pass V8's string limit. Made new
    // (whatever has its name removed first: a named pipe there held the open, and the writer, for good).
    await rm(path, { force: true });
    const t = await open(path, 'wx', PRIVATE_FILE);
    let size = 0;
    try {
      for (const r of this.live.values()) size += await writeFully(t, Buffer.from(this.putLine(r)));
      await t.sync();
    } finally {
      await t.close();
    }
    return size;
  }

  private putLine(r: OutboxRecord): string {
    return line({ op: 'put', key: r.key, kind: r.kind, source: r.source, at: r.at, boot: r.boot, up: r.up, value: r.value });
  }

  /**
   * A live record; `bytes`: its line in the journal. (Guessed from its value before, 15 % short
   * for alerts without snapshots, whose JSON's quotes the journal escapes: the bound was that
   * much over on disk.)
   */
  private addLive(r: OutboxRecord, ageMs: number, bytes: number, monoNow = this.mono()): void {
    this.live.set(r.key, r);
    this.born.set(r.key, monoNow - Math.max(0, ageMs));
    this.lineBytes.set(r.key, bytes);
    this.liveBytes += bytes;
  }

  /** The live records in order of birth, the oldest first (what the bounds rely on; once a start, not per write). */
  private sortLive(): void {
    const byAge = [...this.live.values()].sort((a, b) => this.born.get(a.key)! - this.born.get(b.key)!);
    this.live.clear();
    for (const r of byAge) this.live.set(r.key, r);
  }

  /** A live record's newer line under its key, in its place and with its age. */
  private replaceLive(r: OutboxRecord, bytes: number): void {
    this.live.set(r.key, r);
    this.liveBytes += bytes - (this.lineBytes.get(r.key) ?? 0);
    this.lineBytes.set(r.key, bytes);
  }

  private dropLive(r: OutboxRecord): void {
    this.live.delete(r.key);
    this.born.delete(r.key);
    this.liveBytes -= this.lineBytes.get(r.key) ?? 0;
    this.lineBytes.delete(r.key);
  }

  /** Each live record's line in the journal, bytes (what a compaction writes). */
  private readonly lineBytes = new Map<string, number>();

  /**
   * The oldest alerts dropped until the live records are within maxBytes, never `newest`, the
   * alert just journaled: one larger than what maxBytes leaves is kept over the bound (counted in
   * `oversized`, logged) until it is delivered or a newer alert comes. (It was dropped the moment
   * it was journaled: lost, with an outage, and also without one if argus stopped first.)
   */
  private enforceBytes(newest: OutboxRecord): void {
    if (this.liveBytes <= this.o.maxBytes) return;
    // A status past the bound: the oldest other sources' statuses go first (a state, superseded
    // at the source's next change), then the oldest alerts; never this one.
    if (newest.kind === 'status') {
      for (const r of this.live.values()) {
        if (this.liveBytes <= this.o.maxBytes) return;
        if (r.kind !== 'status' || r === newest) continue;
        this.dropLive(r);
        if (this.fh) this.enqueue(line({ op: 'ack', key: r.key, at: r.at }));
        this.log(`outbox: the status of ${r.source} dropped undelivered: the journal is over outbox.maxBytes (${this.o.maxBytes})`, { source: r.source }, 'error');
      }
    }
    for (const r of this.live.values()) {
      if (this.liveBytes <= this.o.maxBytes) break;
      if (r.kind !== 'alert' || r === newest) continue;
      this.evict(r, `the journal is over outbox.maxBytes (${this.o.maxBytes})`);
    }
    if (this.liveBytes <= this.o.maxBytes || newest.kind === 'status') return;
    this.stats.oversized++;
    this.log(`outbox: alert ${newest.key.slice(6)} takes ${this.lineBytes.get(newest.key)} bytes in the journal, more than outbox.maxBytes (${this.o.maxBytes}) leaves beside the sources' statuses: kept over the bound, never dropped as it is raised; older alerts go first (raise outbox.maxBytes, or lower alerts.snapshot.maxBytes)`, { source: newest.source, oversized: this.stats.oversized }, 'error');
  }

  private expire(): void {
    const cutoff = this.mono() - this.o.maxAgeMs;
    const agedOnDisk: string[] = [];
    for (const r of this.live.values()) {
      if (this.born.get(r.key)! >= cutoff) break; // records are in order of append
      if (r.kind === 'alert' && this.foundOnDisk.has(r.key)) {
        this.dropLive(r);
        agedOnDisk.push(r.key.slice(6));
      } else if (r.kind === 'alert') this.evict(r, this.tooOld());
      else this.dropLive(r);
    }
    if (agedOnDisk.length > 0) this.agedOnDisk(agedOnDisk);
    this.updateStats();
  }

  /**
   * Read-only: alerts found in the journal there (foundOnDisk) that outlived maxAgeHours: not
   * sent, and not taken out of the journal (nothing is written there), so every read-only start
   * finds them again. Said once a run (one line), counted in `agedOnDisk` and health, never in
   * the lost (`evicted`): before, each start logged each "dropped undelivered", counted it lost
   * and ended with status 3, for the same alerts, run after run. The first start on a writable
   * volume drops them from the journal and counts them lost, once.
   */
  private agedOnDisk(ids: string[], dir = this.o.dir): void {
    this.stats.agedOnDisk = (this.stats.agedOnDisk ?? 0) + ids.length;
    const shown = ids.slice(0, 10).join(', ') + (ids.length > 10 ? `, and ${ids.length - 10} more` : '');
    this.log(`outbox: ${ids.length} alert(s) found in the journal in ${dir} are older than outbox.maxAgeHours (${this.o.maxAgeMs / 3_600_000} h): not replayed; they cannot be removed from a read-only folder (EROFS), so every start finds them there again, and says them so, until the volume is writable: the first start then drops them and counts them lost, once (${shown})`, { dir: this.o.dir, code: ErrorCodes.OUTBOX, agedOnDisk: this.stats.agedOnDisk }, 'error');
  }

  private evict(r: OutboxRecord, why: string): void {
    this.dropLive(r);
    if (this.foundOnDisk.has(r.key)) {
      // Read-only: found in the journal there, and still in it (nothing is taken out there): read
      // again at the next start, not lost now. (It was counted and said lost, and the exit said so.)
      this.log(`outbox: alert ${r.key.slice(6)} dropped from memory undelivered (${why}); it is still in the journal on the read-only volume, read again at the next start (replayed then, unless outbox.maxAgeHours drops it)`, { source: r.source, alertId: r.key.slice(6), code: ErrorCodes.OUTBOX }, 'warn');
      return;
    }
    this.dropped(r, why, true);
    if (this.fh) this.enqueue(line({ op: 'ack', key: r.key, at: r.at }));
  }

  /**
   * An alert dropped undelivered for a bound: counted and logged. `held`: it may still be in the
   * Kafka sink's send buffer (dropped while this run publishes; not one found at open, never
   * given to a sink), which may deliver it yet: remembered, and its ack then said (see ack).
   */
  private dropped(r: OutboxRecord, why: string, held = false): void {
    this.stats.evicted++;
    // The first ones kept, not the last (see DROPPED_KEPT): forgetting the oldest forgot those the
    // sink held in memory, and its delivery of them, after an outage of 50 000 drops, was counted lost.
    // Past them, the latest few (one dropped as it was raised comes back in full a moment later).
    if (held && this.droppedKeys.size < DROPPED_KEPT) this.droppedKeys.add(r.key);
    else if (held) {
      this.droppedLately.add(r.key);
      if (this.droppedLately.size > DROPPED_LATELY) this.droppedLately.delete(this.droppedLately.values().next().value!);
    }
    this.log(`outbox: alert ${r.key.slice(6)} dropped undelivered: ${why}`, { source: r.source, alertId: r.key.slice(6), code: ErrorCodes.ALERT_UNDELIVERED }, 'error');
  }

  private tooOld(): string {
    return `older than outbox.maxAgeHours (${this.o.maxAgeMs / 3_600_000} h)`;
  }

  private updateStats(): void {
    this.stats.pending = this.live.size;
    this.stats.pendingBytes = this.liveBytes;
  }

  /** Alerts still undelivered. */
  get pendingAlerts(): number {
    let n = 0;
    for (const r of this.live.values()) if (r.kind === 'alert') n++;
    return n;
  }

  /**
   * Waits for queued writes, compacts, releases the lock. What is still pending stays for the
   * next start. A disk that does not answer within CLOSE_WAIT_MS is given up on (logged): the
   * stop goes on (it hung for as long as the disk did), and what it had not written is lost.
   */
  async close(): Promise<void> {
    if (this.closed || this.closing) return this.closing;
    if (this.ageTimer) clearInterval(this.ageTimer);
    const wait = this.o.closeWaitMs ?? CLOSE_WAIT_MS;
    let t: NodeJS.Timeout | undefined;
    const inner = this.closeInner();
    this.closing = inner;
    // All of it within the bound: the writes, the rewrite, the lock (a disk that freezes while
    // the writer is idle hung the rewrite, and the stop with it).
    const done = await Promise.race([inner.then(() => true), new Promise<false>((r) => (t = setTimeout(() => r(false), wait)))]);
    clearTimeout(t);
    if (!done) {
      this.gaveUp = true;
      this.closeWaitedMs = wait;
      this.closed = true;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.releaseGuard();
      openHere.delete(this.hereKey);
      this.log(`outbox: the disk has not finished the journal's writes in ${wait / 1000} s; stopping without them (${this.pendingAlerts} undelivered alert(s) may not be on disk)`, { dir: this.o.dir }, 'error');
    }
  }

  private async closeInner(): Promise<void> {
    while (this.writing) await this.writing;
    this.closed = true;
    // Nothing was written, nor locked: nothing to put back, compact or release.
    if (this.readOnly) {
      this.releaseGuard();
      openHere.delete(this.hereKey);
      return;
    }
    // A journal removed since the last write (its folder deleted just before the stop) is put
    // back by the rewrite below, or the stop says the alerts may be lost (journaled false).
    const back = this.lockLost || (await this.inPlace()) || (await this.journalLost());
    if (!this.lockLost && back && (await this.rewrite())) {
      this.unjournaled = false;
      this.offDiskCause = undefined;
    }
    await this.fh?.close().catch(() => undefined);
    if (!this.lockLost) await this.unlock();
    // (Taken over: the other's lock stays; this opening's handle of its own, removed, is closed.)
    await this.lockFile?.fh.close().catch(() => undefined);
    this.lockFile = undefined;
    openHere.delete(this.hereKey);
  }

  /** Removes the lock if it is still this opening's (never one another argus took over). */
  private async unlock(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    const path = join(this.o.dir, LOCK);
    const held = this.owner && parseLock(await readLockText(path), this.owner);
    if (held && held.id === this.owner!.id) await rm(path, { force: true }).catch(() => undefined);
    else if (held) this.log(`outbox: the lock of ${this.o.dir} is no longer this process's (pid ${held.pid} on ${held.host} holds it); left in place`, { dir: this.o.dir }, 'error');
    // Held empty (a full disk): removed if the file there is still the one this opening made.
    else if ((await this.ownerlessLock(path)) === 'mine') await rm(path, { force: true }).catch(() => undefined);
    await this.lockFile?.fh.close().catch(() => undefined);
    this.lockFile = undefined;
  }
}

/**
 * The few fields of a journaled message a sink and the acks need (type, source, alert id,
 * stamps), without parsing its JSON (an alert with its snapshot is ~200 KB); statuses are
 * small and parsed.
 */
export function recordMessage(r: OutboxRecord): Message {
  if (r.kind === 'status') return JSON.parse(r.value) as Message;
  return { type: 'alert', source: r.source, alert: { id: r.key.slice('alert:'.length) }, stamps: { emitted: r.at } } as unknown as Message;
}

function sameStatus(cur: OutboxRecord, m: Message): boolean {
  if (m.type !== 'status') return true;
  // The journaled value holds the status's `at` and `state`; cheap check without parsing.
  return cur.value.includes(`"at":${m.at},`) && cur.value.includes(`"state":"${m.state}"`);
}
