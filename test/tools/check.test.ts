// argus check: a pipeline file checked without running it, every problem with its code and field.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Outbox } from '../../src/sinks/outbox.js';
import type { Message } from '../../src/sinks/message.js';
import { checkPipeline, formatCheck, type CheckReport } from '../../src/tools/check.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';
import { Kafka, logLevel } from 'kafkajs';

const dir = mkdtempSync(join(tmpdir(), 'argus-check-'));
const pipeline = (name: string, yaml: string) => {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  return file;
};
const problems = (r: CheckReport) => r.items.filter((i) => !i.ok).map((i) => ({ code: i.code, field: i.field }));

describe('argus check', () => {
  it('a good pipeline passes; --probe reads its clip\'s first frame and says its size and rate', async () => {
    const file = pipeline('good.yaml', `name: good\nsources:\n  - id: lobby\n    uri: ${PERSON_VIDEO}\n    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [person]}\nsinks:\n  jsonl: {path: out.jsonl}\n`);
    const r = await checkPipeline(file, { probe: true, timeoutMs: 120_000 });
    expect(problems(r)).toEqual([]);
    expect(r.ok).toBe(true);
    expect(new Set(r.items.map((i) => i.check))).toEqual(new Set(['pipeline', 'ffmpeg', 'source', 'model', 'classes', 'sinks', 'probe']));
    expect(r.items.find((i) => i.check === 'probe')).toMatchObject({ ok: true, field: 'sources[0].uri', width: 768, height: 432, fps: 10 });
    expect(r.items.find((i) => i.check === 'model')?.message).toMatch(/^yolox-nano: session made on cpu, input 416x416 fits the yolox decoder, 80 labels$/);
    expect(r.items.find((i) => i.check === 'ffmpeg')?.message).toMatch(/^ffmpeg \S+ at \//);
    expect(formatCheck(r)).toMatch(/^ok +probe +lobby: first frame 768x432 at 10 fps$/m);
  }, 300_000);

  it('a file with three mistakes of its settings: each named, with its code and field, not only the first', async () => {
    const file = pipeline('schema.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\n    rate: slow\n    bogus: 1\nmodel: {intraOpThreads: -1}\n`);
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([
      { code: 'VAP_ERR_CONFIG', field: 'sources[0].rate' },
      { code: 'VAP_ERR_CONFIG', field: 'sources[0]' },
      { code: 'VAP_ERR_CONFIG', field: 'model.intraOpThreads' },
    ]);
    expect(r.items[1].message).toContain("Unrecognized key(s) in object: 'bogus'");
  });

  it('a pipeline file that is not there: VAP_ERR_CONFIG_FILE naming it', async () => {
    const file = join(dir, 'absent.yaml');
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_CONFIG_FILE', field: file }]);
    expect(r.items[0].message).toBe(`${file}: cannot read (ENOENT)`);
  });

  it('three mistakes found past the settings (a missing video, an unknown class, a JSONL folder that does not exist): all three', async () => {
    const file = pipeline('three.yaml', `name: t\nsources:\n  - id: a\n    uri: missing.mp4\n    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [persn]}\nsinks:\n  jsonl: {path: no-such-folder/out.jsonl}\n`);
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([
      { code: 'VAP_ERR_SOURCE_OPEN', field: 'sources[0].uri' },
      { code: 'VAP_ERR_CONFIG', field: 'sources[0].zones[0].classes[0]' },
      { code: 'VAP_ERR_SINK_FILE', field: 'sinks.jsonl.path' },
    ]);
    expect(r.items.find((i) => i.code === 'VAP_ERR_SOURCE_OPEN')?.message).toBe(`sources[0].uri: ${join(dir, 'missing.mp4')}: cannot be read (ENOENT)`);
    expect(r.items.find((i) => i.check === 'classes')?.message).toMatch(/^sources\[0\]\.zones\[0\]\.classes\[0\]: unknown class "persn" \(the model's labels include person/);
  });

  it('a secret from ${env:…} put where a class name and a path go (a typo): neither the unknown class nor the path repeats it, in the report or its JSON', async () => {
    const secret = 'Hunter2Secret';
    process.env.ARGUS_CHECK_TEST_KAFKA_PASSWORD = secret;
    try {
      const file = pipeline('env-secret.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\n    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: ["\${env:ARGUS_CHECK_TEST_KAFKA_PASSWORD}"]}\nsinks:\n  jsonl: {path: "no-such-folder/\${env:ARGUS_CHECK_TEST_KAFKA_PASSWORD}.jsonl"}\n`);
      const r = await checkPipeline(file);
      expect(problems(r)).toEqual([
        { code: 'VAP_ERR_CONFIG', field: 'sources[0].zones[0].classes[0]' },
        { code: 'VAP_ERR_SINK_FILE', field: 'sinks.jsonl.path' },
      ]);
      expect(r.items.find((i) => i.check === 'classes')?.message).toMatch(/^sources\[0\]\.zones\[0\]\.classes\[0\]: unknown class \(its value comes from the environment\)/);
      expect(r.items.find((i) => i.check === 'sinks')?.message).toContain('no-such-folder/***.jsonl');
      expect(JSON.stringify(r)).not.toContain(secret);
      expect(formatCheck(r)).not.toContain(secret);
    } finally {
      delete process.env.ARGUS_CHECK_TEST_KAFKA_PASSWORD;
    }
  });

  it('ARGUS_HTTP_PORT set while the pipeline has no server block: a warning, as the run\'s (no server runs: a health check on that port is never answered)', async () => {
    const file = pipeline('no-server.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\n`);
    vi.stubEnv('ARGUS_HTTP_PORT', '8099');
    try {
      const r = await checkPipeline(file);
      expect(problems(r)).toEqual([]);
      expect(r.items.find((i) => i.check === 'server')).toEqual({ check: 'server', ok: true, warning: true, message: `ARGUS_HTTP_PORT is set, but ${file} has no server block: no HTTP server runs (no /metrics, /healthz, dashboard or /ws); add server: { port: … } to serve them` });
      expect(formatCheck(r)).toMatch(/^WARNING server +ARGUS_HTTP_PORT is set, but /m);
    } finally {
      vi.unstubAllEnvs();
    }
    expect((await checkPipeline(file)).items.find((i) => i.check === 'server')).toBeUndefined();
  });

  it('the server\'s port held by another program, or a host not of this machine: VAP_ERR_SERVER_LISTEN naming server.port or server.host, as the run stops with it', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    const serve = (name: string, server: string) => pipeline(name, `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nserver: {${server}}\n`);
    try {
      let r = await checkPipeline(serve('port.yaml', `port: ${port}`));
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_SERVER_LISTEN', field: 'server.port' }]);
      expect(r.items.find((i) => i.check === 'server')?.message).toBe(`server: cannot listen on 127.0.0.1:${port} (EADDRINUSE): another program listens there, another argus perhaps: set server.port (or ARGUS_HTTP_PORT) to a free one`);
      // 192.0.2.1 (TEST-NET-1) is no address of this machine.
      r = await checkPipeline(serve('host.yaml', 'host: 192.0.2.1, port: 0'));
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_SERVER_LISTEN', field: 'server.host' }]);
      expect(r.items.find((i) => i.check === 'server')?.message).toMatch(/^server: cannot listen on 192\.0\.2\.1:0 \(EADDRNOTAVAIL\): server\.host is not an address of this machine/);
    } finally {
      await new Promise((r) => holder.close(r));
    }
    // Free again: passed, and nothing is left listening (the check closed its own).
    const r = await checkPipeline(serve('port.yaml', `port: ${port}`));
    expect(r.items.find((i) => i.check === 'server')).toMatchObject({ ok: true, message: `127.0.0.1:${port}: free to listen on` });
    const again = createServer();
    await new Promise<void>((resolve, reject) => again.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((r) => again.close(r));
  });

  it('a V4L2 source\'s node not there, or not a character device: VAP_ERR_SOURCE_OPEN naming the source\'s uri (it passed as a "v4l2 stream")', async () => {
    writeFileSync(join(dir, 'video7'), 'x');
    const cam = (name: string, uri: string) => pipeline(name, `name: t\nsources:\n  - id: a\n    uri: ${uri}\n`);
    let r = await checkPipeline(cam('no-device.yaml', '/dev/video987'));
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SOURCE_OPEN', field: 'sources[0].uri' }]);
    expect(r.items.find((i) => i.check === 'source')?.message).toBe('sources[0].uri: /dev/video987: no such device (a camera unplugged, or a container started without --device)');
    r = await checkPipeline(cam('file-device.yaml', `v4l2://${join(dir, 'video7')}`));
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SOURCE_OPEN', field: 'sources[0].uri' }]);
    expect(r.items.find((i) => i.check === 'source')?.message).toMatch(/video7: is not a character device \(a file\)/);
    // A character device argus may open passes (/dev/null stands in for a camera's node).
    r = await checkPipeline(cam('null-device.yaml', 'v4l2:///dev/null'));
    expect(r.items.find((i) => i.check === 'source')).toMatchObject({ ok: true, message: 'a: device v4l2:///dev/null, a character device argus may open' });
  });

  it('the annotated video: a path the run refuses (a source\'s clip), a folder that cannot be made, an ffmpeg without libx264: VAP_ERR_SINK_FILE naming the field', async () => {
    const clip = join(dir, 'annotate-clip.mp4');
    copyFileSync(PERSON_VIDEO, clip);
    writeFileSync(join(dir, 'plain-file'), 'x');
    const annotated = (name: string, path: string, more = '') => pipeline(name, `name: t\nsources:\n  - id: a\n    uri: annotate-clip.mp4\nsinks:\n  annotate: {path: ${path}}\n${more}`);
    const item = (r: CheckReport) => r.items.find((i) => i.check === 'annotate');
    let r = await checkPipeline(annotated('ann-clip.yaml', 'annotate-clip.mp4'));
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SINK_FILE', field: 'sinks.annotate.path' }]);
    expect(item(r)?.message).toMatch(/^sinks\.annotate\.path: .*annotate-clip\.mp4 is a file a source reads/);
    r = await checkPipeline(annotated('ann-folder.yaml', 'plain-file/videos/out.mp4'));
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SINK_FILE', field: 'sinks.annotate.path' }]);
    expect(item(r)?.message).toMatch(/^sinks\.annotate\.path: .*out\.mp4: its folder cannot be made \(.*plain-file is not a folder\)$/);
    // An ffmpeg whose build has no libx264 (its list of encoders without it): every video's encoder would fail at its first frame.
    const ffmpeg = join(dir, 'ffmpeg-no-x264');
    writeFileSync(ffmpeg, `#!/bin/sh\nif [ "$2" = "-encoders" ]; then ffmpeg "$@" | grep -v libx264; else exec ffmpeg "$@"; fi\n`, { mode: 0o755 });
    r = await checkPipeline(annotated('ann-x264.yaml', 'videos/out.mp4', `ffmpegPath: ${ffmpeg}\n`));
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SINK_FILE', field: 'ffmpegPath' }]);
    expect(item(r)?.message).toBe(`${ffmpeg} has no libx264 encoder, which the annotated video is written with (a build without it: install one with libx264, or set ffmpegPath)`);
    r = await checkPipeline(annotated('ann-good.yaml', 'videos/out.mp4'));
    expect(item(r)).toMatchObject({ ok: true, message: expect.stringMatching(/videos\/out\.mp4: writable, libx264 in \//) });
  });

  it('a CUDA provider asked for where the host has none: the run falls back to the CPU, and the check says so (a WARNING naming model.providers[0], not a bare "ok")', async () => {
    const file = pipeline('cuda.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nmodel:\n  providers: [cuda]\n`);
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([]);
    const model = r.items.filter((i) => i.check === 'model');
    if (/session made on cuda/.test(model[0].message)) {
      // A host with CUDA: nothing to warn of.
      expect(model.filter((i) => i.warning)).toEqual([]);
    } else {
      expect(model[1]).toMatchObject({ ok: true, warning: true, field: 'model.providers[0]' });
      expect(model[1].message).toMatch(/^model\.providers: cuda is not available on this host \(.+\): a run falls back, as this check did, and infers on cpu$/);
      expect(formatCheck(r)).toMatch(/^WARNING model +model\.providers: cuda is not available/m);
    }
  }, 120_000);

  it('a new user\'s ten broken pipelines: each problem says what and where (its field, or its line), and no password is printed', async () => {
    const PW = 'Sup3rS3cret';
    process.env.ARGUS_CHECK_TEST_CAM_PW = PW;
    const src = `sources:\n  - id: lobby\n    uri: ${PERSON_VIDEO}\n`;
    const cases: [string, string, { code: string; field: string }[], RegExp][] = [
      ['a key indented one space too far', `${src}     zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]}\n`, [{ code: 'VAP_ERR_CONFIG_FILE', field: '' }], /not valid YAML \(line 3, column \d+\): .*\(check the indentation of this line and the ones after it/],
      ['tabs for indentation', `sources:\n\t- id: lobby\n\t  uri: x.mp4\n`, [{ code: 'VAP_ERR_CONFIG_FILE', field: '' }], /not valid YAML \(line 2, column 1\): Tabs are not allowed as indentation/],
      ['a zone in pixels, units left as fractions', `${src}    zones:\n      - {id: door, polygon: [[100, 200], [640, 200], [640, 360]]}\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources[0].zones[0].polygon' }], /look like pixels .* add `units: pixel` to this zone/],
      ['an RTSP URL with a password and a misspelt scheme', `sources:\n  - id: gate\n    uri: rstp://admin:${PW}@192.168.1.64:554/Streaming/Channels/101\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources[0].uri' }], /"rstp:\/\/" is not a scheme argus opens/],
      ['a password holding "/" not percent-encoded', `sources:\n  - id: gate\n    uri: "rtsp://admin:\${env:ARGUS_CHECK_TEST_CAM_PW}/x@192.168.1.64/live"\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources[0].uri' }], /the part before '@' holds '\/', '\?' or '#'/],
      ['a model file that is not there', `${src}model:\n  path: models/my-yolo.onnx\n`, [{ code: 'VAP_ERR_MODEL_LOAD', field: 'model.path' }], /^PROBLEM model +VAP_ERR_MODEL_LOAD: model\.path: model ".*my-yolo\.onnx": file not found/m],
      ['sources as a mapping, not a list', `sources:\n  id: lobby\n  uri: x.mp4\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources' }], /sources: Expected array, received object/],
      ['a rule naming a misspelt zone', `${src}    zones:\n      - {id: door, polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: dor}\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources[0].rules[0].zone' }], /no zone "dor" in this source \(zones: door\)/],
      ['a broker with a password in its address', `${src}sinks:\n  kafka: {brokers: ["kafka://bob:${PW}@broker:9092"]}\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sinks.kafka.brokers[0]' }], /sinks\.kafka\.brokers\[0\]: use host:port/],
      ['the camera password where a class goes', `${src}    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: ["\${env:ARGUS_CHECK_TEST_CAM_PW}"]}\n`, [{ code: 'VAP_ERR_CONFIG', field: 'sources[0].zones[0].classes[0]' }], /unknown class \(its value comes from the environment\)/],
    ];
    try {
      for (const [name, yaml, want, message] of cases) {
        const file = pipeline(`new-user-${cases.findIndex((c) => c[0] === name)}.yaml`, yaml);
        const r = await checkPipeline(file);
        expect(problems(r).map((p) => ({ ...p, field: p.field === file ? '' : p.field })), name).toEqual(want);
        const text = formatCheck(r);
        expect(text, name).toMatch(message);
        expect(text, name).not.toContain(PW);
        expect(JSON.stringify(r), name).not.toContain(PW);
      }
    } finally {
      delete process.env.ARGUS_CHECK_TEST_CAM_PW;
    }
  }, 120_000);

  it('a model whose session takes longer than the bound (a TensorRT engine built at a first start): a WARNING, the rest still checked, the session released once made', async () => {
    const file = pipeline('slow-model.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nmodel:\n  providers: [tensorrt, cpu]\nsinks:\n  jsonl: {path: out.jsonl}\n`);
    let released = false;
    let made!: () => void;
    const later = new Promise<void>((r) => (made = r));
    const slow = (() => later.then(() => ({ release: async () => void (released = true) }))) as unknown as NonNullable<Parameters<typeof checkPipeline>[1]>['loadDetector'];
    const started = Date.now();
    const r = await checkPipeline(file, { modelTimeoutMs: 300, loadDetector: slow });
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(problems(r)).toEqual([]);
    // late: the CLI's exit then says the session still being opened as a note, not as an error (exitAfterInference's sessionSaid).
    expect(r.items.find((i) => i.check === 'model')).toMatchObject({ ok: true, warning: true, late: true, field: 'model.providers' });
    expect(r.items.find((i) => i.check === 'model')?.message).toMatch(/^model\.providers: no session made within 0\.3 s \(a TensorRT engine is built at a first start.*: a run waits for it before its first frame/);
    expect(r.items.find((i) => i.check === 'sinks')).toMatchObject({ ok: true });
    expect(r.items.some((i) => i.check === 'classes')).toBe(false);
    made();
    await vi.waitFor(() => expect(released).toBe(true));
  });

  describe('the outbox folder, as a run opens it', () => {
    const kafkaPipeline = (name: string, outbox: string) => pipeline(name, `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nsinks:\n  kafka: {brokers: ["127.0.0.1:1"]}\noutbox: {${outbox}}\n`);
    const outboxItem = (r: CheckReport) => r.items.find((i) => i.check === 'outbox');

    it('held by a running argus of this host (its lock names a live pid): VAP_ERR_OUTBOX naming outbox.dir, as the run refuses it', async () => {
      const held = join(dir, 'held-outbox');
      mkdirSync(held, { mode: 0o700 });
      const other = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        // The lock's older form (`pid`) reads as this host's: its pid alive is the holder.
        writeFileSync(join(held, 'outbox.lock'), `${other.pid}\n`);
        const r = await checkPipeline(kafkaPipeline('held.yaml', `dir: ${held}`));
        expect(problems(r)).toEqual([{ code: 'VAP_ERR_OUTBOX', field: 'outbox.dir' }]);
        expect(outboxItem(r)?.message).toBe(`outbox.dir: ${held} is in use by another argus (pid ${other.pid}); give each pipeline its own outbox.dir`);
      } finally {
        other.kill();
      }
      // Its holder gone: the run takes the lock over, and the check passes.
      await new Promise((r) => other.once('exit', r));
      const r = await checkPipeline(kafkaPipeline('held.yaml', `dir: ${held}`));
      expect(problems(r)).toEqual([]);
      // Another host's lock, touched by its heartbeat: held too (the run waits for it to go stale, then refuses);
      // judged by the touches, as the run judges it, never by its mtime against this clock: that
      // host's clock five minutes behind (its touches five minutes old here) passed as not held.
      const lock = join(held, 'outbox.lock');
      writeFileSync(lock, JSON.stringify({ pid: 1, host: 'another-host', ns: 'pid:[1]', identity: 'x 1', id: 'y' }));
      const behind = Date.now() / 1000 - 300;
      utimesSync(lock, behind, behind);
      let beats = 0;
      const heartbeat = setInterval(() => {
        const t = behind + ++beats;
        utimesSync(lock, t, t);
      }, 400);
      try {
        expect(outboxItem(await checkPipeline(kafkaPipeline('held.yaml', `dir: ${held}`)))?.message).toMatch(/is in use by another argus \(pid 1 on host another-host, its lock touched in the last 20 s\)/);
      } finally {
        clearInterval(heartbeat);
      }
      // Its heartbeat stopped, its last touch in this clock's future (that host's clock ahead): the run takes it over.
      utimesSync(lock, Date.now() / 1000 + 300, Date.now() / 1000 + 300);
      expect(problems(await checkPipeline(kafkaPipeline('held.yaml', `dir: ${held}`)))).toEqual([]);
    }, 120_000);

    it('a folder holding another pipeline\'s journal with undelivered alerts: VAP_ERR_OUTBOX naming outbox.dir, as the run refuses it (the check said it was fine); once delivered, it passes', async () => {
      const shared = join(dir, 'shared-outbox');
      const lobby = await Outbox.open({ dir: shared, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby' });
      const m = { type: 'alert', source: 'a', alert: { id: 'al-1' } } as unknown as Message;
      await lobby.append(m, JSON.stringify(m));
      await lobby.close();
      const file = pipeline('staging.yaml', `name: staging\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nsinks:\n  kafka: {brokers: ["127.0.0.1:1"]}\noutbox: {dir: ${shared}}\n`);
      const r = await checkPipeline(file);
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_OUTBOX', field: 'outbox.dir' }]);
      expect(outboxItem(r)?.message).toBe(`outbox.dir: ${shared} holds the journal of the pipeline "lobby" (1 undelivered alert(s), 0 status(es)), for its Kafka; this pipeline is "staging": give it its own outbox.dir (or, if it is "lobby" renamed, run it once under its old name to deliver them, or remove ${join(shared, 'pipeline')})`);
      // The run refuses it the same way.
      const run = await Outbox.open({ dir: shared, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'staging' }).catch((e: unknown) => e);
      expect((run as Error).message).toContain(`holds the journal of the pipeline "lobby" (1 undelivered alert(s), 0 status(es))`);
      // Its own pipeline's check passes; and once its alerts are delivered, so does this one's.
      expect(outboxItem(await checkPipeline(pipeline('lobby.yaml', `name: lobby\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nsinks:\n  kafka: {brokers: ["127.0.0.1:1"]}\noutbox: {dir: ${shared}}\n`)))?.ok).toBe(true);
      const again = await Outbox.open({ dir: shared, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, owner: 'lobby' });
      again.ack([m]);
      await again.close();
      expect(outboxItem(await checkPipeline(file))?.ok).toBe(true);
    }, 120_000);

    it('a folder the run refuses (a file in its place, writable by every user): VAP_ERR_OUTBOX naming outbox.dir', async () => {
      writeFileSync(join(dir, 'a-file'), 'x');
      let r = await checkPipeline(kafkaPipeline('file.yaml', `dir: ${join(dir, 'a-file')}`));
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_OUTBOX', field: 'outbox.dir' }]);
      expect(outboxItem(r)?.message).toMatch(/a-file is not a folder$/);
      const open = join(dir, 'open-outbox');
      mkdirSync(open);
      chmodSync(open, 0o777);
      r = await checkPipeline(kafkaPipeline('open.yaml', `dir: ${open}`));
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_OUTBOX', field: 'outbox.dir' }]);
      expect(outboxItem(r)?.message).toMatch(/is writable by every user \(mode 777\): another local user could plant alerts in its journal/);
    });

    it('a volume with less room than three times outbox.maxBytes and the dead-letter file: the run\'s warning, said beforehand (not a problem)', async () => {
      const file = kafkaPipeline('room.yaml', `dir: ${join(dir, 'not-made-yet', 'outbox')}, maxBytes: 1048576`);
      const r = await checkPipeline(file, { freeBytes: async () => 2 * 1048576 });
      expect(problems(r)).toEqual([]);
      expect(outboxItem(r)).toMatchObject({ ok: true, warning: true, field: 'outbox.maxBytes' });
      expect(outboxItem(r)?.message).toMatch(/^outbox\.maxBytes: a run warns at its start: the volume of .*not-made-yet\/outbox has room for 2\.0 MiB, less than the 103\.0 MiB the outbox needs \(three times outbox\.maxBytes, and sinks\.kafka\.deadLetterMaxBytes/);
      expect(formatCheck(r)).toMatch(/^WARNING outbox /m);
      expect(outboxItem(await checkPipeline(file, { freeBytes: async () => 200 * 1048576 }))).toMatchObject({ ok: true, message: expect.stringMatching(/made by the run \(its folder writable\), room for its bounds$/) });
    });
  });

  it('says that the JSONL file is appended to (each start\'s lines after the last\'s), not only that its folder is writable', async () => {
    const out = join(dir, 'append', 'out.jsonl');
    mkdirSync(join(dir, 'append'), { recursive: true });
    const file = pipeline('append.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nsinks:\n  jsonl: {path: ${out}}\n`);
    // The model is not what is looked at here: a load that fails at once.
    const loadDetector = async () => Promise.reject(new Error('not loaded in this test'));
    const jsonlItem = (r: CheckReport) => r.items.find((i) => i.field === 'sinks.jsonl.path');
    expect(jsonlItem(await checkPipeline(file, { loadDetector }))).toMatchObject({ ok: true, message: `${out}: its folder is writable; not there yet: a run makes it, and later runs append to it, each start's lines after the last start's (a message's run tells the starts apart)` });
    writeFileSync(out, '{"type":"detections"}\n');
    expect(jsonlItem(await checkPipeline(file, { loadDetector }))).toMatchObject({ ok: true, message: `${out}: its folder is writable; a run appends to it (22 bytes there now, kept), each start's lines after the last start's (a message's run tells the starts apart)` });
  });

  it('a JSONL path a run refuses (the pipeline file, a source\'s clip, a folder): each a VAP_ERR_SINK_FILE, as the run says it', async () => {
    const clip = join(dir, 'clip.mp4');
    copyFileSync(PERSON_VIDEO, clip);
    mkdirSync(join(dir, 'a-folder'), { recursive: true });
    const cases: [string, RegExp][] = [
      ['self.yaml', /^sinks\.jsonl\.path: .*self\.yaml is the pipeline file; refusing to write over it$/],
      ['clip.mp4', /^sinks\.jsonl\.path: .*clip\.mp4 is a file a source reads \(.*clip\.mp4\); refusing to write over it$/],
      ['a-folder', /^sinks\.jsonl\.path: .*a-folder: is a folder, not a file$/],
    ];
    for (const [target, message] of cases) {
      const file = pipeline('self.yaml', `name: t\nsources:\n  - id: a\n    uri: clip.mp4\nsinks:\n  jsonl: {path: ${target}}\n`);
      const r = await checkPipeline(file);
      expect(problems(r), target).toEqual([{ code: 'VAP_ERR_SINK_FILE', field: 'sinks.jsonl.path' }]);
      expect(r.items.find((i) => !i.ok)?.message, target).toMatch(message);
    }
  });

  it('an rtsps camera\'s CA file that is not there: the problem names sources[0].tls.ca, as its message does (not the uri)', async () => {
    const file = pipeline('ca.yaml', `name: t\nsources:\n  - id: a\n    uri: rtsps://127.0.0.1:1/x\n    tls: {ca: no-such-ca.pem}\n`);
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_CONFIG', field: 'sources[0].tls.ca' }]);
    expect(r.items.find((i) => !i.ok)?.message).toBe(`sources[0].tls.ca: ${join(dir, 'no-such-ca.pem')}: cannot be read (ENOENT)`);
  });

  it('--probe: a zone\'s pixel point outside the first frame (768x432) is VAP_ERR_CONFIG naming the point, as the run fails the source on that frame', async () => {
    const file = pipeline('outside.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\n    zones:\n      - {id: z, units: pixel, polygon: [[0, 0], [2000, 0], [2000, 900]]}\n`);
    const r = await checkPipeline(file, { probe: true, timeoutMs: 120_000 });
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_CONFIG', field: 'sources[0].zones[0].polygon[1]' }]);
    expect(r.items.find((i) => !i.ok)).toMatchObject({ check: 'probe', message: expect.stringMatching(/^sources\[0\]\.zones\[0\]\.polygon\[1\]: point \[2000, 0\] is outside the 768x432 frame/) });
  }, 300_000);

  it('a missing model file: VAP_ERR_MODEL_LOAD naming model.path and the file; the rest is still checked', async () => {
    const file = pipeline('model.yaml', `name: t\nmodel: {path: nope.onnx}\nsources:\n  - id: a\n    uri: missing.mp4\n`);
    const r = await checkPipeline(file);
    expect(problems(r)).toEqual([
      { code: 'VAP_ERR_SOURCE_OPEN', field: 'sources[0].uri' },
      { code: 'VAP_ERR_MODEL_LOAD', field: 'model.path' },
    ]);
    expect(r.items.find((i) => i.check === 'model')?.message).toContain(join(dir, 'nope.onnx'));
  });

  it('--probe of a source that never gives a frame (a named pipe nobody writes to): VAP_ERR_SOURCE_TIMEOUT naming the source', async () => {
    const fifo = join(dir, 'never.mp4');
    execFileSync('mkfifo', [fifo]);
    const file = pipeline('never.yaml', `name: t\nsources:\n  - id: a\n    uri: never.mp4\n`);
    const r = await checkPipeline(file, { probe: true, timeoutMs: 1000 });
    expect(problems(r)).toEqual([{ code: 'VAP_ERR_SOURCE_TIMEOUT', field: 'sources[0].uri' }]);
  });

  describe('--connect', () => {
    // A broker that accepts connections and never answers.
    let silent: Server;
    const sockets = new Set<Socket>();
    afterAll(() => {
      for (const s of sockets) s.destroy();
      silent?.close();
    });

    it('brokers that do not answer: VAP_ERR_KAFKA_UNREACHABLE within the timeout; without --connect only their form is checked', async () => {
      silent = createServer((s) => void sockets.add(s));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const port = (silent.address() as AddressInfo).port;
      const file = pipeline('kafka.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\nsinks:\n  kafka: {brokers: ["127.0.0.1:${port}"]}\n`);
      const offline = await checkPipeline(file);
      expect(offline.ok).toBe(true);
      expect(offline.items.find((i) => i.check === 'kafka')?.message).toContain('well formed (--connect to reach them)');
      const r = await checkPipeline(file, { connect: true, timeoutMs: 1000 });
      expect(problems(r)).toEqual([{ code: 'VAP_ERR_KAFKA_UNREACHABLE', field: 'sinks.kafka.brokers' }]);
    });
  });

  it('--connect: a topic there already with fewer partitions than argus asks for (sinks.kafka.partitions; a worker\'s cameras topic, cluster.slots) is a WARNING naming the topic and both counts', async () => {
    const brokers = await testBrokers();
    const topic = uniqueTopic('check-partitions');
    const cameras = `${topic}.cameras`;
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 1 }, { topic: cameras, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
    await admin.disconnect();
    const file = pipeline('partitions.yaml', `name: t\nsinks:\n  kafka: {brokers: ${JSON.stringify(brokers)}, topics: {detections: ${topic}, alerts: ${topic}.alerts}, partitions: 3}\ncluster: {camerasTopic: ${cameras}, ownersTopic: ${topic}.owners, slots: 8}\n`);
    const r = await checkPipeline(file, { connect: true, timeoutMs: 30_000, loadDetector: async () => Promise.reject(new Error('not loaded in this test')) });
    const warned = r.items.filter((i) => i.check === 'kafka' && i.warning);
    expect(warned).toEqual([
      expect.objectContaining({ ok: true, field: 'sinks.kafka.partitions', message: expect.stringMatching(new RegExp(`^sinks\\.kafka: topic "${topic}" has 1 partition, fewer than the 3 of sinks\\.kafka\\.partitions: `)) }),
      expect.objectContaining({ ok: true, field: 'cluster.slots', message: expect.stringMatching(new RegExp(`^cluster\\.camerasTopic: topic "${cameras}" has 2 partitions, fewer than the 8 of cluster\\.slots: `)) }),
    ]);
  }, 120_000);

  it('from the command line: exit 2 with problems, --json the report', async () => {
    const file = pipeline('cli.yaml', `name: t\nsources:\n  - id: a\n    uri: ${PERSON_VIDEO}\n    rate: slow\nmodel: {intraOpThreads: -1}\n`);
    const r = await runCommand(process.execPath, [ARGUS, 'check', file, '--json']);
    expect(r.code).toBe(2);
    const report = JSON.parse(r.stdout) as CheckReport;
    expect(report).toMatchObject({ file, ok: false, problems: 2 });
    expect(report.items.map((i) => [i.code, i.field])).toEqual([
      ['VAP_ERR_CONFIG', 'sources[0].rate'],
      ['VAP_ERR_CONFIG', 'model.intraOpThreads'],
    ]);
  });
});
