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
        return [];
      }
      text = buf.toString('utf8', 0, n);
    } finally {
      await h.close();
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') onBad?.((e as Error).message);
    return [];
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    onBad?.('not JSON');
    return [];
  }
  const list = v && typeof v === 'object' && (v as { version?: unknown }).version === VERSION ? (v as { reports?: unknown }).reports : undefined;
  if (!Array.isArray(list)) {
    onBad?.('not a list of reports');
    return [];
  }
  // Another cluster's (one machine, one outbox folder, two sites' groups): its cameras' ids, slots and offsets may be this one's too.
  if (((v as { cluster?: unknown }).cluster ?? '') !== cluster) {
    onBad?.('of another cluster');
    return [];
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
  return out;
}

/** What names a worker's cluster in its reports file (not secret): a hash of its brokers, group and cameras topic. */
export function clusterTag(brokers: readonly string[], group: string, camerasTopic: string): string {
  return createHash('sha256').update(JSON.stringify([[...brokers].sort(), group, camerasTopic])).digest('base64url').slice(0, 16);
}

/** Writes `reports` of `cluster` (clusterTag) to `file` (MAX_STORED_REPORTS at most), through a temporary file renamed over it: a crash mid-write leaves the last whole file. None: the file is removed. */
export async function writeReports(file: string, reports: readonly StoredReport[], cluster = ''): Promise<void> {
  if (reports.length === 0) return rm(file, { force: true });
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ version: VERSION, cluster, reports: reports.slice(0, MAX_STORED_REPORTS) }));
  await rename(tmp, file);
}
