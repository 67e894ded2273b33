import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline, parseConfigText } from '../../src/config/load.js';
import { hostId, interpolateEnv } from '../../src/config/interpolate.js';
import { CamerasFileSchema, PipelineSchema } from '../../src/config/schema.js';
import { isArgusError } from '../../src/core/errors.js';
import { MIRROR } from '../helpers/assets.js';
import { ortSessionOptions } from '../../src/inference/session.js';
import { inferenceThreads, resolveSourceUrl } from '../../src/pipeline/pipeline.js';

const parse = (yaml: string, env: NodeJS.ProcessEnv = {}) => parseConfigText(yaml, PipelineSchema, 'test.yaml', env);
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as Error & { code: string };
  }
  throw new Error('expected an error');
};

describe('interpolateEnv', () => {
  it.each([
    ['a set variable', '${env:CAM}', { CAM: 'rtsp://x' }, 'rtsp://x'],
    ['the default when unset', '${env:CAM,rtsp://fallback}', {}, 'rtsp://fallback'],
    ['the default when empty', '${env:CAM,d}', { CAM: '' }, 'd'],
    ['a whole-value number becomes a number', '${env:FPS,30}', {}, 30],
    ['a whole-value boolean becomes a boolean', '${env:LOOP,false}', {}, false],
    ['inside a longer string stays a string', 'rtsp://${env:HOST,cam1}:8554/${env:PATH_,live}', {}, 'rtsp://cam1:8554/live'],
    // Strings YAML would read otherwise come as set (they lost a "comment", a tag, their quotes).
    ['a value with " #" keeps it', '${env:OUT}', { OUT: '/tmp/run #1.jsonl' }, '/tmp/run #1.jsonl'],
    ['a value starting with ! keeps it', '${env:PW}', { PW: '!Sup3r$ecretPW' }, '!Sup3r$ecretPW'],
    ['a value starting with & keeps it', '${env:PW}', { PW: '&a pw' }, '&a pw'],
    ['a quoted value keeps its quotes', '${env:PW}', { PW: '"quoted"' }, '"quoted"'],
  ])('%s', (_n, value, env, want) => {
    expect(interpolateEnv({ v: value }, env)).toEqual({ v: want });
  });

  it('writes nothing to stderr for a value YAML warns about (an unresolved tag printed the secret)', () => {
    const writes: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    const warn = process.emitWarning;
    process.stderr.write = ((c: string) => (writes.push(String(c)), true)) as typeof process.stderr.write;
    process.emitWarning = ((w: string | Error) => void writes.push(String(w))) as typeof process.emitWarning;
    try {
      interpolateEnv({ v: '${env:PW}' }, { PW: '!Sup3r$ecretPW' });
    } finally {
      process.stderr.write = orig;
      process.emitWarning = warn;
    }
    expect(writes.join('')).not.toContain('Sup3r');
  });

  it('${hostname} is the machine\'s name as an id, also as a default; a set variable still wins', () => {
    const host = hostId();
    expect(host).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(interpolateEnv({ a: '${hostname}', b: 'w-${env:ID,${hostname}}', c: '${env:ID,${hostname}}' }, {})).toEqual({ a: host, b: `w-${host}`, c: host });
    expect(interpolateEnv({ c: '${env:ID,${hostname}}' }, { ID: 'a' })).toEqual({ c: 'a' });
  });

  it('a host name of digits only stays a string where the schema wants one (a container\'s hex id can be all digits)', () => {
    const yaml = 'name: x\ncluster:\n  workerId: ${env:ID,${hostname}}\n';
    expect(parse(yaml.replace('${hostname}', hostId('123456789012')), {}).cluster!.workerId).toBe('123456789012');
    expect(parse(yaml.replace('${hostname}', hostId('1e10')), {}).cluster!.workerId).toBe('1e10');
    expect(hostId('web 1:büro')).toBe('web_1_b_ro');
    expect(hostId('..')).toBe('localhost');
    expect(hostId('x'.repeat(300))).toHaveLength(64);
  });

  it.each([
    ['a shell-style ${NAME} (a password sent to the camera as "${CAM_PW}")', 'rtsp://u:${CAM_PW}@cam/x', /^sources\[0\]\.uri: `\$\{CAM_PW\}` is no expression argus replaces: write `\$\{env:CAM_PW\}`/],
    ['${ENV:NAME} in capitals', '${ENV:HOME}/x.mp4', /`\$\{HOME\}` is no expression argus replaces: write `\$\{env:HOME\}`/],
    ['a default that is another variable (A set gave "its value}")', '${env:A,${env:B}}', /^sources\[0\]\.uri: a `\$\{` that starts no expression argus replaces/],
    ['an unclosed ${env:', '/v/${env:A.mp4', /a `\$\{` that starts no expression argus replaces/],
    ['an empty name', '${env:}', /a `\$\{` that starts no expression argus replaces/],
  ])('refuses %s, naming the field; it was kept as text without a word', (_n, uri, message) => {
    for (const env of [{}, { A: 'a', B: 'b', CAM_PW: 'pw', HOME: '/root' }]) {
      expect(() => interpolateEnv({ sources: [{ uri }] }, env)).toThrow(message);
    }
  });

  it('keeps ${ as it is where a variable brings it (the way to write one), and a default of ${hostname}', () => {
    expect(interpolateEnv({ v: 'rtsp://u:${env:PW}@cam/x', w: '${env:ID,${hostname}}' }, { PW: 'a${b}c', ID: 'x' })).toEqual({ v: 'rtsp://u:a${b}c@cam/x', w: 'x' });
  });

  it('names the field of an unset variable without default', () => {
    expect(() => interpolateEnv({ sources: [{ uri: '${env:NOPE}' }] }, {})).toThrow('sources[0].uri: environment variable NOPE is not set and has no default');
  });
});

describe('pipeline schema', () => {
  it('fills documented defaults', () => {
    const p = parse('sources:\n  - id: a\n    uri: /x.mp4\n');
    expect(p.sources[0]).toMatchObject({ rate: 'native', loop: false, rtspTransport: 'tcp', enabled: true });
    expect(p.model).toMatchObject({ providers: ['cpu'], batch: { maxBatch: 1 } });
    expect(inferenceThreads(p)).toEqual({ workers: 1, intraOpThreads: 2 });
    expect(p.model.manifest).toBeUndefined(); // yolox-nano unless a model path is given alone
    expect(p.postprocess).toMatchObject({ scoreThreshold: 0.3, iouThreshold: 0.45, preNmsTopK: 30_000, maxDetections: 100 });
  });

  it('sessions × threads: 1 × 2 by default; 2 × 1 when every source is a file read as fast as possible on the CPU and neither is set', () => {
    const threads = (yaml: string) => inferenceThreads(parse(yaml));
    const fast = 'sources:\n  - {id: a, uri: /x.mp4, rate: fast}\n  - {id: b, uri: clips/y.mp4, rate: fast}\n';
    expect(threads(fast)).toEqual({ workers: 2, intraOpThreads: 1 });
    // A disabled camera does not count; an enabled one, or a file played at its own rate, does.
    expect(threads(fast + '  - {id: c, uri: rtsp://cam/live, enabled: false}\n')).toEqual({ workers: 2, intraOpThreads: 1 });
    expect(threads(fast + '  - {id: c, uri: rtsp://cam/live, rate: fast}\n')).toEqual({ workers: 1, intraOpThreads: 2 });
    expect(threads(fast + '  - {id: c, uri: /z.mp4}\n')).toEqual({ workers: 1, intraOpThreads: 2 });
    // Either one set: the other keeps its plain default.
    expect(threads(fast + 'model: {workers: 3}\n')).toEqual({ workers: 3, intraOpThreads: 2 });
    expect(threads(fast + 'model: {intraOpThreads: 4}\n')).toEqual({ workers: 1, intraOpThreads: 4 });
    expect(threads(fast + 'model: {workers: 0, intraOpThreads: 1}\n')).toEqual({ workers: 0, intraOpThreads: 1 });
    // A GPU provider: one session.
    expect(threads(fast + 'model: {providers: [cuda, cpu]}\n')).toEqual({ workers: 1, intraOpThreads: 2 });
    // A worker's cameras come later, from Kafka: the camera defaults.
    expect(inferenceThreads(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'] } }))).toEqual({ workers: 1, intraOpThreads: 2 });
  });

  it('ONNX Runtime threads spin at most model.spinMicros (default 200 µs) before they sleep; allowSpinning: false, not at all', () => {
    const session = (m: { allowSpinning: boolean; spinMicros: number }) =>
      ortSessionOptions({ providers: ['cpu'], intraOpThreads: 2, workers: 1, deviceId: 0, allowSpinning: m.allowSpinning, spinMicros: m.spinMicros }).extra;
    const d = parse('sources:\n  - id: a\n    uri: /x.mp4\n').model;
    expect(d).toMatchObject({ allowSpinning: true, spinMicros: 200 });
    expect(session(d)).toEqual({ session: { intra_op: { allow_spinning: '1', spin_duration_us: '200' } } });
    expect(session(parse('sources:\n  - {id: a, uri: /x}\nmodel:\n  spinMicros: 500\n').model)).toEqual({ session: { intra_op: { allow_spinning: '1', spin_duration_us: '500' } } });
    expect(session(parse('sources:\n  - {id: a, uri: /x}\nmodel:\n  allowSpinning: false\n').model)).toEqual({ session: { intra_op: { allow_spinning: '0' } } });
  });

  it('stallMaxMs is 60 s by default, or stallMinMs where higher; a value set is kept', () => {
    const w = (y: string) => parse(`sources:\n  - id: a\n    uri: rtsp://h/s\n${y}`).sources[0].watchdog;
    expect(w('')).toMatchObject({ stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 });
    expect(w('    watchdog: {stallMinMs: 90000}\n').stallMaxMs).toBe(90_000);
    expect(w('    watchdog: {stallMaxMs: 300000}\n').stallMaxMs).toBe(300_000);
  });

  it('interpolates before validating, so env values get checked types', () => {
    const p = parse('sources:\n  - id: a\n    uri: /x.mp4\n    rate: ${env:RATE,native}\nmodel:\n  intraOpThreads: ${env:T,2}\n', { RATE: 'fast', T: '1' });
    expect(p.sources[0].rate).toBe('fast');
    expect(p.model.intraOpThreads).toBe(1);
  });

  it.each<[string, string, RegExp]>([
    ['missing sources', 'name: x\n', /sources: at least one source is needed/],
    ['empty sources', 'sources: []\n', /sources: at least one source is needed/],
    ['a wrong type', 'sources:\n  - id: a\n    uri: /x.mp4\n    loop: "yes"\n', /sources\[0\]\.loop: Expected boolean, received string/],
    ['an unknown rate', 'sources:\n  - id: a\n    uri: /x.mp4\n    rate: slow\n', /sources\[0\]\.rate: Invalid enum value.*'native' \| 'fast'/],
    ['a watchdog bound below its floor', 'sources:\n  - id: a\n    uri: /x.mp4\n    watchdog: {stallMinMs: 5000, stallMaxMs: 1000}\n', /sources\[0\]\.watchdog\.stallMaxMs: stallMaxMs must not be below stallMinMs/],
    ['a UDP buffer of 2 GB', 'sources:\n  - id: a\n    uri: "udp://239.0.0.1:1234?fifo_size=10000000"\n', /sources\[0\]\.uri: udp:\/\/ fifo_size=10000000: at most 524288 packets of 188 bytes/],
    ['an SRT buffer given as an expression', 'sources:\n  - id: a\n    uri: "srt://h:9000?rcvbuf=2*1e9"\n', /sources\[0\]\.uri: srt:\/\/ rcvbuf: at most 268435456 bytes, in decimal digits/],
    // ffmpeg's protocols read a query's keys as written (no percent-decoding), the first of a name.
    ['a second key of a name, after one percent-encoded', 'sources:\n  - id: a\n    uri: "udp://239.0.0.1:1234?fifo%5Fsize=1&fifo_size=99999999"\n', /sources\[0\]\.uri: udp:\/\/ fifo_size=99999999: at most 524288/],
    ['listening SRT behind a percent-encoded mode', 'sources:\n  - id: a\n    uri: "srt://h:9000?m%6Fde=caller&mode=listener"\n', /sources\[0\]\.uri: ffmpeg would listen for a sender/],
    ['a password with a space (it would end the URL in every log line)', 'sources:\n  - id: a\n    uri: "rtsp://admin:my pass@cam/live"\n', /sources\[0\]\.uri: a URL has no spaces or control characters: percent-encode them/],
    // ffmpeg's authority ends at '/', '?' or '#': it would connect to host "admin", and the password was printed whole.
    ...['sec#ret', 'pa/ss', 'pa?ss', 'Zm9v/YmFy=', 'pa#ss&w0rd', '1234/5678'].map((pw): [string, string, RegExp] => [`a password ${pw} (cut at its / ? or #)`, `sources:\n  - id: a\n    uri: "rtsp://admin:${pw}@cam/live"\n`, /sources\[0\]\.uri: the part before '@' holds '\/', '\?' or '#': in a user name or password, percent-encode them \(%2F, %3F, %23; an '@' in a path: %40\)$/]),
    // A port above 65535 threw out of the RTSP relay and stopped the whole process.
    ['a port above 65535', 'sources:\n  - id: a\n    uri: "rtsps://admin:s3cret@127.0.0.1:99999/cam"\n', /sources\[0\]\.uri: the port 99999 is not 1–65535$/],
    ['no host', 'sources:\n  - id: a\n    uri: "rtsp://admin:s3cret@:554/cam"\n', /sources\[0\]\.uri: no host: rtsp:\/\/HOST\[:PORT\]\/…$/],
    // ffmpeg's own RTSPS takes any certificate: not without saying so.
    ['an rtsps:// camera without the relay, its certificate to be checked', 'sources:\n  - {id: a, uri: "rtsps://cam:7441/x", rtspTransport: http}\n', /sources\[0\]\.tls\.verify: without argus's relay \(RTSP tunnelled in HTTP, .*cannot check its certificate: use the relay, or say tls: \{ verify: false \}$/],
    ['an rtsps:// camera whose input arguments set the transport, its certificate to be checked', 'sources:\n  - {id: a, uri: "rtsps://cam:7441/x", inputArgs: [-rtsp_transport, https]}\n', /sources\[0\]\.tls\.verify: without argus's relay/],
    ['tls on a camera that is not rtsps://', 'sources:\n  - {id: a, uri: "rtsp://cam/x", tls: {verify: false}}\n', /sources\[0\]\.tls: tls is for rtsps:\/\/ cameras/],
    ['tls verify: false with a fingerprint', 'sources:\n  - {id: a, uri: "rtsps://cam/x", tls: {verify: false, fingerprint: "' + 'ab'.repeat(32) + '"}}\n', /sources\[0\]\.tls\.verify: verify: false takes any certificate/],
    ['a fingerprint that is not SHA-256', 'sources:\n  - {id: a, uri: "rtsps://cam/x", tls: {fingerprint: "AB:CD"}}\n', /sources\[0\]\.tls\.fingerprint: a SHA-256 fingerprint: 32 bytes in hex/],
    ['a misspelt key', 'sources:\n  - id: a\n    uri: /x.mp4\n    lop: true\n', /sources\[0\]: Unrecognized key\(s\) in object: 'lop' \(did you mean 'loop'\?\)$/],
    ['a pipeline section written into a source', 'sources:\n  - id: a\n    uri: /x.mp4\n    tracking: {enabled: false}\n', /sources\[0\]: Unrecognized key\(s\) in object: 'tracking' \('tracking': a section of the pipeline, at the top level, for all its sources\)$/],
    // A number inputArgs cannot write failed both halves of a union: "Invalid input".
    ['an inputArgs number that is not finite', 'sources:\n  - id: a\n    uri: /x.mp4\n    inputArgs: [-probesize, 1e400]\n', /sources\[0\]\.inputArgs\[1\]: a word \(an option or its value\), or a finite number$/m],
    ['an inputArgs item that is a list', 'sources:\n  - id: a\n    uri: /x.mp4\n    inputArgs: [-headers, [a, b]]\n', /sources\[0\]\.inputArgs\[1\]: Expected string or number, received array$/m],
    // A union's "Invalid input" said nothing of what the field takes.
    ['a Kafka ssl of another kind', 'sources:\n  - {id: a, uri: /x}\nsinks:\n  kafka: {brokers: ["h:1"], ssl: "yes"}\n', /sinks\.kafka\.ssl: Expected boolean or object, received string \(write true or false: YAML reads yes, no, on and off as text, and 1 and 0 as numbers\)$/m],
    ['a cluster sasl of another kind', 'sinks:\n  kafka: {brokers: ["h:1"]}\ncluster: {sasl: true}\n', /cluster\.sasl: Expected object or false, received boolean$/m],
    ['a threshold out of range', 'sources:\n  - {id: a, uri: /x}\npostprocess:\n  scoreThreshold: 1.5\n', /postprocess\.scoreThreshold: Number must be less than or equal to 1/],
    ['more detections a frame than the tracker is sized for', 'sources:\n  - {id: a, uri: /x}\npostprocess:\n  maxDetections: 1000\n', /postprocess\.maxDetections: Number must be less than or equal to 300/],
    ['an unknown provider', 'sources:\n  - {id: a, uri: /x}\nmodel:\n  providers: [gpu]\n', /model\.providers\[0\]: Invalid enum value/],
    ['duplicate source ids', 'sources:\n  - {id: a, uri: /x}\n  - {id: a, uri: /y}\n', /sources\[1\]\.id: duplicate source id "a"/],
    ['a bad source id', 'sources:\n  - {id: "a b", uri: /x}\n', /sources\[0\]\.id: use letters/],
    ['no spin time', 'sources:\n  - {id: a, uri: /x}\nmodel:\n  spinMicros: 0\n', /model\.spinMicros: Number must be greater than or equal to 1/],
  ])('%s → VAP_ERR_CONFIG naming the field', (_n, yaml, message) => {
    const e = errorOf(() => parse(yaml));
    expect(e.code).toBe('VAP_ERR_CONFIG');
    expect(e.message).toMatch(/^test\.yaml: invalid configuration/);
    expect(e.message).toMatch(message);
  });

  it('a value made from the environment names its variable (ARGUS_THREADS=abc was "model.intraOpThreads: Expected number", the variable left to guess); a default does not, nor a value', () => {
    const yaml = 'sources:\n  - {id: a, uri: /x.mp4, rate: "${env:RATE,native}"}\nmodel:\n  intraOpThreads: ${env:THREADS,2}\n  providers: ["${env:PROVIDER,cpu}"]\n';
    const e = errorOf(() => parse(yaml, { THREADS: 'abc', PROVIDER: 'gpu-s3cret' }));
    expect(e.message).toContain('model.intraOpThreads: Expected number, received string (its value comes from the environment: THREADS)');
    expect(e.message).toContain("model.providers[0]: Invalid enum value. Expected 'cpu' | 'cuda' | 'tensorrt' (its value comes from the environment: PROVIDER)");
    expect(e.message).not.toContain('s3cret');
    expect(errorOf(() => parse(yaml.replace('native', 'slow'), {})).message).toMatch(/sources\[0\]\.rate: Invalid enum value\. Expected 'native' \| 'fast'$/m);
  });

  it.each([
    // (An '@' after a port and a cut is refused as a possible password: written %40 it is taken.)
    ['a port, then an @ in the query, percent-encoded', 'http://cam:8080/snap?mail=ops%40corp.example'],
    ['an IPv6 host, then an @ in the path, percent-encoded', 'rtsp://[::1]:554/a%40b'],
    ['user-info with an encoded #', 'rtsp://admin:sec%23ret@cam/live'],
    ['user-info with @ and : in the password', 'rtsp://admin:p@s:s@cam:554/live'],
    ['plain user-info', 'rtsp://admin:secret@cam:554/live'],
    ['an @ in a path after a port, percent-encoded', 'rtsp://10.0.0.9:554/live%40main'],
    ['an @ in a path without a port', 'http://cam/snaps/a@b.jpg'],
  ])('%s is a URL as ffmpeg reads it: accepted', (_n, uri) => {
    expect(parse(`sources:\n  - id: a\n    uri: "${uri}"\n`).sources[0].uri).toBe(uri);
  });

  it('broken YAML → VAP_ERR_CONFIG_FILE with the line', () => {
    const e = errorOf(() => parse('sources:\n  - id: a\n   uri: [unclosed\n'));
    expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
    expect(e.message).toMatch(/^test\.yaml: not valid YAML \(line \d+, column \d+\): /);
  });

  it('a missing file → VAP_ERR_CONFIG_FILE naming it', async () => {
    const e = await loadPipeline('/nonexistent/pipeline.yaml').catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_CONFIG_FILE')).toBe(true);
    expect((e as Error).message).toBe('/nonexistent/pipeline.yaml: cannot read (ENOENT)');
  });

  it('a video or a picture given as the pipeline (argus run clip.mp4): VAP_ERR_CONFIG_FILE saying what it is and what to run instead, not "not UTF-8"', async () => {
    for (const [file, what] of [
      [`${MIRROR}/streams/bottle-detection.mp4`, 'an MP4/MOV video'],
      [`${MIRROR}/images/000000000139.jpg`, 'a JPEG picture'],
      [`${MIRROR}/streams/bolt-multi-size-detection.gif`, 'a GIF'],
    ]) {
      const e = await loadPipeline(file).catch((x: unknown) => x);
      expect(isArgusError(e, 'VAP_ERR_CONFIG_FILE')).toBe(true);
      expect((e as Error).message).toBe(`${file}: ${what}, not a pipeline YAML: \`argus detect ${file}\` runs the model on it, or name it as a source's uri in a pipeline`);
    }
  });

  it('the cluster\'s cameras list given as a pipeline (argus run pipelines/cameras.yaml): says what it is and what takes it, before any of its ${env:…} (it said a camera\'s password variable was not set)', async () => {
    const e = await loadPipeline('pipelines/cameras.yaml', {}).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_CONFIG')).toBe(true);
    expect((e as Error).message).toBe('pipelines/cameras.yaml: a list of cameras for argus workers, not a pipeline: `argus cameras apply FILE --config WORKER.yaml` gives them to the workers (README, "Many machines: argus workers")');
    // Beside sources too (before: an unset variable of a camera's, then an unknown key).
    const both = join(mkdtempSync(join(tmpdir(), 'argus-cfg-both-')), 'both.yaml');
    writeFileSync(both, 'sources:\n  - {id: a, uri: /x.mp4}\ncameras:\n  - {id: c, uri: "rtsp://u:${env:NOPE}@cam/x"}\n');
    await expect(loadPipeline(both, {})).rejects.toThrow(`${both}: cameras: the list of cameras for argus workers is a file of its own (\`argus cameras apply FILE --config WORKER.yaml\`), not part of a pipeline`);
  });

  it("a pipeline section written into a cluster camera names the workers' config, not the cameras file's top level", () => {
    const e = (() => {
      try {
        parseConfigText('cameras:\n  - {id: c, uri: /x.mp4, tracking: {enabled: false}}\n', CamerasFileSchema, 'cams.yaml', {});
      } catch (x) {
        return x as Error;
      }
    })();
    expect(e?.message).toContain("cameras[0]: Unrecognized key(s) in object: 'tracking' ('tracking': a section of the workers' config, --config WORKER.yaml, for all the cameras they run)");
  });

  it('a pipeline whose text has "ftyp" at byte 4 is no MP4 (no box size before it): read as YAML', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-cfg-ftyp-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(file, '# a ftyp-free pipeline\nsources:\n  - {id: a, uri: /x.mp4}\n');
    expect((await loadPipeline(file)).sources[0].id).toBe('a');
  });

  it('every shipped pipeline validates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-cfg-'));
    writeFileSync(join(dir, 'p.yaml'), 'sources:\n  - {id: a, uri: asset:one-by-one-person-detection.mp4}\n');
    await expect(loadPipeline(join(dir, 'p.yaml'))).resolves.toBeTruthy();
    const demo = await loadPipeline(join(__dirname, '../../pipelines/demo.yaml'), {});
    expect(demo.sources[0]).toMatchObject({ id: 'lobby', uri: 'asset:one-by-one-person-detection.mp4', rate: 'native' });
    expect(demo.model.providers).toEqual(['cpu']);
  });

  it('a scheme:// uri of a scheme argus does not open is refused, naming the field (not taken for a file named "ftp:/…"); paths, network streams and asset: are accepted', async () => {
    const refused = (uri: string) => {
      const e = errorOf(() => parse(`sources:\n  - {id: a, uri: "${uri}"}\n`));
      expect(e.code).toBe('VAP_ERR_CONFIG');
      return e.message;
    };
    for (const [uri, scheme] of [['ftp://h/a.mp4', 'ftp'], ['gopher://h', 'gopher'], ['concat://a', 'concat']]) expect(refused(uri)).toContain(`sources[0].uri: "${scheme}://" is not a scheme argus opens (file://, rtsp://,`);
    // file: only as file:///absolute (file://concat:… would have reached ffmpeg as concat:…).
    expect(refused('file://concat:/a.mp4|/b.mp4')).toContain('sources[0].uri: a file: URL names an absolute path, file:///path');
    // … that names a whole path fileURLToPath can give: no query or fragment (dropped, another file opened), no stray % or encoded /.
    for (const uri of ['file:///data/100%.mp4', 'file:///a%2Fb.mp4', 'file:///data/cam.mp4?x=1', 'file:///data/cam#1.mp4'])
      expect(refused(uri), uri).toContain('sources[0].uri: a file: URL names an absolute path, file:///path, percent-encoded, without ? or #');
    expect(parse('sources:\n  - {id: a, uri: "file:///data/a%20b.mp4"}\n').sources[0].uri).toBe('file:///data/a%20b.mp4');
    // Nothing that makes ffmpeg listen for a sender.
    for (const uri of ['tcp://0.0.0.0:9000?listen=1', 'srt://:9000?mode=listener', 'srt://h:9000?latency=20&mode=rendezvous', 'rtmp://0.0.0.0/live?listen'])
      expect(refused(uri), uri).toContain('sources[0].uri: ffmpeg would listen for a sender');
    for (const uri of ['udp://239.0.0.1:1234?overrun_nonfatal=1&fifo_size=100000', 'srt://enc:9000?rcvbuf=67108864', 'srt://enc:9000?mode=caller', 'rtsps://cam/s', '/data/a:b.mp4', 'cam-1:2.mp4', 'clip-2026-12-04T10:00.mp4', 'concat:a.mp4', 'clips/a.mp4', 'asset:one-by-one-person-detection.mp4', 'v4l2:///dev/video0', 'file:///data/a.mp4'])
      expect(parse(`sources:\n  - {id: a, uri: "${uri}"}\n`).sources[0].uri, uri).toBe(uri);
    // What ffmpeg then opens: the URL's path, decoded; a path relative to the pipeline's folder.
    const at = (uri: string) => resolveSourceUrl(parse(`sources:\n  - {id: a, uri: "${uri}"}\n`).sources[0], '/pipelines', 'ffmpeg', () => {});
    expect(await Promise.all([at('file:///data/a%20b.mp4'), at('cam-1:2.mp4'), at('udp://239.0.0.1:1234')])).toEqual(['/data/a b.mp4', '/pipelines/cam-1:2.mp4', 'udp://239.0.0.1:1234']);
    // An rtsps:// camera's pin, in any of the forms people copy it in, as Node gives it.
    const pin = (fp: string) => parse(`sources:\n  - {id: a, uri: "rtsps://cam/x", tls: {fingerprint: "${fp}"}}\n`).sources[0].tls.fingerprint;
    const hex = 'ab01'.repeat(16);
    expect([pin(hex), pin(`sha256:${hex.toUpperCase()}`), pin(hex.match(/../g)!.join(':'))]).toEqual(Array(3).fill(hex.toUpperCase().match(/../g)!.join(':')));
    expect(parse('sources:\n  - {id: a, uri: "rtsps://cam/x", cameraClock: false, tls: {verify: false}}\n').sources[0].tls).toEqual({ verify: false });
    // Without the camera's clock, the relay still carries (and checks) an rtsps:// camera over TCP.
    expect(parse('sources:\n  - {id: a, uri: "rtsps://cam/x", cameraClock: false}\n').sources[0].tls).toEqual({ verify: true });
    // The scheme in lower case, as argus and ffmpeg compare it.
    expect(parse('sources:\n  - {id: a, uri: "RTMP://H/live/K"}\n').sources[0].uri).toBe('rtmp://H/live/K');
    expect(parse('sources:\n  - {id: a, uri: "FILE:///data/a.mp4"}\n').sources[0].uri).toBe('file:///data/a.mp4');
  });

  it('sendCredentialsTo: hosts as a name, an address or [IPv6], with a port or without; a URL or a user is refused, naming the field', () => {
    expect(parse('sources:\n  - {id: a, uri: "rtsp://cam/x"}\n').sources[0].sendCredentialsTo).toEqual([]);
    const hosts = ['nvr.local', 'nvr.local:8554', '10.0.0.9', '10.0.0.9:554', '[fd00::7]', '[fd00::7]:554', 'fd00::7'];
    expect(parse(`sources:\n  - {id: a, uri: "rtsp://cam/x", sendCredentialsTo: ${JSON.stringify(hosts)}}\n`).sources[0].sendCredentialsTo).toEqual(hosts);
    // A port no redirect can have matched nothing: the credentials silently went nowhere.
    for (const bad of ['rtsp://nvr.local', 'admin@nvr.local', 'nvr.local/live', '', 'nvr.local:99999', 'nvr.local:0', 'nvr.local:0554', '[fd00::7]:70000']) {
      const e = errorOf(() => parse(`sources:\n  - {id: a, uri: "rtsp://cam/x", sendCredentialsTo: ["${bad}"]}\n`));
      expect(e.code).toBe('VAP_ERR_CONFIG');
      expect(e.message).toContain('sources[0].sendCredentialsTo[0]');
    }
  });

  it('a path with a leading ~ is refused, naming each field (no shell expands it: `dir: ~/snaps` made a folder named ~ beside the YAML); ${env:HOME} and names starting with ~ are taken', () => {
    const yaml = [
      'ffmpegPath: ~/bin/ffmpeg',
      'sources:',
      '  - {id: a, uri: "~/cam.mp4", tls: {ca: ~/ca.pem}}',
      '  - {id: b, uri: "~"}',
      'model: {manifest: ~/m.yaml, path: ~/m.onnx, trtEngineCacheDir: ~/trt}',
      'alerts: {snapshot: {mode: ref, dir: ~/argus/snaps}}',
      'sinks: {jsonl: {path: ~/out.jsonl}, annotate: {path: ~/videos/}, kafka: {brokers: [k:9092], deadLetterPath: ~/dl.jsonl}}',
      'outbox: {dir: ~/outbox}',
    ].join('\n');
    const e = errorOf(() => parse(yaml));
    expect(e.code).toBe('VAP_ERR_CONFIG');
    const fields = ['ffmpegPath', 'sources[0].uri', 'sources[0].tls.ca', 'sources[1].uri', 'model.manifest', 'model.path', 'model.trtEngineCacheDir', 'alerts.snapshot.dir', 'sinks.jsonl.path', 'sinks.annotate.path', 'sinks.kafka.deadLetterPath', 'outbox.dir'];
    for (const f of fields) expect(e.message).toContain(`${f}: a leading ~ is not the home folder here (only a shell expands it): write the full path, or \${env:HOME}/…`);
    const ok = parse('sources:\n  - {id: a, uri: "${env:HOME}/cam.mp4"}\n  - {id: b, uri: ~backup.mp4}\n  - {id: c, uri: "clips/~/x.mp4"}\nalerts: {snapshot: {mode: ref, dir: "${env:HOME}/snaps"}}\n', { HOME: '/home/op' });
    expect(ok.sources.map((s) => s.uri)).toEqual(['/home/op/cam.mp4', '~backup.mp4', 'clips/~/x.mp4']);
    expect(ok.alerts.snapshot.dir).toBe('/home/op/snaps');
  });

  it('an id of dots only is refused (ids name files: `{source}` of `..` would be the folder above); dots inside an id are fine', () => {
    for (const bad of ['.', '..', '...']) {
      const e = errorOf(() => parse(`sources:\n  - {id: "${bad}", uri: /tmp/a.mp4}\n`));
      expect(e.code).toBe('VAP_ERR_CONFIG');
      expect(e.message).toContain('sources[0].id: use letters, digits, dot, dash or underscore (not only dots)');
    }
    expect(parse('sources:\n  - {id: cam.1, uri: /tmp/a.mp4}\n').sources[0].id).toBe('cam.1');
  });

  it('the id "_all" is refused: the metrics count every source\'s sink drops under it, and a source of that name would share them', () => {
    const e = errorOf(() => parse('sources:\n  - {id: _all, uri: /tmp/a.mp4}\n'));
    expect(e.code).toBe('VAP_ERR_CONFIG');
    expect(e.message).toContain('sources[0].id: "_all" is reserved');
    expect(parse('sources:\n  - {id: _all2, uri: /tmp/a.mp4}\n').sources[0].id).toBe('_all2');
  });

  it('outbox.enabled: true without a Kafka sink is refused, naming the field (nothing would ever take its records out: once full it dropped alerts the JSONL file had all got, exit 3 "lost")', () => {
    const e = errorOf(() => parse('sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {enabled: true}\n'));
    expect(e.code).toBe('VAP_ERR_CONFIG');
    expect(e.message).toContain('outbox.enabled: the outbox keeps alerts until Kafka acknowledges them, and no Kafka sink is configured (sinks.kafka)');
    // With a Kafka sink, or left out (off without Kafka), or off: taken.
    expect(parse('sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {enabled: true}\nsinks: {kafka: {brokers: [h:9092]}}\n').outbox.enabled).toBe(true);
    expect(parse('sources:\n  - {id: cam, uri: /tmp/a.mp4}\n').outbox.enabled).toBeUndefined();
    expect(parse('sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {enabled: false}\n').outbox.enabled).toBe(false);
  });

  it('an outbox.maxBytes that cannot hold one alert with its snapshot is refused, naming the field and the size needed (such an alert was dropped undelivered the moment it was journaled)', () => {
    const kafka = 'sinks: {kafka: {brokers: [h:9092]}}\n';
    const e = errorOf(() => parse(`sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {maxBytes: 65536}\n${kafka}`));
    expect(e.code).toBe('VAP_ERR_CONFIG');
    // The default snapshot cap, 150 000 bytes: 200 000 of base64, 100 detections, the rest.
    expect(e.message).toContain('outbox.maxBytes: 65536 cannot hold one alert: with its snapshot embedded (alerts.snapshot.maxBytes 150000, base64) and up to 100 detections (postprocess.maxDetections), one takes up to 224192 bytes in the journal');
    expect(parse(`sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {maxBytes: 224192}\n${kafka}`).outbox.maxBytes).toBe(224192);
    // Snapshots by reference (or none): the detections and the rest only.
    expect(parse(`sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {maxBytes: 65536}\nalerts: {snapshot: {mode: ref}}\npostprocess: {maxDetections: 300}\n${kafka}`).outbox.maxBytes).toBe(65536);
    // No outbox (no Kafka sink, not enabled): its bound is not checked.
    expect(parse('sources:\n  - {id: cam, uri: /tmp/a.mp4}\noutbox: {maxBytes: 65536}\n').outbox.maxBytes).toBe(65536);
  });

  it('sinks.websocket.maxAlertBacklogBytes is not sized by the snapshot (the WebSocket sends its URL): its least, 64 KiB, is taken with embedded snapshots and the most detections', () => {
    const server = 'server: {port: 0}\n';
    // Refused before, as unable to hold one alert with its 200 KB embedded snapshot.
    expect(parse(`sources:\n  - {id: cam, uri: /tmp/a.mp4}\n${server}sinks: {websocket: {maxAlertBacklogBytes: 65536}}\npostprocess: {maxDetections: 300}\n`).sinks.websocket.maxAlertBacklogBytes).toBe(65536);
  });
});

describe('a source’s decode.deinterlace', () => {
  const deinterlace = (decode: string) => parse(`sources:\n  - {id: a, uri: /a.mp4${decode}}\n`).sources[0].decode.deinterlace;
  it('auto by default; on and off taken; anything else refused, naming the field', () => {
    expect(deinterlace('')).toBe('auto');
    expect(deinterlace(', decode: {threads: 2}')).toBe('auto');
    expect(deinterlace(', decode: {deinterlace: on}')).toBe('on');
    expect(deinterlace(', decode: {deinterlace: off}')).toBe('off');
    expect(() => deinterlace(', decode: {deinterlace: yadif}')).toThrow(/sources\[0\]\.decode\.deinterlace/);
  });
});
