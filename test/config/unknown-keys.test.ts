import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModelManifest } from '../../src/assets/catalog.js';
import { parseCamera } from '../../src/cluster/view.js';
import { parseConfigText } from '../../src/config/load.js';
import { CamerasFileSchema, PipelineSchema } from '../../src/config/schema.js';

/**
 * An unknown key says which field it likely is (config/suggest.ts): a new user's typo
 * (`deinterlase`), a field one level off (`deinterlace` beside `decode`, `fps` inside it).
 * Zod's message named the key alone.
 */
const source = 'sources:\n  - id: a\n    uri: /x.mp4\n';

function refusal(yaml: string, schema: Parameters<typeof parseConfigText>[1] = PipelineSchema): string {
  try {
    parseConfigText(yaml, schema, 'p.yaml', {});
  } catch (e) {
    expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
    return (e as Error).message;
  }
  throw new Error(`accepted: ${yaml}`);
}

describe('an unknown key names the field it likely is', () => {
  it.each([
    ['a misspelt field of a source section', `${source}    decode: {deinterlase: on}\n`, "sources[0].decode: Unrecognized key(s) in object: 'deinterlase' (did you mean 'deinterlace'?)"],
    ['a letter missing', `${source}tracking:\n  lostTrackBuferMs: 3000\n`, "tracking: Unrecognized key(s) in object: 'lostTrackBuferMs' (did you mean 'lostTrackBufferMs'?)"],
    ['two letters swapped, at the top level', `${source}modle: {resize: fast}\n`, "(root): Unrecognized key(s) in object: 'modle' (did you mean 'model'?)"],
    ['case and separators', `${source}    decode: {low_latency: false}\n`, "'low_latency' (did you mean 'lowLatency'?)"],
    ['in a zone', `${source}    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], exitDelayMS: 500}\n`, "sources[0].zones[0]: Unrecognized key(s) in object: 'exitDelayMS' (did you mean 'exitDelayMs'?)"],
    ['a field of a section written beside it', `${source}    deinterlace: on\n`, "sources[0]: Unrecognized key(s) in object: 'deinterlace' (did you mean decode.deinterlace?)"],
    ['a docker-compose extension key for anchors', `x-defaults: &cam {rate: fast}\n${source}`, "(root): Unrecognized key(s) in object: 'x-defaults' (argus takes no extension keys: put the anchor on a source (`- &cam {…}`) and merge it into the others (`<<: *cam`))"],
    ['fields of each source written at the top level (zones, rules beside sources)', `${source}zones:\n  - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]}\nrules:\n  - {id: r, type: zone-enter, zone: z}\n`, "(root): Unrecognized key(s) in object: 'zones' (zones is a field of each item of sources: sources[0].zones, …), 'rules' (rules is a field of each item of sources: sources[0].rules, …)"],
    ['a field of the object around', `${source}    decode: {fps: 10}\n`, "sources[0].decode: Unrecognized key(s) in object: 'fps' (fps is a field of sources[0], not of sources[0].decode)"],
    ['in the kafka sink', `${source}sinks:\n  kafka: {brokers: ["k:9092"], lingerMS: 5}\n`, "sinks.kafka: Unrecognized key(s) in object: 'lingerMS' (did you mean 'lingerMs'?)"],
    ['in the cluster section', `sinks:\n  kafka: {brokers: ["k:9092"]}\ncluster:\n  maxCamera: 10\n`, "cluster: Unrecognized key(s) in object: 'maxCamera' (did you mean 'maxCameras'?)"],
    ['a field without its unit', `${source}    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], exitDelay: 500}\n    rules:\n      - {id: r, type: zone-enter, zone: z, cooldown: 5}\n`, "'exitDelay' (did you mean 'exitDelayMs'?)"],
    ['a rule field without its unit', `${source}    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]}\n    rules:\n      - {id: r, type: zone-enter, zone: z, cooldown: 5}\n`, "sources[0].rules[0]: Unrecognized key(s) in object: 'cooldown' (did you mean 'cooldownSec'?)"],
    ['several keys, each with its own', `${source}    reconect: {}\n    lop: true\n`, "'reconect' (did you mean 'reconnect'?), 'lop' (did you mean 'loop'?)"],
  ])('%s', (_n, yaml, want) => {
    expect(refusal(yaml)).toContain(want);
  });

  it('no suggestion where nothing is near, and none for a key that is not a field name (it is not repeated)', () => {
    expect(refusal(`${source}    zzzzzz: 1\n`)).toMatch(/sources\[0\]: Unrecognized key\(s\) in object: 'zzzzzz'$/m);
    expect(refusal(`${source}    "lop secret": 1\n`)).toMatch(/sources\[0\]: Unrecognized key\(s\) in object: a key that is not a field name$/m);
  });

  it("a pipeline section written into a source keeps its own hint, not a suggestion", () => {
    expect(refusal(`${source}    tracking: {enabled: false}\n`)).toMatch(/'tracking' \('tracking': a section of the pipeline, at the top level, for all its sources\)$/m);
  });

  it('a cluster camera: its own fields and a source\'s', () => {
    expect(refusal('cameras:\n  - {id: c, uri: /x.mp4, cots: 2}\n', CamerasFileSchema)).toContain("cameras[0]: Unrecognized key(s) in object: 'cots' (did you mean 'cost'?)");
    expect(refusal('cameras:\n  - {id: c, uri: /x.mp4, rtspTransprot: udp}\n', CamerasFileSchema)).toContain("'rtspTransprot' (did you mean 'rtspTransport'?)");
    expect(parseCamera('c', JSON.stringify({ id: 'c', uri: '/x.mp4', placement: { pinn: 'w1' } })).error).toContain("'pinn' (did you mean 'pin'?)");
    expect(parseCamera('c', JSON.stringify({ id: 'c', uri: '/x.mp4', enabeld: false })).error).toContain("'enabeld' (did you mean 'enabled'?)");
  });

  it('only the first few unknown keys of an object get a hint: a camera record of 2000 keys was 126 ms of hints on every worker', () => {
    // Each hint walks the schema and measures the key against every field near it; a record
    // from the cameras topic (64 KiB) could hold 2000 keys, cut to 500 characters in the error.
    const keys = Array.from({ length: 40 }, (_, i) => `f${'_'.repeat(i + 1)}ps`);
    const msg = refusal(`${source}    ${keys.map((k) => `${k}: 1`).join('\n    ')}\n`);
    expect(msg).toContain(`'${keys[39]}'`);
    expect(msg.match(/did you mean/g)).toHaveLength(5);
  });

  it("a user's model manifest", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-keys-')), 'm.yaml');
    writeFileSync(file, 'name: m\nversion: "1"\nfile: m.onnx\npreprocess: {width: 416, height: 416, channelOrder: bgr, letterbox: {algin: center}}\n');
    await expect(loadModelManifest(file)).rejects.toThrow("preprocess.letterbox: Unrecognized key(s) in object: 'algin' (did you mean 'align'?)");
  });
});

describe("a model manifest's file", () => {
  it("of dots only is refused naming the field (.. named the mirror's own folder, and the error said to remove it)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-keys-'));
    for (const name of ['..', '.']) {
      const file = join(dir, `m${name.length}.yaml`);
      writeFileSync(file, `name: m\nversion: "1"\nfile: "${name}"\npreprocess: {width: 416, height: 416, channelOrder: bgr}\n`);
      await expect(loadModelManifest(file)).rejects.toThrow(`${file}: invalid model manifest\n  file: a file name: letters, digits, dot, dash or underscore (not only dots)`);
    }
  });

  it('listing a label twice is refused naming the repeat (a zone of helmets took class 0 alone: class 2, also "helmet", was never counted)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-keys-')), 'm.yaml');
    writeFileSync(file, 'name: m\nversion: "1"\nfile: m.onnx\npreprocess: {width: 416, height: 416, channelOrder: bgr}\nlabels: [helmet, head, helmet]\n');
    await expect(loadModelManifest(file)).rejects.toMatchObject({
      code: 'VAP_ERR_CONFIG',
      message: `${file}: invalid model manifest\n  labels[2]: duplicate label "helmet" (labels[0] too): zones, lines and rules name classes by label, so class 2 would never be counted as it`,
    });
  });
});
