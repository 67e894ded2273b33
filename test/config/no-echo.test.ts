import { describe, expect, it, vi } from 'vitest';
import { parseCamera } from '../../src/cluster/view.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { unknownClasses } from '../../src/config/classes.js';
import { forgetSecrets, interpolatedValue, mention, redact } from '../../src/core/redact.js';

/**
 * A configuration error names the field and what is allowed; it does not repeat a text value it
 * refuses: any value may come from `${env:…}` and hold a secret (`model.resize: ${env:PASSWORD}`
 * printed the password in the error, on stderr and in logs). README, "Pipelines".
 */
const SECRET = 's3cr3tT0ken';
const env = { PASSWORD: SECRET, HEADER: `Authorization: Bearer ${SECRET}` };
const source = 'sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n';

function refusal(yaml: string): string {
  try {
    parseConfigText(yaml, PipelineSchema, 'p.yaml', env);
  } catch (e) {
    expect((e as { code?: string }).code, (e as Error).message).toMatch(/^VAP_ERR_CONFIG/);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${yaml}`);
}

describe('configuration errors do not echo values that may be secrets', () => {
  it.each([
    ['an enum set from a secret', `${source}model:\n  resize: \${env:PASSWORD}\n`, /model\.resize: Invalid enum value\. Expected 'exact' \| 'fast' \(its value comes from the environment: PASSWORD\)$/m],
    ['a source enum', `sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n    rtspTransport: \${env:PASSWORD}\n`, /sources\[0\]\.rtspTransport: Invalid enum value\. Expected 'tcp' \| 'udp'/],
    ['an enum in a list', `${source}model:\n  providers: [cpu, "\${env:PASSWORD}"]\n`, /model\.providers\[1\]: Invalid enum value/],
    ['a rule type from a secret', `${source}    rules:\n      - {id: r, type: "\${env:PASSWORD}", zone: z}\n`, /sources\[0\]\.rules\[0\]\.type: Invalid discriminator value/],
    ['inputArgs as one string', `${source}    inputArgs: "-headers '\${env:HEADER}'"\n`, /sources\[0\]\.inputArgs: Expected array, received string/],
    ['inputArgs with option and value in one word', `${source}    inputArgs: ["-headers '\${env:HEADER}'"]\n`, /sources\[0\]\.inputArgs\[0\]: not an option name/],
    ['an inputArgs value where an option belongs', `${source}    inputArgs: [-user_agent, x, "\${env:HEADER}"]\n`, /sources\[0\]\.inputArgs\[2\]: not an option name/],
    ['an input format', `${source}    inputArgs: [-f, "\${env:PASSWORD}"]\n`, /sources\[0\]\.inputArgs\[1\]: the input format of -f is not one argus passes on; allowed: mjpeg/],
    ['a bounded option', `${source}    inputArgs: [-probesize, "\${env:PASSWORD}"]\n`, /sources\[0\]\.inputArgs\[1\]: -probesize: not a whole number argus can bound/],
    ['rtsp_flags', `${source}    inputArgs: [-rtsp_flags, "\${env:PASSWORD}"]\n`, /sources\[0\]\.inputArgs\[1\]: -rtsp_flags: not passed on: only filter_src/],
    ['a uri buffer option', `sources:\n  - id: cam\n    uri: "udp://239.0.0.1:1234?fifo_size=\${env:PASSWORD}"\n`, /sources\[0\]\.uri: udp:\/\/ fifo_size: at most 524288 packets of 188 bytes, in decimal digits/],
    ['a rule naming a zone by a value that is not an id', `${source}    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: "\${env:HEADER}"}\n`, /sources\[0\]\.rules\[0\]\.zone: no zone of that id in this source \(zones: z\)/],
    ['a rule naming a line by a value that is not an id', `${source}    rules:\n      - {id: r, type: line-cross, line: "\${env:HEADER}"}\n`, /sources\[0\]\.rules\[0\]\.line: no line of that id in this source/],
    ['an unknown key that is not a field name', `${source}    "Authorization: Bearer ${SECRET}": 1\n`, /sources\[0\]: Unrecognized key\(s\) in object: a key that is not a field name/],
  ])('%s: the field is named, the value is not repeated', (_n, yaml, want) => {
    const msg = refusal(yaml);
    expect(msg).toMatch(want);
    expect(msg).not.toContain(SECRET);
  });

  it('server.token: one a Bearer header cannot carry (a space, a line break, beyond ASCII) is refused, naming the field, not the token', () => {
    for (const token of [`${SECRET} x`, `${SECRET}\n`, `p\u20ac${SECRET}`, `${SECRET}\t`]) {
      const msg = refusal(`${source}server:\n  token: ${JSON.stringify(token)}\n`);
      expect(msg, JSON.stringify(token)).toMatch(/server\.token: printable ASCII characters without spaces or line breaks/);
      expect(msg).not.toContain(SECRET);
    }
    // Any printable ASCII is taken: base64 (+ / =), URL-safe and punctuation.
    for (const token of [`${SECRET}+/==`, `${SECRET}-_.~`, `${SECRET}!"#$%&'()*,:;<>?@[]^\`{|}`]) {
      expect(parseConfigText(`${source}server:\n  token: ${JSON.stringify(token)}\n`, PipelineSchema, 'p.yaml', env).server?.token).toBe(token);
    }
  });

  it('a camera record (argus cameras, the cameras topic) is checked the same way', () => {
    const r = parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', rtspTransport: SECRET, inputArgs: ['-headers', 'x', `Bearer ${SECRET}`] }));
    expect(r.error).toMatch(/rtspTransport: Invalid enum value/);
    expect(r.error).not.toContain(SECRET);
  });

  it('still repeats what cannot be a secret and helps: numbers, ids, option names, field-name keys', () => {
    expect(refusal(`${source}    lop: true\n`)).toMatch(/Unrecognized key\(s\) in object: 'lop'/);
    expect(refusal(`${source}    inputArgs: [-y, out.mp4]\n`)).toContain('inputArgs[0]: "-y" is not an ffmpeg input option argus passes on');
    expect(refusal(`${source}    inputArgs: [-probesize, 2G]\n`)).toContain('-probesize 2G is above the 100000000 bytes');
    expect(refusal(`sources:\n  - id: cam\n    uri: "udp://239.0.0.1:1234?fifo_size=10000000"\n`)).toContain('udp:// fifo_size=10000000: at most 524288');
    expect(refusal(`${source}    rules:\n      - {id: r, type: zone-enter, zone: tabel}\n`)).toContain('no zone "tabel" in this source');
  });

  it('mention: a value is repeated only when it has the shape of a name', () => {
    expect(mention('table-area')).toBe('"table-area"');
    expect(mention('Bearer abc')).toBeUndefined();
    expect(mention('x'.repeat(65))).toBeUndefined();
    expect(mention('a\u001b[2J')).toBeUndefined();
    expect(mention(12)).toBeUndefined();
  });
});

describe('YAML errors and warnings do not echo the text they are about', () => {
  const yamlError = (text: string) => {
    try {
      parseConfigText(text, PipelineSchema, 'p.yaml', {});
    } catch (e) {
      return e as Error & { code: string };
    }
    throw new Error('accepted');
  };

  it.each([
    ['an unknown tag (an unquoted password starting with !)', `${source}server:\n  token: !${SECRET}\n`, /^p\.yaml: not valid YAML \(line 5, column 10\): an unknown tag \(a value that starts with ! is a YAML tag: quote it\)$/],
    ['an invalid escape in a double-quoted string', `${source}server:\n  token: "${SECRET}\\q"\n`, /^p\.yaml: not valid YAML \(line 5, column \d+\): an invalid escape sequence in a double-quoted string/],
    ['a block scalar header with more after it', `${source}server:\n  token: |${SECRET}\n   x\n`, /^p\.yaml: not valid YAML \(line 5, column \d+\): characters after a block scalar's header/],
  ])('%s → VAP_ERR_CONFIG_FILE with the line, without the text', (_n, text, want) => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const e = yamlError(text);
      expect(e.code).toBe('VAP_ERR_CONFIG_FILE');
      expect(e.message).toMatch(want);
      expect(e.message).not.toContain(SECRET);
      // Nothing went to stderr behind the error (YAML's warnings printed the line, secret included).
      expect(warn).not.toHaveBeenCalled();
      expect(err).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      err.mockRestore();
    }
  });
});

describe('an alias with no anchor (an unquoted value starting with *) is refused like other bad YAML', () => {
  it('in a pipeline: VAP_ERR_CONFIG_FILE naming the file, without the value', () => {
    const message = refusal(`${source}server:\n  token: *${SECRET}\n`);
    expect(message).toMatch(/^p\.yaml: not valid YAML: an alias \(\*name\) with no anchor/);
    expect(message).not.toContain(SECRET);
  });

  it('in a camera record: the camera is listed as invalid, without the value (it was dropped without a word)', () => {
    const r = parseCamera('cam', `id: cam\nuri: *${SECRET}\n`);
    expect(r.definition).toBeUndefined();
    expect(r.error).toMatch(/an alias \(\*name\) with no anchor/);
    expect(r.error).not.toContain(SECRET);
  });
});

describe('a value made from an environment variable is never repeated, whatever its shape', () => {
  // Name-shaped: `mention` repeated it in the unknown-class error (`classes: [${env:KAFKA_PASSWORD}]`, a typo).
  const PW = 'Hunter2Secret';
  const cam = (rest: string) => `sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n${rest}`;

  it('a class name from ${env:…}: the unknown class is named by its field and said to come from the environment, not repeated nor hinted at', () => {
    const config = parseConfigText(cam(`    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [person, "\${env:CLASS_FROM_ENV}"]}\n`), PipelineSchema, 'p.yaml', { CLASS_FROM_ENV: PW });
    const [text, ...more] = unknownClasses(config.sources[0], ['person', 'Hunter', 'car'], 'sources[0]');
    expect(more).toEqual([]);
    expect(text).toBe("sources[0].zones[0].classes[1]: unknown class (its value comes from the environment) (the model's labels include person, Hunter, car, …)");
    // The same name written in the file is repeated, with labels like it.
    const literal = parseConfigText(cam(`    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [Hunter2]}\n`), PipelineSchema, 'p.yaml', {});
    expect(unknownClasses(literal.sources[0], ['person', 'Hunter', 'car'], 'sources[0]')).toEqual(["sources[0].zones[0].classes[0]: unknown class \"Hunter2\" (the model's labels include Hunter, …)"]);
  });

  it.each([
    ['a zone id listed in a rule\'s error', cam(`    zones:\n      - {id: "\${env:ZONE_ID}", polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: tabel}\n`), /sources\[0\]\.rules\[0\]\.zone: no zone "tabel" in this source \(zones: one set from the environment\)/],
    ['a rule\'s zone reference', cam(`    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: "\${env:ZONE_ID}"}\n`), /sources\[0\]\.rules\[0\]\.zone: no zone of that id in this source \(zones: z\) \(its value comes from the environment: ZONE_ID\)/],
    ['a duplicate source id', `sources:\n  - {id: "\${env:ZONE_ID}", uri: rtsp://a.local/s}\n  - {id: "\${env:ZONE_ID}", uri: rtsp://b.local/s}\n`, /sources\[1\]\.id: duplicate source id \(its value comes from the environment: ZONE_ID\)/],
    ['a zone with no dwellLimitSec', cam(`    zones:\n      - {id: "\${env:ZONE_ID}", polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-dwell, zone: "\${env:ZONE_ID}"}\n`), /sources\[0\]\.rules\[0\]\.zone: zone has no dwellLimitSec/],
  ])('%s: not repeated', (_n, yaml, want) => {
    let message = '';
    try {
      parseConfigText(yaml, PipelineSchema, 'p.yaml', { ZONE_ID: PW });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(want);
    expect(message).not.toContain(PW);
  });

  it('a zone id written in the file, longer than a name\'s 64 characters: listed as such, not as one set from the environment (no variable was used)', () => {
    const long = `loading-dock-${'x'.repeat(60)}`;
    let message = '';
    try {
      parseConfigText(cam(`    zones:\n      - {id: ${long}, polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: tabel}\n`), PipelineSchema, 'p.yaml', {});
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/sources\[0\]\.rules\[0\]\.zone: no zone "tabel" in this source \(zones: one of 73 characters\)/);
  });

  it('what is remembered of values made from ${env:…} is bounded in size: a worker reading camera records (anyone who can write the topic) keeps no long value, only name-sized ones', () => {
    forgetSecrets();
    const env = { ARGUS_CAMERA_DOCK_USER: 'dock' };
    // A refused record of 60 KB, as many as the topic holds: each was kept whole (3,000 of them: 181 MB).
    const long = `\${env:ARGUS_CAMERA_DOCK_USER}${'x'.repeat(60_000)}`;
    expect(parseCamera('cam', JSON.stringify({ source: { id: 'cam', junk: long } }), env).error).toBeDefined();
    expect(interpolatedValue(`dock${'x'.repeat(60_000)}`)).toBe(false);
    // A name-sized one is still never repeated.
    parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', zones: [{ id: 'z', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['${env:ARGUS_CAMERA_DOCK_USER}-2'] }] }), env);
    expect(interpolatedValue('dock-2')).toBe(true);
    expect(mention('dock-2')).toBeUndefined();
    forgetSecrets();
  });

  it('a variable named as a secret (KAFKA_PASSWORD, CAM_PW, API_TOKEN) used anywhere: its value is starred wherever it is printed (a path, a log)', () => {
    forgetSecrets();
    const config = parseConfigText(cam(`sinks:\n  jsonl: {path: "/data/\${env:KAFKA_PASSWORD}/out.jsonl"}\n`), PipelineSchema, 'p.yaml', { KAFKA_PASSWORD: PW, SITE: 'plant-7' });
    expect(redact(`cannot write ${config.sinks.jsonl!.path}`)).toBe('cannot write /data/***/out.jsonl');
    // A variable whose name says nothing of a secret is printed as it is (a path, a site's name).
    parseConfigText(cam(`sinks:\n  jsonl: {path: "/data/\${env:SITE}/out.jsonl"}\n`), PipelineSchema, 'p.yaml', { SITE: 'plant-7' });
    expect(redact('/data/plant-7/out.jsonl')).toBe('/data/plant-7/out.jsonl');
    forgetSecrets();
  });

  it('a variable is judged a secret by the words of its name: the shell\'s PWD, AUTHOR, SESSION_NAME, KEYFRAMES are printed as they are; DB_PWD, BASIC_AUTH, apiKey, SESSION_ID starred', () => {
    forgetSecrets();
    // Before, any name holding `auth`, `session`, `private`, or the word `pwd` was one: the shell's
    // PWD (the working folder) starred every path under it, SESSION_NAME a source's id in every
    // log line and /api/sources answer.
    const plain = { PWD: '/home/ops/argus', AUTHOR: 'Margaret', SESSION_NAME: 'lobby-east', KEYFRAMES: 'every-50', PRIVATE_NETWORK: 'plant-lan' };
    const yaml = `sources:\n  - id: "\${env:SESSION_NAME}"\n    uri: rtsp://cam.local/\${env:KEYFRAMES}/\${env:PRIVATE_NETWORK}-\${env:AUTHOR}\nsinks:\n  jsonl: {path: "\${env:PWD}/alerts.jsonl"}\n`;
    const config = parseConfigText(yaml, PipelineSchema, 'p.yaml', plain);
    expect(config.sinks.jsonl!.path).toBe('/home/ops/argus/alerts.jsonl');
    const line = `source ${config.sources[0].id}: ${config.sources[0].uri}, alerts to ${config.sinks.jsonl!.path}`;
    expect(redact(line)).toBe('source lobby-east: rtsp://cam.local/every-50/plant-lan-Margaret, alerts to /home/ops/argus/alerts.jsonl');
    // Names that do say it: each value starred wherever printed.
    const secret = { DB_PWD: 'pwd-Value-1', BASIC_AUTH: 'auth-Value-2', apiKey: 'key-Value-3', SESSION_ID: 'sid-Value-4', KAFKA_SSL_KEY: 'key-Value-5', CLIENTSECRET: 'sec-Value-6' };
    const names = Object.keys(secret);
    parseConfigText(cam(`sinks:\n  jsonl: {path: "/data/${names.map((n) => `\${env:${n}}`).join('/')}/out.jsonl"}\n`), PipelineSchema, 'p.yaml', secret);
    expect(redact(`/data/${Object.values(secret).join('/')}/out.jsonl`)).toBe(`/data/${names.map(() => '***').join('/')}/out.jsonl`);
    forgetSecrets();
  });
});
