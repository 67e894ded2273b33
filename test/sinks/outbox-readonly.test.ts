import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import type { AlertMessage, Message } from '../../src/sinks/message.js';

/**
 * A read-only volume, as a `mount -o ro` (or a remount read-only after disk errors) answers:
 * every call that would change a path under `ro` fails EROFS; reads work. (Checked against a real
 * read-only tmpfs by hand: the same codes, from mkdir, open 'wx' and rename.)
 */
const { ro, volume } = vi.hoisted(() => {
  // (Hoisted with the mock: plain requires, before the imports above are bound.)
  const { mkdtempSync: mk } = require('node:fs') as typeof import('node:fs');
  const { tmpdir: tmp } = require('node:os') as typeof import('node:os');
  const path = require('node:path') as typeof import('node:path');
  return { ro: path.resolve(mk(path.join(tmp(), 'argus-ro-'))), volume: { writable: false } };
});
vi.mock('node:fs/promises', async (orig) => {
  const fs = await orig<typeof import('node:fs/promises')>();
  const under = (p: unknown) => typeof p === 'string' && (resolve(p) === ro || resolve(p).startsWith(`${ro}/`));
  const erofs = (syscall: string, p: unknown) => Object.assign(new Error(`EROFS: read-only file system, ${syscall} '${String(p)}'`), { code: 'EROFS', syscall, path: p });
  const exists = (p: string) => fs.stat(p).then(() => true, () => false);
  const writes = (flags: unknown) => (typeof flags === 'number' ? (flags & 3) !== 0 || (flags & 0o100) !== 0 : typeof flags === 'string' && flags !== 'r');
  const guard =
    <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      under(a[0]) || (name === 'rename' || name === 'link' || name === 'copyFile' ? under(a[1]) : false) ? Promise.reject(erofs(name, a[0])) : f(...a);
  return {
    ...fs,
    // Linux looks the path up first: an existing one answers EEXIST (mkdir, an exclusive open), a
    // missing parent ENOENT, and only then the volume EROFS.
    mkdir: async (p: string, o?: unknown) => {
      if (!under(p)) return fs.mkdir(p, o as never);
      if (await exists(p)) throw Object.assign(new Error(`EEXIST: file already exists, mkdir '${p}'`), { code: 'EEXIST' });
      if (!(await exists(dirname(p)))) throw Object.assign(new Error(`ENOENT: no such file or directory, mkdir '${p}'`), { code: 'ENOENT' });
      throw erofs('mkdir', p);
    },
    open: async (p: string, flags?: unknown, mode?: unknown) => {
      if (!under(p) || !writes(flags)) return (fs.open as (...a: unknown[]) => Promise<unknown>)(p, flags, mode);
      const exclusive = typeof flags === 'string' ? flags.includes('x') : ((flags as number) & 0o200) !== 0;
      if (exclusive && (await exists(p))) throw Object.assign(new Error(`EEXIST: file already exists, open '${p}'`), { code: 'EEXIST' });
      throw erofs('open', p);
    },
    rename: guard('rename', fs.rename),
    rm: guard('rm', fs.rm),
    writeFile: guard('writeFile', fs.writeFile as (...a: unknown[]) => Promise<void>),
    link: guard('link', fs.link),
    copyFile: guard('copyFile', fs.copyFile as (...a: unknown[]) => Promise<void>),
    utimes: guard('utimes', fs.utimes),
    // access(W_OK) answers EROFS on a read-only mount; `volume.writable` stands for a remount rw.
    access: async (p: string, mode?: number) => {
      if (under(p) && !volume.writable && mode !== undefined && (mode & 2) !== 0) throw erofs('access', p);
      return fs.access(p, mode);
    },
  };
});

const { Outbox, readOutbox, strandedAlerts } = await import('../../src/sinks/outbox.js');

const opts = (d: string, log: string[] = []) => ({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: true, log: (m: string) => void log.push(m) });
function alert(id: string): [AlertMessage, string] {
  const m = { type: 'alert', version: 1, source: 'cam', alert: { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm' } } as unknown as AlertMessage;
  return [m, JSON.stringify(m)];
}
/** A journal an earlier run left in `d` (made before the volume is read-only: the mock lets this process's sync fs through), holding `ids` undelivered. */
function leftJournal(d: string, ids: string[], at = Date.now()): void {
  mkdirSync(d, { recursive: true, mode: 0o700 });
  const lines = ids.map((id) => {
    const json = JSON.stringify({ op: 'put', key: `alert:${id}`, kind: 'alert', source: 'cam', at, value: alert(id)[1] });
    return `${createHash('sha1').update(json).digest('hex').slice(0, 8)} ${json}\n`;
  });
  writeFileSync(join(d, 'outbox.log'), lines.join(''), { mode: 0o600 });
}

describe('an outbox on a read-only volume', () => {
  it('starts, as on a full disk: its undelivered alerts are replayed, new ones published unprotected, said as an error and counted (before: VAP_ERR_OUTBOX "cannot lock … (EROFS)", no detection at all)', async () => {
    const d = join(ro, 'left');
    leftJournal(d, ['a1', 'a2']);
    const before = readFileSync(join(d, 'outbox.log'), 'utf8');
    const logs: string[] = [];
    const ob = await Outbox.open(opts(d, logs));
    expect(ob.takeRecovered().map((r) => r.key)).toEqual(['alert:a1', 'alert:a2']);
    expect(logs.join('\n')).toMatch(/is on a read-only volume \(EROFS\): argus runs and publishes alerts without the journal, NOT protected/);
    expect(logs.join('\n')).toMatch(/the 2 undelivered alert\(s\) found in it are replayed/);
    expect(ob.journaled).toBe(true); // what it holds is on disk
    // A new alert: handed on at once (no wait on a disk that refuses), in memory only.
    // (Not by the 1 s wait for a disk that does not answer, which a slow write gets: counted
    // there; a bound on the clock alone failed at load 20.)
    await ob.append(...alert('b1'));
    expect(ob.stats.slowWrites).toBe(0);
    expect(ob.journaled).toBe(false);
    expect(ob.stats.writeErrors).toBe(1);
    expect(ob.pendingAlerts).toBe(3);
    ob.ack([alert('a1')[0], alert('b1')[0]]);
    expect(ob.pendingAlerts).toBe(1);
    await ob.close();
    // Nothing written there: no lock left, the journal as it was.
    expect(readFileSync(join(d, 'outbox.log'), 'utf8')).toBe(before);
    expect(() => statSync(join(d, 'outbox.lock'))).toThrow();
    // Opened again in this process (its folder no longer held).
    const again = await Outbox.open(opts(d));
    expect(again.takeRecovered()).toHaveLength(2);
    await again.close();
  });

  it('a folder still to be made there: the run starts without the journal, said, and said not there (before: as if it held nothing)', async () => {
    const logs: string[] = [];
    const ob = await Outbox.open(opts(join(ro, 'new', 'outbox'), logs));
    expect(ob.takeRecovered()).toEqual([]);
    expect(logs.join('\n')).toMatch(/new\/outbox is on a read-only volume \(EROFS\)/);
    // (Where the volume meant to hold it did not mount, on a read-only root, say: the journal on it is out of sight, not gone.)
    expect(logs.join('\n')).toMatch(/the folder is not there \(a volume not mounted\? its journal is replayed once it is/);
    await ob.append(...alert('c1'));
    expect(ob.journaled).toBe(false);
    await ob.close();
  });

  it('a lock a crashed argus left there (the volume remounted read-only after): it cannot be taken over, and the run starts without the journal all the same', async () => {
    const d = join(ro, 'crashed');
    leftJournal(d, ['k1']);
    writeFileSync(join(d, 'outbox.lock'), '4194303\n'); // no such process
    const logs: string[] = [];
    const ob = await Outbox.open(opts(d, logs));
    expect(ob.takeRecovered().map((r) => r.key)).toEqual(['alert:k1']);
    expect(logs.join('\n')).toMatch(/read-only volume \(EROFS\)/);
    await ob.close();
    expect(readFileSync(join(d, 'outbox.lock'), 'utf8')).toBe('4194303\n');
  });

  it('with no folder there, what it holds in memory still ages out by outbox.maxAgeHours (said), as a journal\'s records do', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let mono = 0;
      const logs: string[] = [];
      const ob = await Outbox.open({ ...opts(join(ro, 'aging', 'outbox'), logs), maxAgeMs: 60_000, monotonic: () => mono });
      await ob.append(...alert('old'));
      mono = 61_000;
      vi.advanceTimersByTime(60_000);
      expect(ob.pendingAlerts).toBe(0);
      expect(logs.join('\n')).toMatch(/alert old dropped undelivered: older than outbox.maxAgeHours/);
      await ob.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('an older release\'s folder there, taken over by a writable outbox (adoptOnce): its records are journaled here, and that folder is not said to leave this run\'s alerts unprotected', async () => {
    const legacy = join(ro, 'legacy');
    leftJournal(legacy, ['old1']);
    const here = mkdtempSync(join(tmpdir(), 'argus-outbox-rw-'));
    const logs: string[] = [];
    const ob = await Outbox.open(opts(here, logs));
    expect(await ob.adoptOnce([legacy])).toBe(1);
    expect(ob.takeRecovered().map((r) => r.key)).toEqual(['alert:old1']);
    expect((await readOutbox(here)).map((r) => r.key)).toEqual(['alert:old1']);
    expect(logs.join('\n')).not.toMatch(/NOT protected/);
    expect(logs.join('\n')).toMatch(/legacy is on a read-only volume \(EROFS\): what it holds is read, but cannot be taken out there/);
    expect(ob.journaled).toBe(true);
    await ob.close();
  });

  it('a journal a running argus holds there is still refused as in use', async () => {
    const d = join(ro, 'held');
    leftJournal(d, ['h1']);
    // The older lock format (a pid alone): this test's parent process, alive.
    writeFileSync(join(d, 'outbox.lock'), `${process.ppid}\n`);
    const e = await Outbox.open(opts(d)).catch((x: unknown) => x);
    expect(isArgusError(e) && e.message).toMatch(/is in use by another argus \(pid \d+\)/);
    expect((await readOutbox(d)).map((r) => r.key)).toEqual(['alert:h1']);
  });
});

describe('an outbox.dir that is a file', () => {
  it('is refused naming it as a file (before: "cannot create … (EEXIST)"), and so is a folder to be made under one (before: ENOTDIR)', async () => {
    const base = mkdtempSync(join(tmpdir(), 'argus-outbox-file-'));
    const file = join(base, 'outbox');
    writeFileSync(file, 'x');
    const e = await Outbox.open(opts(file)).catch((x: unknown) => x);
    expect(isArgusError(e) && e.code).toBe('VAP_ERR_OUTBOX');
    expect((e as Error).message).toBe(`outbox: ${file} is a file, not a folder; set outbox.dir to a folder (made if missing), or move the file away`);
    const under = join(file, 'a', 'b');
    const e2 = await Outbox.open(opts(under)).catch((x: unknown) => x);
    expect(isArgusError(e2) && e2.code).toBe('VAP_ERR_OUTBOX');
    expect((e2 as Error).message).toBe(`outbox: ${file} is a file, not a folder (outbox.dir ${under} would be made in it); set outbox.dir to a folder (made if missing), or move the file away`);
  });
});

describe('adoption (adoptOnce) with a read-only side', () => {
  it('into an outbox on a read-only volume: the older release\'s journal is not emptied, its alerts being in memory only here (before: acknowledged there, gone from every disk, and the exit said them kept)', async () => {
    const legacy = mkdtempSync(join(tmpdir(), 'argus-outbox-legacy-'));
    leftJournal(legacy, ['L1', 'L2']);
    const logs: string[] = [];
    const ob = await Outbox.open(opts(join(ro, 'adopting', 'outbox'), logs));
    expect(await ob.adoptOnce([legacy])).toBe(2);
    expect(ob.takeRecovered().map((r) => r.key)).toEqual(['alert:L1', 'alert:L2']);
    await ob.close();
    // Still there, for the next start (this one's folder could not take them).
    expect((await readOutbox(legacy)).map((r) => r.key)).toEqual(['alert:L1', 'alert:L2']);
  });

  it('from an older release\'s folder on a read-only volume: not marked taken over, its records being still there (before: marked, and left there for good, for whatever opens it to send again)', async () => {
    const legacy = join(ro, 'legacy-mark');
    leftJournal(legacy, ['M1']);
    const here = mkdtempSync(join(tmpdir(), 'argus-outbox-rw-'));
    const ob = await Outbox.open(opts(here));
    expect(await ob.adoptOnce([legacy])).toBe(1);
    await ob.close();
    expect((await readOutbox(legacy)).map((r) => r.key)).toEqual(['alert:M1']);
    expect(() => statSync(join(here, 'adopted'))).toThrow();
  });
});

describe('what the stats say of a read-only volume (the exit names it: it said "its writes failed: a full disk?")', () => {
  it('/healthz and /metrics say it while it runs (Outbox.health, argus_outbox_journaled), not only the log at the start and the exit', async () => {
    const { Metrics } = await import('../../src/server/metrics.js');
    const ob = await Outbox.open(opts(join(ro, 'probed', 'outbox')));
    const gauge = async () => (await new Metrics({ stats: () => [], provider: 'cpu', outbox: ob }).scrape()).split('\n').find((l) => l.startsWith('argus_outbox_journaled '));
    expect(ob.health()).toEqual({ journaled: true, pendingAlerts: 0, readOnly: 'EROFS' });
    expect(await gauge()).toBe('argus_outbox_journaled 1');
    await ob.append(...alert('h1'));
    expect(ob.health()).toEqual({ journaled: false, pendingAlerts: 1, readOnly: 'EROFS' });
    expect(await gauge()).toBe('argus_outbox_journaled 0');
    await ob.close();
    // A writable one: journaled, no readOnly.
    const rw = await Outbox.open(opts(mkdtempSync(join(tmpdir(), 'argus-outbox-health-'))));
    await rw.append(...alert('h2'));
    expect(rw.health()).toEqual({ journaled: true, pendingAlerts: 1 });
    await rw.close();
  });

  it('found at open: readOnly names its errno', async () => {
    const ob = await Outbox.open(opts(join(ro, 'said', 'outbox')));
    await ob.append(...alert('s1'));
    expect(ob.journaled).toBe(false);
    expect(ob.stats.readOnly).toBe('EROFS');
    await ob.close();
  });

  it('remounted read-only while argus runs (the disk\'s errors): said so once a write is refused EROFS, and no longer once writes work again; a full disk is not said read-only', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-outbox-rw-'));
    let clock = 0;
    const ob = await Outbox.open({ ...opts(d), monotonic: () => clock });
    await ob.append(...alert('r1'));
    expect(ob.stats.readOnly).toBeUndefined();
    const inner = ob as unknown as { fh: { write: unknown }; writeCopy: unknown };
    const fh = inner.fh;
    const refuse = (code: string) => async () => {
      throw Object.assign(new Error(code), { code });
    };
    fh.write = refuse('ENOSPC');
    inner.writeCopy = refuse('ENOSPC');
    await ob.append(...alert('r2'));
    expect(ob.journaled).toBe(false);
    expect(ob.stats.readOnly).toBeUndefined();
    fh.write = refuse('EROFS');
    inner.writeCopy = refuse('EROFS');
    clock += 10_000;
    await ob.append(...alert('r3'));
    expect(ob.journaled).toBe(false);
    expect(ob.stats.readOnly).toBe('EROFS');
    delete fh.write;
    delete inner.writeCopy;
    clock += 10_000;
    await ob.append(...alert('r4'));
    expect(ob.journaled).toBe(true);
    expect(ob.stats.readOnly).toBeUndefined();
    await ob.close();
  });
});

describe('a read-only start: what the exit is told of the alerts it found on disk', () => {
  it('a status change, or an alert found there sent on without its snapshot (replace), leaves them said kept: they are on disk, replayed at the next start (before: said "could not all be written … those not on disk are lost", each run, as soon as a camera started)', async () => {
    const d = join(ro, 'found-kept');
    leftJournal(d, ['k1', 'k2']);
    const ob = await Outbox.open(opts(d));
    expect(ob.takeRecovered()).toHaveLength(2);
    const st = { type: 'status', version: 1, source: 'cam', state: 'running', previous: 'starting', reason: 'r', at: 1, attempt: 0, published: 1 } as unknown as Message;
    await ob.append(st, JSON.stringify(st));
    ob.replace(alert('k1')[0], JSON.stringify({ ...alert('k1')[0], x: 1 }));
    expect(ob.pendingAlerts).toBe(2);
    expect(ob.journaled).toBe(true);
    // One raised by this run is in memory only.
    await ob.append(...alert('n1'));
    expect(ob.journaled).toBe(false);
    await ob.close();
  });
});

describe('a read-only start: an alert found on disk that the memory bound drops', () => {
  it('is not counted lost (lostToBounds): it is still in the journal there, replayed at the next start (before: "dropped undelivered", VAP_ERR_ALERT_UNDELIVERED, and the exit said it lost)', async () => {
    const d = join(ro, 'found-bound');
    leftJournal(d, ['b1', 'b2']);
    const probe = await Outbox.open(opts(d));
    const found = probe.stats.pendingBytes;
    await probe.close();
    const logs: string[] = [];
    const ob = await Outbox.open({ ...opts(d, logs), maxBytes: found + 50 });
    ob.takeRecovered();
    await ob.append(...alert('n1'));
    expect(ob.pendingAlerts).toBeLessThan(3); // the bound dropped the oldest from memory
    expect(ob.get('alert:b1')).toBeUndefined();
    expect(ob.lostToBounds).toBe(0);
    expect(logs.join('\n')).toMatch(/alert b1 dropped from memory undelivered .*still in the journal on the read-only volume, read again at the next start/);
    await ob.close();
    const again = await Outbox.open(opts(d));
    expect(again.takeRecovered().map((r) => r.key)).toEqual(['alert:b1', 'alert:b2']);
    await again.close();
  });
});

describe('two argus on one read-only outbox folder (no lock file can be made there)', () => {
  /** A second argus process: the module loaded again (its own set of open folders), the same mocked read-only volume. */
  async function anotherProcess(): Promise<typeof import('../../src/sinks/outbox.js')> {
    vi.resetModules();
    return import('../../src/sinks/outbox.js');
  }

  it('the second is refused as in use while the first runs, naming it (before: both replayed the alerts found there, each consumer got them twice)', async () => {
    const d = join(ro, 'two');
    leftJournal(d, ['t1', 't2']);
    const first = await Outbox.open(opts(d));
    expect(first.takeRecovered()).toHaveLength(2);
    const other = await anotherProcess();
    const e = await other.Outbox.open(opts(d)).catch((x: unknown) => x);
    // (Its ArgusError is the reloaded module's class: read by its fields.)
    expect((e as { code?: string }).code).toBe('VAP_ERR_OUTBOX');
    expect((e as Error).message).toMatch(new RegExp(`is in use by another argus \\(pid ${process.pid}, a run on the read-only volume`));
    // Through another name for the folder too (a link outside the volume: the folder, by device and inode).
    const alias = join(mkdtempSync(join(tmpdir(), 'argus-outbox-alias-')), 'link');
    symlinkSync(d, alias);
    const e2 = await other.Outbox.open(opts(alias)).catch((x: unknown) => x);
    expect((e2 as Error).message).toMatch(/is in use by another argus \(pid \d+, a run on the read-only volume/);
    await first.close();
    // Released at close: the next one starts and replays them.
    const second = await other.Outbox.open(opts(d));
    expect(second.takeRecovered().map((r) => r.key)).toEqual(['alert:t1', 'alert:t2']);
    await second.close();
  });

  it('a name held by another local user\'s process (abstract sockets have no owner): refused, its words in the message without control characters', async () => {
    const d = join(ro, 'squatted');
    leftJournal(d, ['q1']);
    const st = statSync(d);
    const { createServer } = await import('node:net');
    const squatter = createServer((c) => c.end('evil\nVAP_ERR_FAKE forged line\u001b[31m'));
    await new Promise<void>((r) => squatter.listen(`\0argus-outbox-${st.dev}-${st.ino}`, r));
    try {
      const e = await Outbox.open(opts(d)).catch((x: unknown) => x);
      expect(isArgusError(e) && e.message).toMatch(/is in use by another argus \(evil\?VAP_ERR_FAKE forged line\?\[31m\)/);
    } finally {
      squatter.close();
    }
    const ob = await Outbox.open(opts(d));
    expect(ob.takeRecovered()).toHaveLength(1);
    await ob.close();
  });

  it('a name bound and not listened on (another local user\'s process): refused too, not started without the guard (before: three binds refused, three looks answered "none", and the start went on holding nothing: a second one did the same, and both replayed the journal)', async () => {
    const d = join(ro, 'bound-only');
    leftJournal(d, ['n1']);
    const st = statSync(d);
    const { spawn } = await import('node:child_process');
    // (Node binds only to listen: a socket bound and not listened on is made by Python, under the
    // name as Node binds it: padded with NULs to the length of sun_path before libuv 1.48, exact since.)
    const name = `b'\\0argus-outbox-${st.dev}-${st.ino}'`;
    const script = ['import socket, time', 's = socket.socket(socket.AF_UNIX)', `s.bind(${name})`, 't = socket.socket(socket.AF_UNIX)', `t.bind(${name}.ljust(108, b'\\0'))`, "print('bound', flush=True)", 'time.sleep(60)'];
    const py = spawn('python3', ['-c', script.join('\n')], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise((ok, fail) => {
        py.stdout.once('data', ok);
        py.once('error', fail);
        py.once('exit', fail);
      });
      const e = await Outbox.open(opts(d)).catch((x: unknown) => x);
      expect(isArgusError(e) && e.message).toMatch(/is in use by another argus \(a process that holds the folder's name and takes no connection/);
    } finally {
      py.kill();
    }
  });

  it('a holder that does not answer (frozen, SIGSTOP): still held, the start refused within the guard\'s 3 s', async () => {
    const d = join(ro, 'frozen');
    leftJournal(d, ['f1']);
    const st = statSync(d);
    const { createServer } = await import('node:net');
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(`\0argus-outbox-${st.dev}-${st.ino}`, r));
    try {
      const t0 = performance.now();
      const e = await Outbox.open(opts(d)).catch((x: unknown) => x);
      expect(isArgusError(e) && e.message).toMatch(/is in use by another argus \(a process that does not answer \(frozen\?\)/);
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      silent.close();
    }
  }, 20_000);

  /** A folder of the read-only volume, and the same folder through a writable mount of it (a read-write bind mount beside it: same device and inode). */
  function mountedTwice(name: string, ids: string[]): { d: string; rw: string } {
    const d = join(ro, name);
    leftJournal(d, ids);
    const rw = join(mkdtempSync(join(tmpdir(), 'argus-outbox-rw-mount-')), 'data');
    symlinkSync(d, rw);
    return { d, rw };
  }
  /** Holds the start of `module`'s outboxes at the lock (takeLock) until `go`; `at` when one is there. */
  function holdAtLock(module: Pick<typeof import('../../src/sinks/outbox.js'), 'Outbox'>, before: boolean): { at: Promise<void>; go: () => void; undo: () => void } {
    const proto = module.Outbox.prototype as unknown as { takeLock(path: string): Promise<void> };
    const real = proto.takeLock;
    let go!: () => void;
    let there!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    const at = new Promise<void>((r) => (there = r));
    proto.takeLock = async function (this: unknown, path: string) {
      if (before) {
        there();
        await gate;
        return real.call(this, path);
      }
      // After: its look at the lock done (and failed, EROFS), held before what follows it.
      try {
        return await real.call(this, path);
      } finally {
        there();
        await gate;
      }
    };
    return { at, go, undo: () => void (proto.takeLock = real) };
  }

  it('a writable start and a read-only one of the same folder together (a read-only mount beside a read-write one): one is refused, never both replaying the journal (before: the writable one looked for a guard, none yet, the read-only one bound it before the lock was made, and both started)', async () => {
    const { d, rw } = mountedTwice('bound', ['b1', 'b2']);
    // The writable one has looked for a holder, and not made its lock yet.
    const hold = holdAtLock({ Outbox }, true);
    const writing = Outbox.open(opts(rw));
    await hold.at;
    const other = await anotherProcess();
    const e = await other.Outbox.open(opts(d)).catch((x: unknown) => x);
    hold.go();
    hold.undo();
    const writer = await writing;
    expect((e as { code?: string }).code).toBe('VAP_ERR_OUTBOX');
    expect((e as Error).message).toMatch(new RegExp(`is in use by another argus \\(pid ${process.pid}\\)`));
    expect(writer.takeRecovered()).toHaveLength(2);
    await writer.close();
  });

  it('the other way: the read-only one looked for a lock (none: EROFS), the writable one starts meanwhile: refused, the read-only one replays them alone (before: the read-only one bound the guard only after, and both replayed the journal)', async () => {
    const { d, rw } = mountedTwice('bound2', ['c1']);
    const other = await anotherProcess();
    const hold = holdAtLock(other, false);
    const reading = other.Outbox.open(opts(d));
    await hold.at;
    const e = await Outbox.open(opts(rw)).catch((x: unknown) => x);
    hold.go();
    const reader = await reading;
    hold.undo();
    expect(isArgusError(e) && e.message).toMatch(new RegExp(`is in use by another argus \\(pid ${process.pid}[,)]`));
    expect(reader.takeRecovered()).toHaveLength(1);
    await reader.close();
    // Released at close: the writable start then takes the folder.
    const writer = await Outbox.open(opts(rw));
    expect(writer.takeRecovered()).toHaveLength(1);
    await writer.close();
  });

  it('`argus check` (outboxHeldBy) says a folder a read-only run holds is in use, as the run would be refused (before: it said nothing, no lock file being there, and the run was refused)', async () => {
    const d = join(ro, 'checked');
    leftJournal(d, ['k1']);
    const other = await anotherProcess();
    expect(await other.outboxHeldBy(d)).toBeUndefined();
    const first = await Outbox.open(opts(d));
    expect(await other.outboxHeldBy(d)).toMatch(new RegExp(`is in use by another argus \\(pid ${process.pid}, a run on the read-only volume`));
    await first.close();
    expect(await other.outboxHeldBy(d)).toBeUndefined();
  });

  it('another pipeline\'s start does not call a running read-only run\'s folder stranded (before: "holds 1 undelivered alert(s) that no argus has open", as an error)', async () => {
    const root = join(ro, 'state');
    leftJournal(join(root, 'lobby'), ['s1']);
    leftJournal(join(root, 'renamed'), ['s2']);
    const lobby = await Outbox.open(opts(join(root, 'lobby')));
    const found = await strandedAlerts(join(root, 'dock'));
    expect([...found]).toEqual([['renamed', 1]]);
    await lobby.close();
    expect([...(await strandedAlerts(join(root, 'dock')))].sort()).toEqual([['lobby', 1], ['renamed', 1]]);
  });
});

describe('a read-only start: alerts found on disk older than outbox.maxAgeHours', () => {
  it('are not replayed, counted once a run (agedOnDisk, in health) and said aged and not removable there, never added to the lost (before: "dropped undelivered", counted lost and exit status 3 again at every start)', async () => {
    const d = join(ro, 'aged');
    leftJournal(d, ['o1', 'o2'], Date.now() - 7_200_000);
    for (let start = 0; start < 2; start++) {
      const logs: string[] = [];
      const ob = await Outbox.open(opts(d, logs));
      expect(ob.takeRecovered()).toEqual([]);
      expect(ob.stats.evicted).toBe(0);
      expect(ob.lostToBounds).toBe(0);
      expect(ob.stats.agedOnDisk).toBe(2);
      expect(ob.health()).toEqual({ journaled: true, pendingAlerts: 0, readOnly: 'EROFS', agedOnDisk: 2 });
      // And on /metrics (they were in the log and /healthz only).
      const { Metrics } = await import('../../src/server/metrics.js');
      const text = await new Metrics({ stats: () => [], provider: 'cpu', outbox: ob }).scrape();
      expect(text.split('\n')).toContain('argus_outbox_aged_on_disk 2');
      const said = logs.filter((l) => /older than outbox.maxAgeHours/.test(l));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/2 alert\(s\) found in the journal .* older than outbox.maxAgeHours \(1 h\): not replayed; they cannot be removed from a read-only folder/);
      expect(logs.join('\n')).not.toMatch(/dropped undelivered/);
      await ob.close();
    }
    expect((await readOutbox(d)).map((r) => r.key)).toEqual(['alert:o1', 'alert:o2']);
  });

  it('in an older release\'s folder on a read-only volume, taken over at start: the same (before: counted lost again at every start, the folder not marked taken)', async () => {
    const legacy = join(ro, 'legacy-aged');
    leftJournal(legacy, ['la1'], Date.now() - 7_200_000);
    const here = mkdtempSync(join(tmpdir(), 'argus-outbox-rw-'));
    for (let start = 0; start < 2; start++) {
      const logs: string[] = [];
      const ob = await Outbox.open(opts(here, logs));
      expect(await ob.adoptOnce([legacy])).toBe(0);
      expect(ob.lostToBounds).toBe(0);
      expect(ob.stats.agedOnDisk).toBe(1);
      expect(logs.join('\n')).toMatch(/1 alert\(s\) found in the journal in .*legacy-aged are older than outbox.maxAgeHours/);
      await ob.close();
    }
    expect((await readOutbox(legacy)).map((r) => r.key)).toEqual(['alert:la1']);
  });
});

describe('a read-only start whose volume is made writable while it runs', () => {
  it('says so once (an error: its alerts stay unprotected until a restart), with writableAgain in health (before: nothing said a restart was due)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const d = join(ro, 'remounted');
      leftJournal(d, ['w1']);
      const logs: string[] = [];
      const ob = await Outbox.open({ ...opts(d, logs), writableCheckMs: 30_000 });
      const said = () => logs.filter((l) => /is on a writable volume again/.test(l));
      await vi.advanceTimersByTimeAsync(30_000);
      await new Promise((r) => setTimeout(r, 50));
      expect(said()).toHaveLength(0);
      expect(ob.health().writableAgain).toBeUndefined();
      const { Metrics } = await import('../../src/server/metrics.js');
      const gauge = async () => (await new Metrics({ stats: () => [], provider: 'cpu', outbox: ob }).scrape()).split('\n').find((l) => l.startsWith('argus_outbox_writable_again '));
      expect(await gauge()).toBe('argus_outbox_writable_again 0');
      volume.writable = true;
      for (let i = 0; i < 3; i++) {
        await vi.advanceTimersByTimeAsync(30_000);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(said()).toHaveLength(1);
      expect(said()[0]).toMatch(/NOT protected until argus is restarted/);
      expect(ob.health()).toMatchObject({ readOnly: 'EROFS', writableAgain: true });
      expect(ob.stats.writableAgain).toBe(true);
      // And on /metrics (it was in the log and /healthz only).
      expect(await gauge()).toBe('argus_outbox_writable_again 1');
      await ob.close();
    } finally {
      volume.writable = false;
      vi.useRealTimers();
    }
  });
});
