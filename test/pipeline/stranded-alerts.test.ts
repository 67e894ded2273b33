import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { runPipeline } from '../../src/pipeline/run.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox, readOutbox, strandedAlerts } from '../../src/sinks/outbox.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';

/** A journal in `dir` left with `n` undelivered alerts by a run that stopped (its lock released). */
async function leave(dir: string, n: number, source = 'cam'): Promise<void> {
  const outbox = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
  for (let i = 0; i < n; i++) {
    const a = { type: 'alert', version: 1, source, stamps: { emitted: 1 }, alert: { id: source === 'cam' ? `${dir}-${i}` : `${dir}-${source}-${i}` } } as unknown as AlertMessage;
    await outbox.append(a, JSON.stringify(a));
  }
  await outbox.close();
}

/**
 * The outbox on with no Kafka sink: what these runs look at (the folders it takes over, the
 * ones it names) needs no broker. The YAML refuses it (nothing would ever take the records
 * out); runPipeline takes the config as given.
 */
function withOutbox(config: { outbox: { enabled?: boolean } }): void {
  config.outbox.enabled = true;
}

describe('undelivered alerts in a journal no run opens (a pipeline renamed, a worker whose id changed)', () => {
  let detector: Detector;
  let clip: string;
  beforeAll(async () => {
    ({ detector } = await fakeDetector());
    clip = join(mkdtempSync(join(tmpdir(), 'argus-stranded-clip-')), 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '3', '-pix_fmt', 'yuv420p', clip]);
  });
  afterAll(async () => {
    await detector?.release();
  });

  it('strandedAlerts names the other folders of the state directory whose journals hold alerts and that no argus holds', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-stranded-'));
    await leave(join(root, 'worker-local'), 2);
    await leave(join(root, 'mine'), 1); // the run's own: not another's
    await leave(join(root, 'busy'), 3);
    writeFileSync(join(root, 'busy', 'outbox.lock'), '{}\n'); // held (or its holder died holding it): not said
    await leave(join(root, 'delivered'), 0);
    mkdirSync(join(root, 'no-journal'));
    writeFileSync(join(root, 'a-file'), 'x');
    expect(Object.fromEntries(await strandedAlerts(join(root, 'mine')))).toEqual({ 'worker-local': 2 });
  });

  it('a run with the default outbox folder logs them, naming the folder and what sends them', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-stranded-run-'));
    await leave(join(root, 'worker-local'), 2);
    await leave(join(root, 'old-name'), 1);
    const config = parseConfigText(`name: worker-vm\nsources:\n  - {id: cam, uri: ${clip}, rate: fast}\n`, PipelineSchema, 'p.yaml', {});
    withOutbox(config);
    const errors: string[] = [];
    await runPipeline(config, { detector, status: false, env: { ARGUS_STATE_DIR: root }, log: (m, _f, level) => void (level === 'error' && errors.push(m)) });
    // The check runs in the background: waited for (up to a minute on a busy machine).
    for (let t = 0; t < 600 && errors.filter((e) => e.startsWith('outbox:')).length < 2; t++) await new Promise((r) => setTimeout(r, 100));
    expect(errors).toContain(`outbox: ${join(root, 'worker-local')} holds 2 undelivered alert(s) that no argus has open; a worker whose id changed (its default is the machine's name): a worker run with ARGUS_WORKER_ID=local sends them (or a run of a pipeline named "worker-local")`);
    expect(errors).toContain(`outbox: ${join(root, 'old-name')} holds 1 undelivered alert(s) that no argus has open; a pipeline renamed: a run of it under the name "old-name" sends them`);
  });

  it('a pipeline whose folder an older release named otherwise (`..`: `__`, and before that the folder above the state folder) takes their journals over once, at its first start', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-legacy-'));
    const root = join(top, 'state');
    mkdirSync(root, { mode: 0o700 });
    await leave(join(root, '__'), 2); // the release before: `..` → `__` (shared with a pipeline named `__`)
    await leave(top, 1); // before that: `..` → the folder above the state folder
    await leave(top, 1, 'gone'); // of a source since taken out of the pipeline: that folder is no other pipeline's, all of it is `..`'s
    const config = parseConfigText(`name: ".."\nsources:\n  - {id: cam, uri: ${clip}, rate: fast}\n`, PipelineSchema, 'p.yaml', {});
    withOutbox(config);
    const logs: string[] = [];
    await runPipeline(config, { detector, status: false, env: { ARGUS_STATE_DIR: root }, log: (m) => void logs.push(m) });
    // No Kafka sink here: the three alerts are kept, in the pipeline's own folder now, and gone from the old ones.
    const own = join(root, '%2E%2E');
    const alerts = async (dir: string) => (await readOutbox(dir)).filter((r) => r.kind === 'alert');
    expect((await alerts(own)).map((r) => r.key).sort()).toEqual([`alert:${join(root, '__')}-0`, `alert:${join(root, '__')}-1`, `alert:${top}-0`, `alert:${top}-gone-0`].sort());
    expect(await readOutbox(join(root, '__'))).toEqual([]);
    expect(await readOutbox(top)).toEqual([]);
    expect((await readOutbox(own)).filter((r) => r.kind === 'status').map((r) => r.source)).toEqual(['cam']); // the run's own: its source's last state
    expect(logs.filter((m) => m.startsWith('outbox: replaying'))).toHaveLength(2);
    // Once: `__` is a pipeline of its own now, whose alerts a later run of `..` leaves alone.
    await leave(join(root, '__'), 1);
    await runPipeline(config, { detector, status: false, env: { ARGUS_STATE_DIR: root }, log: () => {} });
    expect(await readOutbox(join(root, '__'))).toHaveLength(1);
    expect(await alerts(own)).toHaveLength(4);
  });

  it("takes only its own sources' records from a folder an older release shared: `lobby_cam` is another pipeline's own folder, whose alerts went to this pipeline's Kafka", async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-legacy-shared-'));
    // The pipeline `lobby_cam` (source `door`), stopped with two alerts undelivered, and one `lobby cam` left there under the old release.
    await leave(join(root, 'lobby_cam'), 2, 'door');
    await leave(join(root, 'lobby_cam'), 1);
    const config = parseConfigText(`name: "lobby cam"\nsources:\n  - {id: cam, uri: ${clip}, rate: fast}\n`, PipelineSchema, 'p.yaml', {});
    withOutbox(config);
    await runPipeline(config, { detector, status: false, env: { ARGUS_STATE_DIR: root }, log: () => {} });
    const alerts = async (dir: string) => (await readOutbox(dir)).filter((r) => r.kind === 'alert');
    expect((await alerts(join(root, 'lobby%20cam'))).map((r) => r.key)).toEqual([`alert:${join(root, 'lobby_cam')}-0`]);
    expect((await alerts(join(root, 'lobby_cam'))).map((r) => r.key).sort()).toEqual([`alert:${join(root, 'lobby_cam')}-door-0`, `alert:${join(root, 'lobby_cam')}-door-1`]);
  });
});

describe('Outbox.adoptOnce', () => {
  it('leaves a journal that a running argus holds to it (it replays what the journal holds), and does not try again', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-'));
    await leave(join(top, 'old'), 2);
    const holder = await Outbox.open({ dir: join(top, 'old'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    const mine = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    expect(await mine.adoptOnce([join(top, 'old'), join(top, 'missing')])).toBe(0);
    expect(holder.takeRecovered()).toHaveLength(2);
    await holder.close();
    expect(await mine.adoptOnce([join(top, 'old')])).toBe(0); // done once
    expect(mine.takeRecovered()).toEqual([]);
    await mine.close();
    expect(await readOutbox(join(top, 'old'))).toHaveLength(2);
  });

  it("leaves another pipeline's records in a shared legacy folder as they are, whatever this pipeline's maxAgeHours: its own age bound applies only to what it takes", async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-age-'));
    // `lobby_cam` (maxAgeHours 72) stopped with an alert of its `door` undelivered, and `lobby cam`'s `cam` one, both raised 2 h ago (another boot).
    const old = await Outbox.open({ dir: join(top, 'lobby_cam'), maxBytes: 1 << 20, maxAgeMs: 72 * 3_600_000, fsync: false, now: () => Date.now() - 2 * 3_600_000, bootId: 'an-earlier-boot' });
    for (const source of ['door', 'cam']) {
      const a = { type: 'alert', version: 1, source, stamps: { emitted: 1 }, alert: { id: `${source}-1` } } as unknown as AlertMessage;
      await old.append(a, JSON.stringify(a));
    }
    await old.close();
    // `lobby cam` keeps undelivered alerts for 1 h.
    const logs: string[] = [];
    const mine = await Outbox.open({ dir: join(top, 'lobby%20cam'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: (m) => logs.push(m) });
    await mine.adoptOnce([join(top, 'lobby_cam')], (r) => r.source === 'cam');
    // Its own, older than its bound: dropped as its own would be (logged), not replayed.
    expect(mine.takeRecovered()).toEqual([]);
    expect(logs).toContain('outbox: alert cam-1 dropped undelivered: older than outbox.maxAgeHours (1 h)');
    await mine.close();
    // The other pipeline's is still there for it (before: dropped there by this pipeline's 1 h, logged as this one's).
    expect((await readOutbox(join(top, 'lobby_cam'))).map((r) => r.key)).toEqual(['alert:door-1']);
    expect(await readOutbox(join(top, 'lobby%20cam'))).toEqual([]);
  });

  it('what it takes is placed by age among its own records: the bounds drop the oldest first, whichever journal it came from', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-order-'));
    const alertOf = (id: string) => {
      const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id, message: 'x'.repeat(1000) } } as unknown as AlertMessage;
      return [a, JSON.stringify(a)] as const;
    };
    // Raised 50 min ago, left by an older release in its folder; and one raised just now, in its own.
    const old = await Outbox.open({ dir: join(top, 'old'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, now: () => Date.now() - 50 * 60_000, bootId: 'an-earlier-boot' });
    await old.append(...alertOf('older'));
    await old.close();
    const first = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    await first.append(...alertOf('newer'));
    await first.close();
    let mono = 0;
    const logs: string[] = [];
    const mine = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, monotonic: () => mono, log: (m) => logs.push(m) });
    await mine.adoptOnce([join(top, 'old')]);
    expect(mine.takeRecovered().map((r) => r.key)).toEqual(['alert:older', 'alert:newer']);
    // The journal as a crash would leave it now (the one taken over appended after its own) reads back oldest first too.
    mkdirSync(join(top, 'crashed'), { mode: 0o700 });
    copyFileSync(join(top, 'new', 'outbox.log'), join(top, 'crashed', 'outbox.log'));
    const crashed = await Outbox.open({ dir: join(top, 'crashed'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    expect(crashed.takeRecovered().map((r) => r.key)).toEqual(['alert:older', 'alert:newer']);
    await crashed.close();
    // 15 minutes on, the older one is past maxAgeHours (1 h): dropped, the newer kept (before, the age check stopped at the newer, first in the journal).
    mono += 15 * 60_000;
    (mine as unknown as { expire: () => void }).expire();
    expect(logs.filter((m) => m.includes('dropped undelivered'))).toEqual(['outbox: alert older dropped undelivered: older than outbox.maxAgeHours (1 h)']);
    expect(mine.get('alert:newer')).toBeDefined();
    await mine.close();
    expect((await readOutbox(join(top, 'new'))).map((r) => r.key)).toEqual(['alert:newer']);
  });

  it('an adoption whose taking-out there did not reach the disk (full) is not marked done: the next start takes them out there, without replaying them again', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-unacked-'));
    const from = join(top, 'old');
    await leave(from, 1);
    // The old folder's disk takes nothing more: its compaction and its writes (the acks) fail.
    const noRoom = async () => {
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    };
    const proto = Outbox.prototype as unknown as { openJournal: (p: string) => Promise<void>; writeCopy: (p: string) => Promise<number> };
    const { openJournal, writeCopy } = proto;
    proto.openJournal = async function (this: { fh: { write: unknown } }, path: string) {
      await openJournal.call(this, path);
      if (path.startsWith(from)) this.fh.write = noRoom;
    };
    proto.writeCopy = async function (path: string) {
      if (path.startsWith(from)) return noRoom();
      return writeCopy.call(this, path);
    };
    const mine = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    try {
      expect(await mine.adoptOnce([from])).toBe(1);
    } finally {
      proto.openJournal = openJournal;
      proto.writeCopy = writeCopy;
    }
    expect(mine.takeRecovered()).toHaveLength(1);
    await mine.close();
    // Still there (it would go to whatever pipeline opens that folder, its Kafka): not done, before it was marked done and left there for good.
    expect(await readOutbox(from)).toHaveLength(1);
    const again = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    expect(again.takeRecovered()).toHaveLength(1); // its own, from the journal
    expect(await again.adoptOnce([from])).toBe(0); // here already: only taken out there
    expect(again.takeRecovered()).toEqual([]);
    await again.close();
    expect(await readOutbox(from)).toEqual([]);
  });

  it('stays done when its folder is deleted while it runs (a cleanup job): the journal put back brings the mark back, and what the other pipeline journals in the old folder later is never taken', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-deleted-'));
    const own = join(top, 'lobby%20cam');
    const from = join(top, 'lobby_cam');
    await leave(from, 1);
    const first = await Outbox.open({ dir: own, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    expect(await first.adoptOnce([from])).toBe(1);
    rmSync(own, { recursive: true, force: true }); // a cleanup job
    const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id: 'after' } } as unknown as AlertMessage;
    await first.append(a, JSON.stringify(a)); // the journal put back
    await first.close();
    // `lobby_cam` (a source `cam` too) journals alerts of its own there since.
    await leave(from, 2);
    const again = await Outbox.open({ dir: own, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    expect(await again.adoptOnce([from])).toBe(0); // before: 2, `lobby_cam`'s alerts sent to this pipeline's Kafka
    await again.close();
    expect(await readOutbox(from)).toHaveLength(2);
  });

  it("takes nothing from a legacy folder that another pipeline of this release has named as its own (its 'pipeline' mark): what it journaled there is for its Kafka", async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-owned-'));
    const from = join(top, 'lobby_cam');
    // `lobby_cam` (this release) started first: it took its folder (the mark), and stopped with
    // an alert of its own source `cam` undelivered (its broker down).
    const other = await Outbox.open({ dir: from, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby_cam' });
    const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id: 'lobby_cam-1' } } as unknown as AlertMessage;
    await other.append(a, JSON.stringify(a));
    await other.close();
    // `lobby cam` (a source `cam` too) starts for the first time with this release.
    const logs: string[] = [];
    const mine = await Outbox.open({ dir: join(top, 'lobby%20cam'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby cam', log: (m) => logs.push(m) });
    // Before: 1, `lobby_cam`'s alert replayed to this pipeline's Kafka and taken out of its journal.
    expect(await mine.adoptOnce([from], (r) => r.source === 'cam')).toBe(0);
    expect(mine.takeRecovered()).toEqual([]);
    expect(logs.some((m) => m.includes(`${from} is the pipeline "lobby_cam"'s`))).toBe(true);
    await mine.close();
    expect((await readOutbox(from)).map((r) => r.key)).toEqual(['alert:lobby_cam-1']);
    // Done: not looked at again.
    const again = await Outbox.open({ dir: join(top, 'lobby%20cam'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby cam', log: () => {} });
    expect(await again.adoptOnce([from], (r) => r.source === 'cam')).toBe(0);
    await again.close();
    // A folder its own pipeline's name marks (an outbox.dir it had before) is taken from as any.
    const own = join(top, 'own-old');
    const before = await Outbox.open({ dir: own, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby cam' });
    await before.append(a, JSON.stringify(a));
    await before.close();
    const taker = await Outbox.open({ dir: join(top, 'taker'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby cam', log: () => {} });
    expect(await taker.adoptOnce([own])).toBe(1);
    await taker.close();
  });

  it('an adoption cut short (journaled here, not yet taken out there) is not replayed twice at the next start', async () => {
    const top = mkdtempSync(join(tmpdir(), 'argus-adopt-twice-'));
    await leave(join(top, 'old'), 2);
    const [a] = await readOutbox(join(top, 'old'));
    // What the first adoption journaled here before the process died: the same record.
    const first = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    await first.append(JSON.parse(a.value), a.value);
    await first.close();
    const mine = await Outbox.open({ dir: join(top, 'new'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    expect(await mine.adoptOnce([join(top, 'old')])).toBe(1);
    expect(mine.takeRecovered().map((r) => r.key).sort()).toEqual([`alert:${join(top, 'old')}-0`, `alert:${join(top, 'old')}-1`]);
    expect(mine.stats.recovered).toBe(2);
    await mine.close();
    expect(await readOutbox(join(top, 'old'))).toEqual([]);
    expect((await readOutbox(join(top, 'new'))).map((r) => r.key).sort()).toEqual([`alert:${join(top, 'old')}-0`, `alert:${join(top, 'old')}-1`]);
  });
});
