import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_GRACE_MS, PART_STALE_MS, resolveAsset, sweepStaleParts, type AssetSpec } from '../../src/assets/fetch.js';
import { isArgusError } from '../../src/core/errors.js';

const body = Buffer.from('weights '.repeat(10_000));
const sha = createHash('sha256').update(body).digest('hex');
let server: Server;
let base: string;
const hits: string[] = [];
/** Resolved each time /hangs.bin has sent its first part (it never sends the rest). */
let hung: Promise<void>;
let onHung = () => {};
const expectHang = () => (hung = new Promise<void>((r) => (onHung = r)));

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url!);
    if (req.url === '/good.bin') {
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
    } else if (req.url === '/slow.bin' || req.url === '/stalls.bin') {
      // The body in 8 parts, 150 ms apart (1.2 s in all); /stalls.bin stops after the third.
      res.writeHead(200, { 'content-length': body.length });
      const part = Math.ceil(body.length / 8);
      let k = 0;
      const next = () => {
        if (req.url === '/stalls.bin' && k === 3) return;
        res.write(body.subarray(k * part, (k + 1) * part));
        if (++k < 8) setTimeout(next, 150);
        else res.end();
      };
      next();
    } else if (req.url === '/hangs.bin') {
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, 1000), () => onHung());
    } else if (req.url === '/tampered.bin') {
      res.end(Buffer.concat([body, Buffer.from('x')]));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise((r) => {
      server.close(r);
      server.closeAllConnections();
    }),
);

const fresh = () => mkdtempSync(join(tmpdir(), 'argus-assets-'));
const spec = (over: Partial<AssetSpec> = {}): AssetSpec => ({ kind: 'models', file: 'm.onnx', url: `${base}/good.bin`, sha256: sha, ...over });

describe('resolveAsset', () => {
  it('uses the mirror copy in place when it is there and its checksum matches', async () => {
    const mirror = fresh();
    mkdirSync(join(mirror, 'models'));
    writeFileSync(join(mirror, 'models', 'm.onnx'), body);
    hits.length = 0;
    expect(await resolveAsset(spec(), { mirror, cache: fresh(), progress: false })).toBe(join(mirror, 'models', 'm.onnx'));
    expect(hits).toEqual([]);
  });

  it('refuses a mirror copy whose checksum differs, naming both digests', async () => {
    const mirror = fresh();
    mkdirSync(join(mirror, 'models'));
    writeFileSync(join(mirror, 'models', 'm.onnx'), 'corrupt');
    const e = await resolveAsset(spec(), { mirror, cache: fresh(), progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_CHECKSUM')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`asset "m.onnx": mirror copy .* has sha256 [0-9a-f]{64}, expected ${sha}: it failed its checksum; argus does not change the mirror: replace it with the file from ${base}/good.bin, or remove it`));
  });

  it('downloads into the cache once, verified, then serves the cached copy', async () => {
    const cache = fresh();
    hits.length = 0;
    const p = await resolveAsset(spec(), { mirror: fresh(), cache, progress: false });
    expect(p).toBe(join(cache, 'models', 'm.onnx'));
    expect(readFileSync(p).equals(body)).toBe(true);
    expect(await resolveAsset(spec(), { mirror: fresh(), cache, progress: false })).toBe(p);
    expect(hits).toEqual(['/good.bin']);
  });

  it('moves on to an alternate URL when the first one serves different bytes', async () => {
    const logs: string[] = [];
    const p = await resolveAsset(spec({ url: `${base}/tampered.bin`, alternates: [`${base}/good.bin`] }), { cache: fresh(), progress: false, log: (m) => logs.push(m) });
    expect(readFileSync(p).equals(body)).toBe(true);
    expect(logs.some((l) => l.includes('tampered.bin has sha256'))).toBe(true);
  });

  it('offline with no mirror: a clear error naming the asset and the URL, and nothing half-written left', async () => {
    const cache = fresh();
    const e = await resolveAsset(spec({ url: 'http://127.0.0.1:9/m.onnx' }), { cache, progress: false, mirror: undefined, timeoutMs: 2000 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_DOWNLOAD')).toBe(true);
    expect((e as Error).message).toMatch(/^asset "m.onnx" could not be fetched from http:\/\/127\.0\.0\.1:9\/m\.onnx/);
    expect((e as Error).message).toMatch(/ARGUS_MIRROR/);
    expect(readdirSync(join(cache, 'models'))).toEqual([]);
  });

  it('a mirror folder that does not exist is said once, as a warning, and the asset comes from the cache or a download', async () => {
    const mirror = join(fresh(), 'no-such-mirror');
    const logs: { m: string; level?: string }[] = [];
    const log = (m: string, _f?: unknown, level?: string) => logs.push({ m, level });
    const cache = fresh();
    expect(await resolveAsset(spec(), { mirror, cache, progress: false, log })).toBe(join(cache, 'models', 'm.onnx'));
    expect(await resolveAsset(spec(), { mirror, cache, progress: false, log })).toBe(join(cache, 'models', 'm.onnx'));
    const warned = logs.filter((l) => l.m.includes(mirror));
    expect(warned).toEqual([{ m: expect.stringMatching(/^ARGUS_MIRROR=.*no-such-mirror does not exist: assets are taken from the cache or downloaded/), level: 'warn' }]);
    // A mirror that is there (lacking the file) is no news: nothing said.
    const logs2: string[] = [];
    await resolveAsset(spec(), { mirror: fresh(), cache, progress: false, log: (m) => logs2.push(m) });
    expect(logs2.filter((m) => m.includes('ARGUS_MIRROR'))).toEqual([]);
  });

  it('offline, with a mirror folder that does not exist: the error names ARGUS_MIRROR and says it does not exist', async () => {
    const mirror = join(fresh(), 'typo');
    const e = await resolveAsset(spec({ url: 'http://127.0.0.1:9/m.onnx' }), { cache: fresh(), progress: false, mirror, timeoutMs: 2000 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_DOWNLOAD')).toBe(true);
    expect((e as Error).message).toContain(`the mirror ARGUS_MIRROR=${mirror} does not exist: point it at a folder holding models/m.onnx`);
    // A file in its place is no folder either.
    const file = join(fresh(), 'mirror.txt');
    writeFileSync(file, 'x');
    const e2 = await resolveAsset(spec({ url: 'http://127.0.0.1:9/m.onnx' }), { cache: fresh(), progress: false, mirror: file, timeoutMs: 2000 }).catch((x: unknown) => x);
    expect((e2 as Error).message).toContain(`the mirror ARGUS_MIRROR=${file} is not a folder`);
  });

  it('the timeout is for silence, not for the whole download: 1.2 s of data arriving every 0.15 s passes a 0.5 s timeout; a stall fails it', async () => {
    const p = await resolveAsset(spec({ url: `${base}/slow.bin` }), { cache: fresh(), progress: false, mirror: undefined, timeoutMs: 500 });
    expect(createHash('sha256').update(readFileSync(p)).digest('hex')).toBe(sha);
    const e = await resolveAsset(spec({ url: `${base}/stalls.bin` }), { cache: fresh(), progress: false, mirror: undefined, timeoutMs: 500 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_DOWNLOAD')).toBe(true);
    expect((e as Error).message).toMatch(/no data for 0\.5 s/);
  });

  it('an HTTP error is reported with its status', async () => {
    const e = await resolveAsset(spec({ url: `${base}/missing.bin` }), { cache: fresh(), progress: false }).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/missing\.bin: HTTP 404/);
  });

  it('a signal abandons a download under way: VAP_ERR_INTERRUPTED naming the asset, its partial file removed, no alternate tried', async () => {
    // The server sends 1000 bytes and then nothing, and the silence allowed is an hour: only the
    // signal can end this download before the test's bound.
    const cache = fresh();
    const ac = new AbortController();
    hits.length = 0;
    expectHang();
    const pending = resolveAsset(spec({ url: `${base}/hangs.bin`, alternates: [`${base}/good.bin`] }), { cache, mirror: fresh(), progress: false, timeoutMs: 3_600_000, signal: ac.signal }).catch((x: unknown) => x);
    await hung;
    ac.abort();
    const e = await pending;
    expect(isArgusError(e, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect((e as Error).message).toMatch(/^asset "m\.onnx": the download from http:\/\/127\.0\.0\.1:\d+\/hangs\.bin was interrupted/);
    expect(readdirSync(join(cache, 'models'))).toEqual([]);
    expect(hits).toEqual(['/hangs.bin']);
  });

  it('a signal already given: a copy in the cache is still returned, a download is not started', async () => {
    const cache = fresh();
    mkdirSync(join(cache, 'models'));
    writeFileSync(join(cache, 'models', 'm.onnx'), body);
    const signal = AbortSignal.abort();
    hits.length = 0;
    expect(await resolveAsset(spec(), { cache, mirror: fresh(), progress: false, signal })).toBe(join(cache, 'models', 'm.onnx'));
    const e = await resolveAsset(spec({ file: 'other.onnx' }), { cache, mirror: fresh(), progress: false, signal }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect(hits).toEqual([]);
  });
});

describe('a cached copy that fails its checksum', () => {
  const corruptCache = () => {
    const cache = fresh();
    mkdirSync(join(cache, 'models'));
    writeFileSync(join(cache, 'models', 'm.onnx'), body.subarray(0, 1000)); // cut short
    return cache;
  };

  it('is moved aside to <file>.corrupt and fetched again, once, with a warning naming both', async () => {
    const cache = corruptCache();
    const logs: { msg: string; level?: string }[] = [];
    hits.length = 0;
    const p = await resolveAsset(spec(), { cache, mirror: fresh(), progress: false, log: (msg, _f, level) => logs.push({ msg, level }) });
    expect(p).toBe(join(cache, 'models', 'm.onnx'));
    expect(readFileSync(p).equals(body)).toBe(true);
    expect(readFileSync(`${p}.corrupt`).equals(body.subarray(0, 1000))).toBe(true);
    expect(hits).toEqual(['/good.bin']);
    const warn = logs.find((l) => l.level === 'warn');
    expect(warn?.msg).toMatch(new RegExp(`^asset "m.onnx": cached copy ${p} failed its checksum \\(sha256 [0-9a-f]{64}, expected ${sha}\\): moved aside to ${p}.corrupt; fetching it again$`));
    // The next run finds the good copy: nothing is fetched again.
    hits.length = 0;
    expect(await resolveAsset(spec(), { cache, mirror: fresh(), progress: false })).toBe(p);
    expect(hits).toEqual([]);
  });

  it('when it cannot be fetched again: VAP_ERR_ASSET_DOWNLOAD says the cached copy failed its checksum and where it was put', async () => {
    const cache = corruptCache();
    const p = join(cache, 'models', 'm.onnx');
    const e = await resolveAsset(spec({ url: `${base}/missing.bin` }), { cache, mirror: fresh(), progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_DOWNLOAD')).toBe(true);
    expect((e as Error).message).toContain(`the cached copy failed its checksum and is kept aside at ${p}.corrupt`);
    expect(readdirSync(join(cache, 'models'))).toEqual(['m.onnx.corrupt']);
  });

  it('that cannot be moved aside: VAP_ERR_ASSET_CHECKSUM naming it, that it failed its checksum, and what to do', async () => {
    const cache = corruptCache();
    const p = join(cache, 'models', 'm.onnx');
    mkdirSync(join(`${p}.corrupt`, 'in-the-way'), { recursive: true }); // a rename onto a folder fails
    hits.length = 0;
    const e = await resolveAsset(spec(), { cache, mirror: fresh(), progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_CHECKSUM')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^asset "m.onnx": cached copy ${p} has sha256 [0-9a-f]{64}, expected ${sha}: it failed its checksum and could not be moved aside \\(E[A-Z]+\\): delete it, and argus fetches it again$`));
    expect(hits).toEqual([]);
  });

  it('fetched again with the wrong bytes too: refused after one try per URL, no loop', async () => {
    const cache = corruptCache();
    hits.length = 0;
    const e = await resolveAsset(spec({ url: `${base}/tampered.bin` }), { cache, mirror: fresh(), progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_DOWNLOAD')).toBe(true);
    expect(hits).toEqual(['/tampered.bin']);
  });
});

describe('what is in the asset\'s place is not a file', () => {
  it('a directory at the cached copy\'s path: VAP_ERR_ASSET_FILE naming the path and what to do, with or without a checksum', async () => {
    for (const sha256 of [sha, undefined]) {
      const cache = fresh();
      mkdirSync(join(cache, 'models', 'm.onnx'), { recursive: true });
      hits.length = 0;
      const e = await resolveAsset(spec({ sha256 }), { cache, mirror: fresh(), progress: false }).catch((x: unknown) => x);
      expect(isArgusError(e, 'VAP_ERR_ASSET_FILE')).toBe(true);
      expect((e as Error).message).toBe(`asset "m.onnx": the cached copy ${join(cache, 'models', 'm.onnx')} is a directory: remove it, and argus fetches the asset into its place`);
      expect(hits).toEqual([]);
    }
  });

  it('a directory at the mirror copy\'s path: VAP_ERR_ASSET_FILE naming the path', async () => {
    const mirror = fresh();
    mkdirSync(join(mirror, 'models', 'm.onnx'), { recursive: true });
    const e = await resolveAsset(spec(), { cache: fresh(), mirror, progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_FILE')).toBe(true);
    expect((e as Error).message).toContain(`the mirror copy ${join(mirror, 'models', 'm.onnx')} is a directory`);
  });

  it('a file where the cache\'s kind folder should be: VAP_ERR_ASSET_FILE naming the folder', async () => {
    const cache = fresh();
    writeFileSync(join(cache, 'models'), 'not a folder');
    const e = await resolveAsset(spec(), { cache, mirror: fresh(), progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_FILE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^asset "m.onnx": cannot create the cache folder ${join(cache, 'models')} \\(EEXIST\\)`));
  });
});

describe('partial downloads left behind', () => {
  /** A PID that is not alive: a child's that has exited. */
  const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;
  /** Writes `name` into `dir`, last touched `agoMs` before `now`. */
  const part = (dir: string, name: string, now: number, agoMs: number) => {
    writeFileSync(join(dir, name), 'partial');
    utimesSync(join(dir, name), new Date(now - agoMs), new Date(now - agoMs));
  };

  it('removes those of dead PIDs and those untouched for an hour; keeps live downloads, its own, and those of PIDs it cannot see that are still being written', async () => {
    const dir = fresh();
    const now = Date.now();
    const dead = deadPid();
    const live = process.ppid; // vitest's main process: alive for as long as this test runs
    part(dir, `m.onnx.part-${dead}`, now, PART_GRACE_MS + 1000); // a killed download
    part(dir, `clip.mp4.part-${dead}.mp4`, now, PART_GRACE_MS + 1000); // a killed clip derivation
    part(dir, `m.onnx.part-${live}`, now, PART_STALE_MS + 1000); // an hour untouched: PID reused
    part(dir, `v.mp4.part-${live}`, now, PART_GRACE_MS + 1000); // a live download of another process
    part(dir, `w.mp4.part-${dead + 1_000_000}`, now, 0); // written just now by a process in another container
    part(dir, `m.onnx.part-${process.pid}`, now, PART_STALE_MS + 1000); // this process's own
    part(dir, 'm.onnx', now, PART_STALE_MS + 1000); // an asset
    mkdirSync(join(dir, 'x.part-1')); // not a file
    const logs: string[] = [];
    const swept = await sweepStaleParts(dir, (m) => logs.push(m), now);
    expect(swept.sort()).toEqual([`clip.mp4.part-${dead}.mp4`, `m.onnx.part-${dead}`, `m.onnx.part-${live}`].sort());
    expect(readdirSync(dir).sort()).toEqual(['m.onnx', `m.onnx.part-${process.pid}`, `v.mp4.part-${live}`, `w.mp4.part-${dead + 1_000_000}`, 'x.part-1'].sort());
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^assets: removed 3 partial download\(s\) left in .* by interrupted runs/);
    expect(await sweepStaleParts(join(dir, 'missing'), () => undefined, now)).toEqual([]);
  });

  it('the next download into the same cache folder sweeps them', async () => {
    const cache = fresh();
    mkdirSync(join(cache, 'models'));
    const now = Date.now();
    const dead = deadPid();
    part(join(cache, 'models'), `other.onnx.part-${dead}`, now, PART_GRACE_MS + 60_000);
    part(join(cache, 'models'), `m.onnx.part-${process.ppid}`, now, 0); // a concurrent live download of the same file
    const logs: string[] = [];
    const p = await resolveAsset(spec(), { cache, mirror: fresh(), progress: false, log: (m) => logs.push(m) });
    expect(readFileSync(p).equals(body)).toBe(true);
    expect(readdirSync(join(cache, 'models')).sort()).toEqual(['m.onnx', `m.onnx.part-${process.ppid}`]);
    expect(logs.some((l) => l.includes(`other.onnx.part-${dead}`))).toBe(true);
  });
});
