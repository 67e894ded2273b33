/**
 * A worker's unreachable reports (cluster.unreachableAfterMs) kept on its local disk, in its
 * outbox folder, so that a worker restarted under the same id (a rolling restart, a crash) tells
 * the group at its first join which slots it cannot run. Before, it forgot them: the leader could
 * hand it back a slot it could not reach, and that slot's cameras were dark for
 * unreachableAfterMs again. Bounded (MAX_STORED_REPORTS, MAX_STORED_BYTES) and expiring (each
 * report's own time, by the wall clock, which runs on while the worker is down). A camera is
 * named by its id and its record's offset in the cameras topic: nothing of the record's text is on
 * disk, nor anything derived from it (an unsalted hash of a record holding a password was an
 * offline brute-force target for that password); a report of a record written since (an edit,
 * its credentials' included: a new offset) is not taken back.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** One report as kept on disk: times are Date.now() epochs. */
export interface StoredReport {
  camera: string;
  slot: number;
  /** The offset of the camera's record (in its slot of the cameras topic) when reported. */
  offset: string;
  reportedAt: number;
  confirmedAt: number;
  /** Kept this long after confirmedAt. */
  forgetMs: number;
  /** Reports of the record with no frame between (the worker's strikes). */
  n: number;
}

/**
 * A camera whose record this worker's chain refused (Worker.unusable), as kept on disk: its id and
 * its record's offset (nothing of its text, nor the reason, which quotes it); `chain`, for one
 * refused here ('here': a class its model lacks, lines with tracking off), what the refusal
 * depended on: a hash of the model's classes and the tracking settings (chainTag), so that a
 * worker restarted with another model tries the camera again.
 */
export interface StoredRefusal {
  camera: string;
  offset: string;
  scope: 'here' | 'record';
  chain?: string;
}

/** The most refusals kept on disk. */
export const MAX_STORED_REFUSALS = 4096;

/** The most reports kept on disk (the member data names at most MAX_UNREACHABLE_SLOTS slots; a slot may hold many cameras). */
export const MAX_STORED_REPORTS = 4096;
/** The longest file read back: anything longer is not argus's and is ignored. */
export const MAX_STORED_BYTES = 1024 * 1024;
/** 2: records named by their offset (1 named them by a hash of their text: not read). */
const VERSION = 2;

/** The file a worker keeps its reports in, in its outbox folder (named by its id: a folder on a shared volume serves several). */
export function reportsFile(outboxDir: string, workerId: string): string {
  return `${outboxDir.replace(/[\\/]+$/, '')}/cluster-unreachable.${workerId}.json`;
}

/**
 * The reports in `file` still standing at `now` (Date.now()), MAX_STORED_REPORTS at most; none
 * when it is missing, too long, or not such a file (`onBad` is told why, but for a missing file).
 */
export async function readReports(file: string, now = Date.now(), onBad?: (why: string) => void, cluster = ''): Promise<StoredReport[]> {
  return (await readStored(file, now, onBad, cluster)).reports;
}

/** The reports (readReports) and the refusals (MAX_STORED_REFUSALS at most) in `file`. */
export async function readStored(file: string, now = Date.now(), onBad?: (why: string) => void, cluster = ''): Promise<{ reports: StoredReport[]; refused: StoredRefusal[] }> {
  const none = { reports: [], refused: [] };
  let text: string;
  try {
    // Read up to one byte past the bound, never the whole of a file that is not argus's.
    const h = await open(file, 'r');
    try {
      const buf = Buffer.alloc(MAX_STORED_BYTES + 1);
      let n = 0;
      for (let got = -1; got !== 0 && n < buf.length; n += got) got = (await h.read(buf, n, buf.length - n, n)).bytesRead;
      if (n > MAX_STORED_BYTES) {
        onBad?.(`longer than ${MAX_STORED_BYTES} bytes`);
        return none;
      }
      text = buf.toString('utf8', 0, n);
    } finally {
      await h.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') onBad?.((e as Error).message);
    return none;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    onBad?.('not JSON');
    return none;
  }
  const list = v && typeof v === 'object' && (v as { version?: unknown }).version === VERSION ? (v as { reports?: unknown }).reports : undefined;
  if (!Array.isArray(list)) {
    onBad?.('not a list of reports');
    return none;
  }
  // Another cluster's (one machine, one outbox folder, two sites' groups): its cameras' ids, slots and offsets may be this one's too.
  if (((v as { cluster?: unknown }).cluster ?? '') !== cluster) {
    onBad?.('of another cluster');
    return none;
  }
  const out: StoredReport[] = [];
  const seen = new Set<string>();
  const num = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
  for (const r of list.slice(0, MAX_STORED_REPORTS) as Partial<StoredReport>[]) {
    if (!r || typeof r !== 'object' || typeof r.camera !== 'string' || r.camera.length > 256 || seen.has(r.camera) || typeof r.offset !== 'string' || !/^\d{1,20}$/.test(r.offset)) continue;
    if (!Number.isInteger(r.slot) || r.slot! < 0 || !num(r.reportedAt) || !num(r.confirmedAt) || !num(r.forgetMs) || r.forgetMs < 0 || !Number.isInteger(r.n) || r.n! < 1) continue;
    // Expired while the worker was down; and a time in the future (a clock set back) is read as now.
    const confirmedAt = Math.min(r.confirmedAt, now);
    if (now - confirmedAt >= r.forgetMs) continue;
    seen.add(r.camera);
    out.push({ camera: r.camera, slot: r.slot!, offset: r.offset, reportedAt: Math.min(r.reportedAt, now), confirmedAt, forgetMs: r.forgetMs, n: Math.min(r.n!, 64) });
  }
  const refused: StoredRefusal[] = [];
  const list2 = (v as { refused?: unknown }).refused;
  const taken = new Set<string>();
  for (const r of (Array.isArray(list2) ? list2.slice(0, MAX_STORED_REFUSALS) : []) as Partial<StoredRefusal>[]) {
    if (!r || typeof r !== 'object' || typeof r.camera !== 'string' || r.camera.length > 256 || taken.has(r.camera) || typeof r.offset !== 'string' || !/^\d{1,20}$/.test(r.offset)) continue;
    if ((r.scope !== 'here' && r.scope !== 'record') || (r.scope === 'here' && (typeof r.chain !== 'string' || r.chain.length > 64))) continue;
    taken.add(r.camera);
    refused.push({ camera: r.camera, offset: r.offset, scope: r.scope, ...(r.scope === 'here' ? { chain: r.chain } : {}) });
  }
  return { reports: out, refused };
}

/** What names a worker's cluster in its reports file (not secret): a hash of its brokers, group and cameras topic. */
export function clusterTag(brokers: readonly string[], group: string, camerasTopic: string): string {
  return createHash('sha256').update(JSON.stringify([[...brokers].sort(), group, camerasTopic])).digest('base64url').slice(0, 16);
}

/** What a worker's refusals here depended on (StoredRefusal.chain): its model's classes and its tracking settings, hashed. */
export function chainTag(labels: readonly string[], tracking: unknown): string {
  return createHash('sha256').update(JSON.stringify([labels, tracking])).digest('base64url').slice(0, 16);
}

/** Writes `reports` and `refused` of `cluster` (clusterTag) to `file` (MAX_STORED_REPORTS and MAX_STORED_REFUSALS at most), through a temporary file renamed over it: a crash mid-write leaves the last whole file. None: the file is removed. */
export async function writeReports(file: string, reports: readonly StoredReport[], cluster = '', refused: readonly StoredRefusal[] = []): Promise<void> {
  if (reports.length === 0 && refused.length === 0) return rm(file, { force: true });
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ version: VERSION, cluster, reports: reports.slice(0, MAX_STORED_REPORTS), ...(refused.length > 0 ? { refused: refused.slice(0, MAX_STORED_REFUSALS) } : {}) }));
  await rename(tmp, file);
}
