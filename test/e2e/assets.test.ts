import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MIRROR, PERSON_VIDEO } from '../helpers/assets.js';
import { ARGUS, MODEL_RUN_TIMEOUT_MS, ROOT, runCommand } from '../helpers/cli.js';

// The CLI while it fetches an asset. A local server stands in for the asset's URL; each run
// has a cache folder of its own. Bounds only end a hang: nothing here asserts on speed.

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/hangs.onnx') {
      // A download that never ends: 1000 bytes, then nothing.
      res.writeHead(200, { 'content-length': 10_000_000 });
      res.write(Buffer.alloc(1000));
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
const children = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

/** A pipeline on the mirror's video whose model manifest (`extends: yolox-nano`) takes `file` from `url`. */
function pipelineWithModel(file: string, url: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'argus-assets-cli-'));
  writeFileSync(join(dir, 'm.yaml'), `extends: yolox-nano\nname: yolox-nano-test\nfile: ${file}\nurl: ${url}\nsha256: 695e750a5d5754bb5a8d5325643b59282191a7e7a564e435a415fd3c578eab14\n`);
  writeFileSync(join(dir, 'p.yaml'), `sources:\n  - { id: lobby, uri: ${PERSON_VIDEO}, rate: fast }\nmodel: { manifest: ./m.yaml }\n`);
  return join(dir, 'p.yaml');
}

function start(args: string[], cache: string) {
  const p = spawn(process.execPath, [ARGUS, ...args], { cwd: ROOT, env: { ...process.env, ARGUS_MIRROR: MIRROR, ARGUS_CACHE: cache }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(p);
  let stderr = '';
  p.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<number | null>((r) => p.on('close', (code) => r(code)));
  return { p, exited, stderr: () => stderr };
}

/** Polls `f` until it returns a value; `ms` only bounds a hang. */
async function until<T>(f: () => T | undefined, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('argus run fetching its assets', () => {
  it('a first SIGINT abandons the download at once: exit 130, VAP_ERR_INTERRUPTED naming the asset, no partial file left', async () => {
    // The download never ends (1000 bytes, then silence): before the fix the signal waited for
    // it, and the run ended when the 60 s silence timeout ran out, with VAP_ERR_ASSET_DOWNLOAD
    // (exit 2). No clock is read here.
    const cache = mkdtempSync(join(tmpdir(), 'argus-cache-'));
    const run = start(['run', pipelineWithModel('hangs.onnx', `${base}/hangs.onnx`), '--no-status'], cache);
    await until(() => existsSync(join(cache, 'models')) && readdirSync(join(cache, 'models')).some((f) => f.startsWith('hangs.onnx.part-')) || undefined, MODEL_RUN_TIMEOUT_MS);
    run.p.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(run.stderr()).toMatch(/argus: VAP_ERR_INTERRUPTED: asset "hangs\.onnx": the download from http:\/\/127\.0\.0\.1:\d+\/hangs\.onnx was interrupted/);
    expect(readdirSync(join(cache, 'models'))).toEqual([]);
  }, MODEL_RUN_TIMEOUT_MS);

  it('a directory where the model\'s cached copy belongs: exit 2, VAP_ERR_ASSET_FILE naming the path', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'argus-cache-'));
    mkdirSync(join(cache, 'models', 'dir.onnx'), { recursive: true });
    const r = await runCommand(process.execPath, [ARGUS, 'run', pipelineWithModel('dir.onnx', `${base}/dir.onnx`), '--no-status'], { ARGUS_CACHE: cache });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`argus: VAP_ERR_ASSET_FILE: asset "dir.onnx": the cached copy ${join(cache, 'models', 'dir.onnx')} is a directory`);
  }, MODEL_RUN_TIMEOUT_MS);
});
