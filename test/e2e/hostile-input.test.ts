import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { isArgusError } from '../../src/core/errors.js';
import { Candidates } from '../../src/models/decoder.js';
import { selectDetections } from '../../src/postprocess/select.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { ARGUS, MODEL_RUN_TIMEOUT_MS, ROOT, runCommand } from '../helpers/cli.js';

/** Input that used to crash argus or slip through: files, pipes, environment, model outputs. */

// A CLI run with the real model: the bound only ends a hang (seconds idle, minutes when busy).
const TIMEOUT = MODEL_RUN_TIMEOUT_MS + 60_000;

function sh(cmd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = MODEL_RUN_TIMEOUT_MS) {
  return runCommand('bash', ['-c', cmd], env, timeoutMs);
}

function pipeline(body = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'argus-hostile-'));
  const file = join(dir, 'p.yaml');
  writeFileSync(file, `sources:\n  - { id: lobby, uri: ${PERSON_VIDEO}, rate: fast }\nmodel: { warmupRuns: 0 }\n${body}`);
  return file;
}

describe('hostile input to the CLI', () => {
  it('`--jsonl - | head -3`: stdout closed by its reader ends the run cleanly, no crash', async () => {
    const r = await sh(`set -o pipefail; node ${ARGUS} run ${pipeline()} --no-status --jsonl - | head -3 >/dev/null; echo "argus=\${PIPESTATUS[0]}" >&2`);
    expect(r.stderr).toMatch(/stdout was closed by its reader/);
    // At once: stdout (a socket pair, as a pipe is to node) was waited on for 5 s for a reader gone.
    expect(r.stderr).not.toMatch(/did not take the last/);
    expect(r.stderr).toContain('argus=0');
    expect(r.stderr).not.toMatch(/EPIPE.*\n\s+at /); // no stack trace of an unhandled error
  }, TIMEOUT);

  it('a full disk (/dev/full) is logged once as an error; the run goes on and exits 0', async () => {
    const r = await sh(`node ${ARGUS} run ${pipeline()} --no-status --max-frames 20 --jsonl /dev/full`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/jsonl: writing \/dev\/full failed \(ENOSPC\)/g)).toHaveLength(1);
  }, TIMEOUT);

  it('an unwritable JSONL path is a coded error naming the file and the flag that gave it (exit 2)', async () => {
    const r = await sh(`node ${ARGUS} run ${pipeline()} --no-status --max-frames 5 --jsonl /proc/nope/out.jsonl`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/VAP_ERR_SINK_FILE: --jsonl: cannot open \/proc\/nope\/out\.jsonl/);
  }, TIMEOUT);

  /** `argus run --jsonl FIFO` on a fresh named pipe, resolved once argus says it waits for a reader. */
  async function runToFifo(extra: string[] = []) {
    const fifo = join(mkdtempSync(join(tmpdir(), 'argus-hostile-')), 'out.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const p = spawn(process.execPath, [ARGUS, 'run', pipeline(), '--no-status', '--jsonl', fifo, ...extra], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const exited = new Promise<number | null>((r) => p.on('close', r));
    // Whatever happens, nothing is left behind: the process, or a writer blocked in open().
    const cleanup = () => {
      p.kill('SIGKILL');
      try {
        closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
      } catch {
        // gone
      }
    };
    await new Promise<void>((resolve, reject) => {
      // Only ends a hang (the bug: argus blocked in open() and never said it waits).
      const hang = setTimeout(() => {
        cleanup();
        reject(new Error(`argus did not say it waits for a reader: ${stderr}`));
      }, MODEL_RUN_TIMEOUT_MS);
      p.stderr!.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (stderr.includes('waiting for one')) {
          clearTimeout(hang);
          resolve();
        }
      });
      void exited.then(() => {
        clearTimeout(hang);
        reject(new Error(`argus exited before it waited for a reader: ${stderr}`));
      });
    });
    return { p, fifo, exited, stderr: () => stderr, cleanup };
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`\`--jsonl FIFO\` with no reader: argus waits, saying so, and ${signal} stops it (exit 130, VAP_ERR_INTERRUPTED naming the file)`, async () => {
      // Before, the open blocked a threadpool thread: no signal stopped the process, only SIGKILL.
      const run = await runToFifo();
      try {
        run.p.kill(signal);
        expect(await run.exited).toBe(130);
        expect(run.stderr()).toContain(`argus: VAP_ERR_INTERRUPTED: --jsonl: stopped while waiting for a reader of the named pipe ${run.fifo}`);
      } finally {
        run.cleanup();
      }
    }, TIMEOUT);
  }

  it('`--jsonl FIFO` whose reader comes later: it gets every line and the run exits 0', async () => {
    const run = await runToFifo(['--max-frames', '5']);
    try {
      const cat = spawn('cat', [run.fifo], { stdio: ['ignore', 'pipe', 'inherit'] });
      let got = '';
      cat.stdout.setEncoding('utf8').on('data', (d: string) => (got += d));
      const catDone = new Promise((r) => cat.on('close', r));
      expect(await run.exited).toBe(0);
      await catDone;
      expect(got.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual(Array(5).fill('detections'));
    } finally {
      run.cleanup();
    }
  }, TIMEOUT);

  it('an invalid ARGUS_HTTP_PORT is a coded error naming the variable (exit 2)', async () => {
    const r = await sh(`node ${ARGUS} run ${pipeline('server: { port: 0 }\n')} --no-status --max-frames 5`, { ARGUS_HTTP_PORT: '80x' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/VAP_ERR_CONFIG: ARGUS_HTTP_PORT: expected a port number/);
  }, TIMEOUT);
});

describe('hostile configuration', () => {
  const parse = (yaml: string, env: NodeJS.ProcessEnv = {}) => parseConfigText(yaml, PipelineSchema, 'p.yaml', env);

  it('a numeric-looking secret from ${env:…} stays a string where a string is wanted, and numbers stay numbers', () => {
    const p = parse(
      'sources: [{ id: a, uri: /x.mp4, fps: "${env:FPS}" }]\nsinks:\n  kafka: { brokers: ["k:9092"], sasl: { mechanism: plain, username: "${env:USER_}", password: "${env:PW}" } }\n',
      { PW: '0123456', USER_: 'true', FPS: '15' },
    );
    expect(p.sinks.kafka!.sasl).toMatchObject({ username: 'true', password: '0123456' });
    expect(p.sources[0].fps).toBe(15);
  });

  it('every source disabled is an error, not a silent exit 0', () => {
    let e: unknown;
    try {
      parse('sources: [{ id: a, uri: /x.mp4, enabled: false }, { id: b, uri: /y.mp4, enabled: false }]\n');
    } catch (x) {
      e = x;
    }
    expect(isArgusError(e, 'VAP_ERR_CONFIG')).toBe(true);
    expect((e as Error).message).toMatch(/sources: every source is disabled/);
  });
});

describe('hostile model output', () => {
  function candidates(rows: [number, number, number, number, number, number][]) {
    const c = new Candidates(rows.length);
    rows.forEach(([x1, y1, x2, y2, s, k], i) => {
      c.xyxy.set([x1, y1, x2, y2], i * 4);
      c.score[i] = s;
      c.classId[i] = k;
    });
    return c;
  }
  const opts = { iouThreshold: 0.45, preNmsTopK: 300, maxDetections: 100, classAgnostic: false, numClasses: 80 };

  it('NaN and infinite scores or coordinates, inverted boxes and class ids past the labels are dropped before NMS', () => {
    const c = candidates([
      [0, 0, 10, 10, NaN, 0],
      [0, 0, 10, 10, Infinity, 0],
      [NaN, 0, 10, 10, 0.9, 0],
      [0, 0, Infinity, 10, 0.9, 0],
      [10, 10, 0, 0, 0.9, 0], // inverted
      [0, 0, 10, 10, 0.9, 80], // no label 80
      [0, 0, 10, 10, 0.9, -1],
      [50, 50, 60, 60, 0.8, 2], // the one good box
    ]);
    const d = selectDetections(c, 8, opts);
    expect(d.length).toBe(1);
    expect(Array.from(d.xyxy)).toEqual([50, 50, 60, 60]);
    expect(Array.from(d.classId)).toEqual([2]);
  });

  it('a NaN box next to a real one does not survive NMS beside it', () => {
    const d = selectDetections(candidates([[0, 0, 10, 10, 0.9, 0], [0, 0, NaN, 10, 0.95, 0]]), 2, opts);
    expect(Array.from(d.confidence)).toEqual([Math.fround(0.9)]);
  });
});
