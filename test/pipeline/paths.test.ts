// Relative paths in a pipeline file are the pipeline folder's, whatever folder argus runs from.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';

describe('relative paths in the pipeline file', () => {
  it("sinks.jsonl.path is the pipeline folder's (it was the shell's), as annotate's and the snapshots' are; --jsonl stays the shell's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-paths-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', clip]);
    const config = parseConfigText(`sources:\n  - {id: cam, uri: clip.mp4, rate: fast}\nsinks:\n  jsonl: { path: frames.jsonl }\n`, PipelineSchema, join(dir, 'p.yaml'), {});
    const { detector } = await fakeDetector();
    try {
      expect(process.cwd()).not.toBe(dir);
      await runPipeline(config, { detector, baseDir: dir, status: false });
      const lines = readFileSync(join(dir, 'frames.jsonl'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(5);
      expect(existsSync(join(process.cwd(), 'frames.jsonl'))).toBe(false);
      // --jsonl: as the shell gives it (absolute here).
      const flag = join(mkdtempSync(join(tmpdir(), 'argus-paths-flag-')), 'flag.jsonl');
      await runPipeline(config, { detector, baseDir: dir, status: false, jsonl: flag });
      expect(readFileSync(flag, 'utf8').trim().split('\n')).toHaveLength(5);
    } finally {
      await detector.release();
    }
  }, 60_000);
});

describe('settings for files on a live source', () => {
  it('rate: fast and loop: true on a camera are said to change nothing, naming the source (they were taken without a word)', async () => {
    const config = parseConfigText(`sources:\n  - {id: cam, uri: "rtsp://127.0.0.1:9/live", rate: fast, loop: true}\n  - {id: file, uri: clip.mp4, rate: fast, loop: true}\n`, PipelineSchema, 'p.yaml', {});
    const { detector } = await fakeDetector();
    const warned: string[] = [];
    const ac = new AbortController();
    try {
      await runPipeline(config, {
        detector,
        baseDir: mkdtempSync(join(tmpdir(), 'argus-live-')),
        status: false,
        signal: ac.signal,
        log: (m, _f, level) => {
          if (level === 'warn') warned.push(m);
          if (/is a live stream/.test(m)) ac.abort();
        },
      });
    } finally {
      await detector.release();
    }
    expect(warned.filter((m) => /are for files|is for files/.test(m))).toEqual(['sources[0]: rate: fast and loop: true are for files; source "cam" is a live stream (rtsp), read as it comes']);
  }, 60_000);
});

describe('ARGUS_HTTP_PORT without a server block', () => {
  it('is said in a warning naming the file (it was ignored without a word: nothing listened on the port); unset, or with a server block, no warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-httpport-'));
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=10', '-frames:v', '3', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
    const config = parseConfigText('sources:\n  - {id: cam, uri: clip.mp4, rate: fast}\n', PipelineSchema, 'p.yaml', {});
    const { detector } = await fakeDetector();
    const served = parseConfigText('sources:\n  - {id: cam, uri: clip.mp4, rate: fast}\nserver: {port: 0}\n', PipelineSchema, 'p.yaml', {});
    const warnings = async (env: NodeJS.ProcessEnv, c = config) => {
      const warned: string[] = [];
      await runPipeline(c, { detector, baseDir: dir, status: false, env, configFile: 'p.yaml', log: (m, _f, level) => void (level === 'warn' && warned.push(m)) });
      return warned.filter((m) => m.includes('ARGUS_HTTP_PORT'));
    };
    try {
      expect(await warnings({ ARGUS_HTTP_PORT: '8080' })).toEqual(['ARGUS_HTTP_PORT is set, but p.yaml has no server block: no HTTP server runs (no /metrics, /healthz, dashboard or /ws); add server: { port: … } to serve them']);
      expect(await warnings({})).toEqual([]);
      expect(await warnings({ ARGUS_HTTP_PORT: '' })).toEqual([]);
      expect(await warnings({ ARGUS_HTTP_PORT: '0' }, served)).toEqual([]);
    } finally {
      await detector.release();
    }
  }, 60_000);
});

describe('the outbox folder named after the pipeline', () => {
  it("a worker's journal is its cluster's (group, alert topic, brokers in any order); a pipeline's is its own", async () => {
    const { outboxCluster } = await import('../../src/pipeline/run.js');
    const worker = (group: string, brokers: string[]) =>
      parseConfigText(`name: w\nsinks:\n  kafka: {brokers: ${JSON.stringify(brokers)}, topics: {alerts: argus.alerts}}\ncluster: {workerId: w, group: ${group}}\n`, PipelineSchema, 'w.yaml', {});
    expect(outboxCluster(worker('argus-workers', ['k1:9092', 'k2:9092']))).toBe(outboxCluster(worker('argus-workers', ['k2:9092', 'k1:9092'])));
    expect(outboxCluster(worker('argus-workers', ['k1:9092']))).not.toBe(outboxCluster(worker('staging', ['k1:9092'])));
    expect(outboxCluster(worker('argus-workers', ['k1:9092']))).not.toBe(outboxCluster(worker('argus-workers', ['k3:9092'])));
    expect(outboxCluster(parseConfigText('name: p\nsources:\n  - {id: a, uri: /x.mp4}\n', PipelineSchema, 'p.yaml', {}))).toBeUndefined();
  });

  it('stays inside the state folder for a name of dots only (name: ".." put the journal beside it)', async () => {
    const { outboxDir } = await import('../../src/pipeline/run.js');
    const at = (name: string) => outboxDir(parseConfigText(`name: "${name}"\nsources:\n  - {id: a, uri: /x.mp4}\n`, PipelineSchema, 'p.yaml', {}), '/p', { ARGUS_STATE_DIR: '/state' });
    expect(at('..')).toBe('/state/%2E%2E');
    expect(at('.')).toBe('/state/%2E');
    expect(at('lobby cam')).toBe('/state/lobby%20cam');
    expect(at('v1.2')).toBe('/state/v1.2');
  });

  it('one folder a name: no two names share a journal (`__` shared `..`\'s, `lobby_cam` `lobby cam`\'s); names of letters, digits, `.`, `_`, `-` keep theirs', async () => {
    const { outboxFolder, pipelineOfFolder } = await import('../../src/pipeline/run.js');
    const names = ['..', '__', '.', '_', '...', '___', 'lobby cam', 'lobby_cam', 'lobby/cam', 'lobby%20cam', 'lobby%cam', 'a~b', 'Ä', 'ä', '大厅', 'x'.repeat(300), `${'x'.repeat(299)}y`, 'é'.repeat(100), `${'é'.repeat(99)}e`];
    const folders = names.map(outboxFolder);
    expect(new Set(folders).size).toBe(names.length);
    for (const f of folders) {
      expect(f).toMatch(/^[A-Za-z0-9_.%~-]{1,255}$/);
      expect(f).not.toMatch(/^\.+$/);
    }
    for (const n of ['lobby', 'v1.2', '__', 'cam_1-a', 'x'.repeat(255)]) expect(outboxFolder(n)).toBe(n);
    // Told back in the stranded-alerts log (a cut name cannot be: its folder's name is said).
    for (const n of names.filter((x) => !outboxFolder(x).includes('~'))) expect(pipelineOfFolder(outboxFolder(n))).toBe(n);
  });
});
