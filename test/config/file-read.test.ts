import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCamerasFile } from '../../src/cluster/admin.js';
import { CONFIG_PIPE_WAIT_MS, invalidUtf8At, loadPipeline, MAX_CONFIG_BYTES, readConfigText } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-config-read-'));
const PIPELINE = 'sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n';

async function refusal(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('accepted');
}

describe('a configuration file is read up to a cap (1 MiB), never past it', () => {
  it('a file of exactly the cap loads; one byte more is VAP_ERR_CONFIG_FILE naming the file', async () => {
    const pad = (bytes: number) => `${PIPELINE}#${'x'.repeat(bytes - PIPELINE.length - 2)}\n`;
    const at = join(dir, 'at-cap.yaml');
    writeFileSync(at, pad(MAX_CONFIG_BYTES));
    expect((await loadPipeline(at, {})).sources[0].id).toBe('cam');
    const over = join(dir, 'over-cap.yaml');
    writeFileSync(over, pad(MAX_CONFIG_BYTES + 1));
    const e = await refusal(loadPipeline(over, {}));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toBe(`${over}: larger than 1 MiB, the most argus reads of a configuration file (nothing past it was read)`);
  });

  it('/dev/zero (no size to check first) is refused after the cap, not read until memory runs out', async () => {
    const e = await refusal(loadPipeline('/dev/zero', {}));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toMatch(/^\/dev\/zero: larger than 1 MiB/);
  });

  it('a FIFO whose writer never stops: argus reads the cap and one byte, then closes it', async () => {
    const fifo = join(dir, 'endless.yaml');
    execFileSync('mkfifo', [fifo]);
    // The writer counts what the pipe took before the reader closed it (EPIPE).
    const writer = spawn(process.execPath, ['-e', `const fs = require('fs'); const fd = fs.openSync(process.argv[1], 'w'); const b = Buffer.alloc(16384, 0x61); let n = 0; try { for (;;) n += fs.writeSync(fd, b); } catch { process.stdout.write(String(n)); }`, fifo], { stdio: ['ignore', 'pipe', 'inherit'] });
    let written = '';
    writer.stdout.setEncoding('utf8').on('data', (s: string) => (written += s));
    const done = new Promise((res) => writer.on('close', res));
    const e = await refusal(readConfigText(fifo));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toMatch(/larger than 1 MiB/);
    await done;
    // What was written is what was read plus at most the pipe's buffer (64 KiB on Linux) and a chunk.
    expect(Number(written)).toBeGreaterThan(MAX_CONFIG_BYTES);
    expect(Number(written)).toBeLessThan(MAX_CONFIG_BYTES + 1024 * 1024);
  }, 30_000);

  it('a cameras file has its own cap (8 MiB), with the same error', async () => {
    const e = await refusal(readCamerasFile('/dev/zero'));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toMatch(/^\/dev\/zero: larger than 8 MiB/);
  });
});

describe('a configuration file that is a named pipe nobody writes to', () => {
  // Pipes a test left waiting: opened for writing and closed again after it, so that a read that
  // blocked (the fault these tests catch) ends, and with it the thread it held.
  const waiting: string[] = [];
  afterEach(() => {
    for (const f of waiting.splice(0)) {
      try {
        closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // no reader left (ENXIO): nothing waits on it
      }
    }
  });
  const fifo = (name: string) => {
    const f = join(dir, name);
    execFileSync('mkfifo', [f]);
    waiting.push(f);
    return f;
  };

  it('is VAP_ERR_CONFIG_FILE naming the file once CONFIG_PIPE_WAIT_MS has passed (it waited for ever)', async () => {
    const f = fifo('nobody.yaml');
    let t = 0;
    const sleep = (ms: number) => new Promise<void>((r) => setImmediate(() => ((t += ms), r())));
    const e = await refusal(readConfigText(f, undefined, 'pipeline', { now: () => t, sleep }));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toBe(`${f}: a pipe nobody wrote to within ${CONFIG_PIPE_WAIT_MS / 1000} s: write the file whole and close it, or name a regular file`);
    expect(t).toBeGreaterThanOrEqual(CONFIG_PIPE_WAIT_MS);
  });

  it("holds none of libuv's threads while it waits: four such reads leave other files readable (they held all four, and process.exit() waited for them)", async () => {
    let t = 0;
    const sleep = () => new Promise<void>((r) => setImmediate(r));
    const reads = [1, 2, 3, 4].map((i) => refusal(readConfigText(fifo(`idle-${i}.yaml`), undefined, 'pipeline', { now: () => t, sleep })));
    const other = join(dir, 'other.yaml');
    writeFileSync(other, PIPELINE);
    expect(await readFile(other, 'utf8')).toBe(PIPELINE);
    t = CONFIG_PIPE_WAIT_MS;
    for (const e of await Promise.all(reads)) expect(e.message).toMatch(/a pipe nobody wrote to within 30 s/);
  });

  it('a pipe written whole and closed is read as a file (argus run <(render-pipeline))', async () => {
    const f = fifo('written.yaml');
    const read = readConfigText(f);
    const writer = spawn(process.execPath, ['-e', `require('fs').writeFileSync(process.argv[1], process.argv[2])`, f, PIPELINE], { stdio: 'ignore' });
    await new Promise((r) => writer.on('close', r));
    expect(await read).toBe(PIPELINE);
  });
});

describe('a configuration file must be UTF-8', () => {
  it('a byte that is not UTF-8 is VAP_ERR_CONFIG_FILE naming the file, the byte offset and the line (it was turned into U+FFFD)', async () => {
    const file = join(dir, 'latin1.yaml');
    // A Latin-1 'é' (0xE9) in a uri on line 3.
    writeFileSync(file, Buffer.concat([Buffer.from('sources:\n  - id: cam\n    uri: rtsp://cam.local/caf'), Buffer.from([0xe9]), Buffer.from('\n')]));
    const e = await refusal(loadPipeline(file, {}));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toBe(`${file}: not UTF-8 text: the byte at offset 50 (line 3, byte 30 of the line), 0xe9, does not start or continue a UTF-8 character; save the file as UTF-8`);
    const cams = join(dir, 'cameras.yaml');
    writeFileSync(cams, Buffer.from([0x63, 0x61, 0x6d, 0xff]));
    expect((await refusal(readCamerasFile(cams))).message).toMatch(/not UTF-8 text: the byte at offset 3 \(line 1, byte 4 of the line\), 0xff/);
  });

  it('UTF-8 is read as it is: accents, emoji, a BOM', async () => {
    const file = join(dir, 'utf8.yaml');
    writeFileSync(file, `\uFEFFname: café 📷\n${PIPELINE}`);
    expect((await loadPipeline(file, {})).name).toBe('café 📷');
  });

  it('invalidUtf8At finds the first bad sequence: overlong forms, surrogates, past U+10FFFF, cut short, a stray continuation', () => {
    const at = (...b: number[]) => invalidUtf8At(Uint8Array.from(b));
    expect(at(0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x93, 0xb7)).toBe(-1); // a é € 📷
    expect(at(0x61, 0xc0, 0x80)).toBe(1); // overlong NUL
    expect(at(0xe0, 0x80, 0x80)).toBe(0); // overlong 3-byte
    expect(at(0x61, 0x62, 0xed, 0xa0, 0x80)).toBe(2); // a surrogate
    expect(at(0xf4, 0x90, 0x80, 0x80)).toBe(0); // past U+10FFFF
    expect(at(0x61, 0xe2, 0x82)).toBe(1); // cut short
    expect(at(0x80)).toBe(0); // a continuation byte alone
    expect(at(0xc3, 0x41)).toBe(0); // a lead byte without its continuation
  });
});

describe('argus cameras apply: a variable a camera may not read', () => {
  it("is named before this shell's value of it is checked in its place (HOME's /root in a password was refused as a '/' before '@')", async () => {
    const cams = join(mkdtempSync(join(tmpdir(), 'argus-cams-env-')), 'cams.yaml');
    writeFileSync(cams, 'cameras:\n  - {id: a, uri: /x.mp4}\n  - {id: b, uri: "rtsp://u:${env:HOME}@cam/x"}\n');
    await expect(readCamerasFile(cams)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `${cams}: cameras[1]: \${env:HOME}: a camera may read only ARGUS_CAMERA_* variables of the workers' environment` });
  });

  it('a file that is not YAML is still VAP_ERR_CONFIG_FILE', async () => {
    const cams = join(mkdtempSync(join(tmpdir(), 'argus-cams-env-')), 'cams.yaml');
    writeFileSync(cams, 'cameras: [\n');
    await expect(readCamerasFile(cams)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG_FILE' });
  });
});

describe('a model manifest that is no YAML text (the ONNX model itself, a picture): said what a manifest is and where the model goes', () => {
  it("model.manifest: x.onnx is VAP_ERR_CONFIG naming model.path; an ONNX file of another name, or a picture, by what it is (they were read as a pipeline's YAML: 'larger than 1 MiB', 'not a pipeline YAML: argus detect … runs the model on it')", async () => {
    const { loadModelManifest } = await import('../../src/assets/catalog.js');
    const d = mkdtempSync(join(tmpdir(), 'argus-manifest-'));
    const onnx = join(d, 'mine.onnx');
    writeFileSync(onnx, Buffer.alloc(MAX_CONFIG_BYTES + 10, 0x08));
    await expect(loadModelManifest(onnx)).rejects.toMatchObject({
      code: 'VAP_ERR_CONFIG',
      message: `${onnx} is an ONNX model, not a manifest: give it as model.path, with manifest: naming its family (model: { manifest: yolox-nano, path: ${onnx} } for the official YOLOX files)`,
    });
    const renamed = join(d, 'mine.model');
    writeFileSync(renamed, Buffer.alloc(MAX_CONFIG_BYTES + 10, 0x08));
    const big = await refusal(loadModelManifest(renamed));
    expect(big.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(big.message).toContain(`${renamed}: larger than 1 MiB, the most argus reads of a configuration file (nothing past it was read); a model manifest is YAML text, and an ONNX model file is given as model.path`);
    const photo = join(d, 'photo.jpg');
    writeFileSync(photo, Buffer.from('ffd8ffe000104a4649460001', 'hex'));
    await expect(loadModelManifest(photo)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG_FILE', message: `${photo}: a JPEG picture, not a model manifest (YAML)` });
    // A pipeline keeps its own advice.
    await expect(loadPipeline(photo, {})).rejects.toMatchObject({ message: expect.stringContaining('a JPEG picture, not a pipeline YAML: `argus detect') });
  });
});

describe('an empty pipeline file, or one of comments only', () => {
  it('is said to be empty (it was "expected a mapping at the top level", as for a list); a list still gets that', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-empty-'));
    for (const [name, text] of [['empty.yaml', ''], ['comments.yaml', '# to do\n\n  # later\n']]) {
      writeFileSync(join(d, name), text);
      await expect(loadPipeline(join(d, name), {})).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `${join(d, name)}: empty (no settings in it)` });
    }
    writeFileSync(join(d, 'list.yaml'), '- a\n');
    await expect(loadPipeline(join(d, 'list.yaml'), {})).rejects.toMatchObject({ message: `${join(d, 'list.yaml')}: expected a mapping at the top level` });
  });
});

describe('a pipeline path that is a folder (argus run pipelines)', () => {
  it('is said to be one (it was "cannot read (EISDIR)")', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'argus-pipelines-'));
    await expect(loadPipeline(folder, {})).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG_FILE', message: `${folder}: a folder, not a YAML file: name the file in it` });
  });
});

describe('a pipeline or worker YAML given as a cameras file (argus cameras apply pipelines/demo.yaml)', () => {
  it('says what it is and what takes it (it was "cameras: Required" and its keys as unknown ones)', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-cams-kind-'));
    for (const [name, text] of [['p.yaml', PIPELINE], ['w.yaml', 'cluster:\n  workerId: w1\n']]) {
      writeFileSync(join(d, name), text);
      await expect(readCamerasFile(join(d, name))).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(new RegExp(`^${join(d, name)}: a pipeline YAML, not a cameras file: \`argus run FILE\` runs a pipeline`)) });
    }
  });
});

describe('a pipeline path that is a terminal (argus run /dev/stdin, typed at)', () => {
  it('is said to be one, and what to do (it was "cannot read (EAGAIN)"): run in a pseudo-terminal by script(1)', async () => {
    const argus = join(__dirname, '../../bin/argus.js');
    // script's stdin is a pipe left open: nothing is typed, and no end of input is sent.
    const p = spawn('script', ['-qec', `'${process.execPath}' '${argus}' check /dev/stdin`, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    const hang = setTimeout(() => p.kill('SIGKILL'), 120_000); // ends a hang only
    const code = await new Promise<number | null>((r) => p.on('close', r));
    clearTimeout(hang);
    p.stdin.destroy();
    expect(out).toContain('VAP_ERR_CONFIG_FILE: /dev/stdin: a terminal; argus reads the file whole, not as it is typed: name the file, or pipe it in (`argus run /dev/stdin < pipeline.yaml`');
    expect(out).not.toContain('EAGAIN');
    expect(code).not.toBe(0);
  }, 150_000);
});

describe('a pipeline path that is a Unix socket', () => {
  it('is said to be one, and what to do (it was "cannot read (ENXIO)")', async () => {
    const { createServer } = await import('node:net');
    const path = join(mkdtempSync(join(tmpdir(), 'argus-sock-')), 'p.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(path, r));
    try {
      await expect(loadPipeline(path, {})).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG_FILE', message: `${path}: a socket, not a file: name the file, or pipe it in (\`argus run /dev/stdin < pipeline.yaml\`)` });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
