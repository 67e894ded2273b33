import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DRAIN_TIMEOUT_MS, outboxDir } from '../../src/pipeline/run.js';
import { loadPipeline } from '../../src/config/load.js';
import { hostId } from '../../src/config/interpolate.js';
import { loadCatalog } from '../../src/assets/catalog.js';
import { readCamerasFile } from '../../src/cluster/admin.js';
import { parseCamera } from '../../src/cluster/view.js';
import { clusterBrokers, SHUTDOWN_RELEASE_MS } from '../../src/cluster/worker.js';

const ROOT = resolve(__dirname, '../..');
// Merge keys (`<<: *worker`) resolved as compose resolves them.
const compose = parse(readFileSync(resolve(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
const script = readFileSync(resolve(ROOT, 'scripts/kafka-broker.sh'), 'utf8');

describe('docker-compose.yml (docker does not run here: its structure and settings are checked)', () => {
  it('runs Kafka from the official Apache image in KRaft combined mode, like the test broker', () => {
    const k = compose.services.kafka;
    expect(k.image).toMatch(/^apache\/kafka:3\.9\.\d+$/);
    expect(k.environment.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(k.environment.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe(`${k.environment.KAFKA_NODE_ID}@kafka:9093`);
    expect(k.environment.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe(1);
    // The test broker uses the same roles and replication settings.
    expect(script).toMatch(/process\.roles=broker,controller/);
    expect(script).toMatch(/offsets\.topic\.replication\.factor=1/);
    // The version the image runs is the test broker's default version.
    expect(script).toContain(`KAFKA_VERSION:-${k.image.split(':')[1]}`);
  });

  it('runs the pipeline on demo-kafka.yaml against that broker, after it is healthy', async () => {
    const p = compose.services.pipeline;
    expect(p.command).toEqual(['run', 'pipelines/demo-kafka.yaml']);
    expect(p.depends_on.kafka.condition).toBe('service_healthy');
    expect(compose.services.kafka.healthcheck.test.join(' ')).toContain('kafka-broker-api-versions.sh');
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), { ...p.environment });
    expect(cfg.sinks.kafka!.brokers).toEqual([compose.services.kafka.environment.KAFKA_ADVERTISED_LISTENERS.replace('PLAINTEXT://', '')]);
    expect(cfg.sinks.kafka!.replicationFactor).toBe(compose.services.kafka.environment.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR);
    expect(cfg.sinks.kafka!.createTopics).toBe(true);
    expect(cfg.server).toMatchObject({ host: '0.0.0.0', port: 8080 });
    expect(p.ports).toContain(`127.0.0.1:${p.environment.ARGUS_HTTP_PORT}:8080`);
    expect(p.build).toBe('.');
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/CMD \["run", "pipelines\/demo-kafka\.yaml"\]/);
  });

  it('keeps the alert outbox and the broker\'s data on named volumes (a recreated container loses no alert)', async () => {
    const p = compose.services.pipeline;
    const k = compose.services.kafka;
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), { ...p.environment });
    const dir = outboxDir(cfg, resolve(ROOT, 'pipelines'), p.environment);
    expect(dir.startsWith(`${p.environment.ARGUS_STATE_DIR}/`)).toBe(true);
    const mounted = (svc: { volumes: string[] }, path: string) => svc.volumes.some((v) => { const [name, at] = v.split(':'); return path.startsWith(at) && name in compose.volumes; });
    expect(mounted(p, dir)).toBe(true);
    expect(mounted(k, k.environment.KAFKA_LOG_DIRS)).toBe(true);
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/ARGUS_STATE_DIR=\/var\/lib\/argus/);
  });

  it('gives argus the time a stop can take before Docker kills it (its default 10 s cut a stop waiting on a broker that is down)', async () => {
    const seconds = (v: string) => Number(/^(\d+)s$/.exec(v)?.[1]);
    const p = compose.services.pipeline;
    const run = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), { ...p.environment });
    expect(seconds(p.stop_grace_period) * 1000).toBeGreaterThan(DRAIN_TIMEOUT_MS + run.sinks.kafka!.closeTimeoutMs);
    for (const id of ['worker-1', 'worker-2', 'worker-3']) {
      const w = compose.services[id];
      const cfg = await loadPipeline(resolve(ROOT, 'pipelines/worker.yaml'), { ...w.environment });
      // A reconciliation under way (SHUTDOWN_RELEASE_MS), frames in flight, the releases (SHUTDOWN_RELEASE_MS), Kafka's close, and a margin.
      expect(seconds(w.stop_grace_period) * 1000, id).toBeGreaterThan(2 * SHUTDOWN_RELEASE_MS + DRAIN_TIMEOUT_MS + cfg.sinks.kafka!.closeTimeoutMs + 5000);
    }
  });

  it('defaults to the loopback test broker outside compose', async () => {
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), {});
    expect(cfg.sinks.kafka!.brokers).toEqual(['127.0.0.1:19092']);
    expect(script).toContain('KAFKA_PORT:-19092');
    expect(cfg.server!.host).toBe('127.0.0.1');
  });

  it('has a commented GPU variant using the NVIDIA runtime and the CUDA provider', () => {
    const text = readFileSync(resolve(ROOT, 'docker-compose.yml'), 'utf8');
    expect(compose.services['pipeline-gpu']).toBeUndefined();
    expect(text).toMatch(/^ {2}# pipeline-gpu:/m);
    expect(text).toMatch(/^ {2}# {3}runtime: nvidia/m);
    expect(text).toMatch(/^ {2}# {5}ARGUS_PROVIDER: cuda/m);
    expect(text).toMatch(/capabilities: \[gpu\]/);
  });
});

describe('Dockerfile (docker does not run here: its stages are read)', () => {
  /** The stages: name (or index) → instructions, continuation lines joined. */
  const stages = (() => {
    const text = readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const out: { name: string; lines: string[] }[] = [];
    for (const line of text.split('\n').map((l) => l.trim())) {
      if (!line || line.startsWith('#')) continue;
      const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line);
      if (from) out.push({ name: from[1] ?? String(out.length), lines: [] });
      else out[out.length - 1].lines.push(line);
    }
    return out;
  })();

  it('the image runs the compiled CLI: dist/src comes from a stage that has tsc, copied after src (it ran every command through tsx)', () => {
    const final = stages[stages.length - 1];
    // bin/argus.js runs dist/src only where dist/.built is newer than every file in src/.
    const copyDist = final.lines.findIndex((l) => /^COPY\s+--from=(\S+)\s+\/app\/dist\s+\.\/dist\/?$/.test(l));
    expect(copyDist, 'the final stage copies a built /app/dist').toBeGreaterThanOrEqual(0);
    const from = /--from=(\S+)/.exec(final.lines[copyDist])![1];
    // src from that same stage, not from the build context: COPY keeps the context's mtimes and
    // its cache compares contents only, so a cached build stage (an older stamp) with a fresh
    // clone's src made src newer than dist. Copied before dist, so the stamp is the later of the two.
    const copySrc = final.lines.findIndex((l) => new RegExp(`^COPY\\s+--from=${from}\\s+/app/src\\s+\\./src/?$`).test(l));
    expect(copySrc, `the final stage copies /app/src from ${from}`).toBeGreaterThanOrEqual(0);
    expect(copySrc).toBeLessThan(copyDist);
    expect(final.lines.filter((l) => /^COPY\s+(?!--from)(?:--\S+\s+)*src\b/.test(l)), 'src from the build context').toEqual([]);
    // After the stage's npm ci (were its prepare script, scripts/build.mjs, ever run there, it would
    // delete dist/.built and, without a compiler, dist/native/letterbox.node).
    const ci = final.lines.findIndex((l) => /^RUN\b.*\bnpm ci\b/.test(l));
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(ci).toBeLessThan(copySrc);
    // The check after them needs the stamp: find of a missing one prints nothing.
    const check = final.lines.slice(copyDist + 1).find((l) => /find src\b.*-newer dist\/\.built/.test(l));
    expect(check, 'the final stage checks src against the stamp').toBeDefined();
    expect(check).toMatch(/test -f dist\/\.built\b/);
    const build = stages.find((st) => st.name === from)!;
    expect(build, `stage ${from}`).toBeDefined();
    // Its npm ci installs the dev dependencies (typescript), and the build must have made the stamp.
    const buildCi = build.lines.find((l) => /^RUN\s+npm ci\b/.test(l));
    expect(buildCi).toBeDefined();
    expect(buildCi).not.toMatch(/--omit[= ]dev|--production/);
    for (const f of ['src', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']) expect(build.lines.some((l) => new RegExp(`^COPY\\s.*\\b${f.replace('.', '\\.')}\\b`).test(l)), f).toBe(true);
    expect(build.lines.some((l) => /^RUN\s+node scripts\/build\.mjs\b.*test -f dist\/\.built/.test(l))).toBe(true);
    // Both C modules are built there (the image has no compiler): a missing one fails the build, not the run.
    for (const m of ['letterbox', 'frame-channel']) expect(build.lines.some((l) => new RegExp(`^RUN\\s+node scripts/build\\.mjs\\b.*test -f dist/native/${m}\\.node`).test(l)), m).toBe(true);
  });

  it('no npm ci of the image runs onnxruntime-node\'s download of the CUDA provider: Node 20\'s npm 10 ignores package.json\'s allowScripts', () => {
    for (const st of stages) {
      for (const l of st.lines.filter((x) => /\bnpm ci\b/.test(x))) {
        const skipped = /--ignore-scripts(?!=false)\b/.test(l) || /\bONNXRUNTIME_NODE_INSTALL=skip\b/.test(l) || st.lines.some((x) => /^ENV\b.*\bONNXRUNTIME_NODE_INSTALL=skip\b/.test(x));
        expect(skipped, `${st.name}: ${l}`).toBe(true);
      }
    }
  });

  it("the final stage's npm ci runs no script: the prepare script said the letterbox and the CLI would run uncompiled (no compiler, no tsc there), though dist/ is the build stage's", () => {
    const final = stages[stages.length - 1];
    const ci = final.lines.filter((l) => /\bnpm ci\b/.test(l));
    expect(ci).toHaveLength(1);
    expect(ci[0]).toMatch(/--ignore-scripts(?!=)/);
    expect(ci[0]).toMatch(/--omit[= ]dev\b/);
    // Nothing of the prepare script's is copied for it, and no later step runs it (npm rebuild, npm run build).
    expect(final.lines.filter((l) => /scripts\/build\.mjs|\bnpm (?:rebuild|run build|install)\b/.test(l))).toEqual([]);
    // What the skipped dependency scripts would have done is in the packages themselves: the
    // lock file holds each platform package the runtime loads (sharp's, esbuild's for tsx).
    const lock = JSON.parse(readFileSync(resolve(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; optional?: boolean }> };
    for (const pkg of ['node_modules/@img/sharp-linux-x64', 'node_modules/@img/sharp-libvips-linux-x64', 'node_modules/onnxruntime-node', 'node_modules/@ffmpeg-installer/linux-x64']) {
      expect(lock.packages[pkg], pkg).toBeDefined();
      expect(lock.packages[pkg].dev, pkg).toBeFalsy();
    }
    expect(Object.keys(lock.packages).some((k) => /(?:^|\/)node_modules\/@esbuild\/linux-x64$/.test(k) && !lock.packages[k].dev)).toBe(true);
  });

  it('the image runs argus as a non-root user, who owns every folder argus writes (the cache, the state, each compose volume) before VOLUME', () => {
    const final = stages[stages.length - 1];
    const users = final.lines.filter((l) => /^USER\s/.test(l)).map((l) => l.split(/\s+/)[1]);
    expect(users.length, 'the final stage sets USER').toBeGreaterThan(0);
    const user = users[users.length - 1].split(':')[0];
    expect(['root', '0']).not.toContain(user);
    const volume = final.lines.findIndex((l) => /^VOLUME\b/.test(l));
    expect(volume).toBeGreaterThanOrEqual(0);
    // Made and chowned before VOLUME: an empty named volume starts with the image's folder (owner
    // and mode); a change after VOLUME is discarded.
    const owned = final.lines.slice(0, volume).filter((l) => /^RUN\b/.test(l) && new RegExp(`\\bchown\\s+(?:-R\\s+)?${user}(?::${user})?\\s`).test(l));
    const ownedPath = (path: string) => owned.some((l) => l.split(/\s+/).some((w) => path === w || path.startsWith(`${w}/`)) && /\bmkdir\s+-p\b/.test(l));
    const env = Object.fromEntries(final.lines.filter((l) => /^ENV\s/.test(l)).flatMap((l) => [...l.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])));
    const paths = new Set<string>([env.ARGUS_CACHE, env.ARGUS_STATE_DIR, ...JSON.parse(final.lines[volume].replace(/^VOLUME\s+/, ''))]);
    // Every named volume a service of this image mounts (a volume's first mount takes the image's folder).
    for (const svc of Object.values(compose.services) as { build?: string; volumes?: string[]; environment?: Record<string, string | null> }[]) {
      if (svc.build !== '.') continue;
      for (const v of svc.volumes ?? []) {
        const [name, at, mode] = v.split(':');
        if (name in compose.volumes && mode !== 'ro') paths.add(at);
      }
      for (const k of ['ARGUS_CACHE', 'ARGUS_STATE_DIR']) if (svc.environment?.[k]) paths.add(svc.environment[k]!);
    }
    expect(env.ARGUS_CACHE).toBeDefined();
    expect(env.ARGUS_STATE_DIR).toBeDefined();
    for (const path of paths) expect(ownedPath(path), `${path} is made and chowned to ${user} before VOLUME`).toBe(true);
  });

  it('every shipped pipeline writes only under the image\'s volumes (/app is root\'s): snapshots with ARGUS_SNAPSHOTS=ref, the outbox, the dead-letter file, any other output', async () => {
    const final = stages[stages.length - 1];
    const volumes: string[] = JSON.parse(final.lines.find((l) => /^VOLUME\b/.test(l))!.replace(/^VOLUME\s+/, ''));
    const workdir = final.lines.filter((l) => /^WORKDIR\s/.test(l)).map((l) => l.split(/\s+/)[1]).at(-1)!;
    const env = Object.fromEntries(final.lines.filter((l) => /^ENV\s/.test(l)).flatMap((l) => [...l.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])));
    const files = readdirSync(resolve(ROOT, 'pipelines')).filter((f) => f.endsWith('.yaml') && f !== 'cameras.yaml');
    expect(files).toEqual(expect.arrayContaining(['conveyor.yaml', 'demo.yaml', 'demo-kafka.yaml', 'safety-zone.yaml', 'worker.yaml']));
    const base = `${workdir}/pipelines`; // COPY pipelines ./pipelines
    const at = (p: string) => resolve(base, p);
    const unwritable: string[] = [];
    const refs: string[] = [];
    for (const f of files) {
      const cfg = await loadPipeline(resolve(ROOT, 'pipelines', f), { ...env, ARGUS_SNAPSHOTS: 'ref' });
      const writes: [string, string][] = [['outbox', outboxDir(cfg, base, env)]];
      if (cfg.alerts.snapshot.mode === 'ref') refs.push(f);
      if (cfg.alerts.snapshot.mode === 'ref') writes.push(['alerts.snapshot.dir', at(cfg.alerts.snapshot.dir)]);
      if (cfg.sinks.kafka) writes.push(['sinks.kafka.deadLetterPath', at(cfg.sinks.kafka.deadLetterPath ?? `${outboxDir(cfg, base, env)}/kafka-dead-letter.jsonl`)]);
      if (cfg.sinks.jsonl) writes.push(['sinks.jsonl.path', at(cfg.sinks.jsonl.path)]);
      if (cfg.sinks.annotate) writes.push(['sinks.annotate.path', at(cfg.sinks.annotate.path)]);
      if (cfg.model.trtEngineCacheDir) writes.push(['model.trtEngineCacheDir', at(cfg.model.trtEngineCacheDir)]);
      for (const [what, path] of writes) if (!volumes.some((v) => path.startsWith(`${v}/`))) unwritable.push(`${f}: ${what} ${path}`);
    }
    expect(unwritable).toEqual([]);
    expect(refs).toEqual(['conveyor.yaml', 'safety-zone.yaml']); // those that ARGUS_SNAPSHOTS makes write their snapshots
  });
});

type Service = { command: string[]; environment: Record<string, string | null>; volumes: string[]; ports?: string[]; profiles?: string[]; depends_on: Record<string, { condition: string }>; restart?: string };
const services = compose.services as Record<string, Service>;
const WORKERS = ['worker-1', 'worker-2', 'worker-3'];
const advertised = () => compose.services.kafka.environment.KAFKA_ADVERTISED_LISTENERS.replace('PLAINTEXT://', '');
/** A service's environment as its process sees it when the host sets none of the pass-through variables (`NAME:` with no value). */
const envOf = (svc: Service, host: Record<string, string> = {}): Record<string, string> =>
  Object.fromEntries(Object.entries(svc.environment).flatMap(([k, v]) => (v === null ? (k in host ? [[k, host[k]]] : []) : [[k, v]])));
/** The named volume mounted over `path` in a service, if any. */
const volumeAt = (svc: Service, path: string): string | undefined =>
  svc.volumes.map((v) => v.split(':')).find(([name, at]) => (path === at || path.startsWith(`${at}/`)) && name in compose.volumes)?.[0];

describe('docker-compose.yml, profile cluster: three argus workers and the cameras they share', () => {
  it('leaves the default profile as it was: kafka and pipeline have no profiles key, everything else is in the cluster profile', () => {
    expect(services.kafka.profiles).toBeUndefined();
    expect(services.pipeline.profiles).toBeUndefined();
    const byProfile = Object.entries(services).filter(([, s]) => s.profiles !== undefined);
    expect(byProfile.map(([n]) => n).sort()).toEqual(['assets', 'cameras', ...WORKERS].sort());
    for (const [, s] of byProfile) expect(s.profiles).toEqual(['cluster']);
  });

  it('runs each worker on pipelines/worker.yaml with its own id, against the kafka service, after the broker is healthy and the assets are fetched', async () => {
    const ids = new Set<string>();
    const hostPorts = new Set<string>();
    for (const name of WORKERS) {
      const w = services[name];
      expect(w.command).toEqual(['worker', 'pipelines/worker.yaml']);
      expect(w.depends_on.kafka.condition).toBe('service_healthy');
      expect(w.depends_on.assets.condition).toBe('service_completed_successfully');
      const cfg = await loadPipeline(resolve(ROOT, w.command[1]), envOf(w));
      expect(cfg.sources).toEqual([]);
      expect(cfg.cluster).toBeDefined();
      expect(cfg.cluster!.workerId).toBe(w.environment.ARGUS_WORKER_ID);
      ids.add(cfg.cluster!.workerId!);
      expect(clusterBrokers(cfg)).toEqual([advertised()]);
      expect(cfg.sinks.kafka!.brokers).toEqual([advertised()]);
      // Three workers on one host: each leaves cores to the others.
      expect(cfg.model.intraOpThreads).toBe(1);
      expect(cfg.server).toMatchObject({ host: '0.0.0.0', port: 8080 });
      expect(w.ports).toHaveLength(1);
      const [bind, host, inner] = w.ports![0].split(':');
      expect([bind, inner]).toEqual(['127.0.0.1', '8080']);
      hostPorts.add(host);
    }
    expect(ids.size).toBe(WORKERS.length);
    expect(hostPorts.size).toBe(WORKERS.length);
    expect(hostPorts.has(services.pipeline.ports![0].split(':')[1])).toBe(false);
  });

  it('keeps each worker\'s alert outbox in a directory of its own, on a named volume no other service mounts', async () => {
    const dirs = new Set<string>();
    const volumes = new Set<string>();
    for (const name of WORKERS) {
      const w = services[name];
      const env = envOf(w);
      const cfg = await loadPipeline(resolve(ROOT, 'pipelines/worker.yaml'), env);
      const dir = outboxDir(cfg, resolve(ROOT, 'pipelines'), env);
      expect(dir.startsWith(`${env.ARGUS_STATE_DIR}/`)).toBe(true);
      dirs.add(dir);
      const vol = volumeAt(w, dir);
      expect(vol).toBeDefined();
      for (const [other, s] of Object.entries(services)) if (other !== name) expect(s.volumes?.some((v) => v.split(':')[0] === vol) ?? false).toBe(false);
      volumes.add(vol!);
    }
    expect(dirs.size).toBe(WORKERS.length);
    expect(volumes.size).toBe(WORKERS.length);
  });

  it('fetches the model and videos once, into the cache volume the workers share (and the single pipeline does not use)', () => {
    const cache = /ARGUS_CACHE=(\S+)/.exec(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8'))![1];
    const a = services.assets;
    expect(a.command).toEqual(['assets']);
    const vol = volumeAt(a, cache);
    expect(vol).toBeDefined();
    for (const name of WORKERS) expect(volumeAt(services[name], cache)).toBe(vol);
    expect(volumeAt(services.pipeline, cache)).not.toBe(vol);
  });

  it('applies pipelines/cameras.yaml with the workers\' cluster section once the broker is healthy, as a one-shot', async () => {
    const c = services.cameras;
    expect(c.command.slice(0, 2)).toEqual(['cameras', 'apply']);
    const file = c.command[2];
    const config = c.command[c.command.indexOf('--config') + 1];
    expect(config).toBe(services['worker-1'].command[1]);
    expect(c.depends_on.kafka.condition).toBe('service_healthy');
    expect(c.restart ?? 'no').toBe('no');
    const cfg = await loadPipeline(resolve(ROOT, config), envOf(c));
    expect(clusterBrokers(cfg)).toEqual([advertised()]);
    const worker = await loadPipeline(resolve(ROOT, config), envOf(services['worker-1']));
    expect(cfg.cluster!.camerasTopic).toBe(worker.cluster!.camerasTopic);
    expect(cfg.cluster!.group).toBe(worker.cluster!.group);
    const cams = await readCamerasFile(resolve(ROOT, file));
    expect(cams.map((x) => x.id)).toEqual(['entrance', 'hallway', 'bottling-line', 'dock-door']);
  });

  it('gives every enabled camera a looped video that the assets service fetches; the RTSP placeholder resolves its password on the worker only', async () => {
    const cams = await readCamerasFile(resolve(ROOT, 'pipelines/cameras.yaml'));
    const streams = new Set((await loadCatalog()).streams.map((s) => s.file));
    const w = services['worker-2'];
    for (const cam of cams) {
      const { definition, error } = parseCamera(cam.id, cam.value, envOf(w, { ARGUS_CAMERA_DOCK_PASSWORD: 's3cret' }));
      expect(error).toBeUndefined();
      const src = definition!.source;
      if (!src.enabled) continue;
      expect(src.uri).toMatch(/^asset:/);
      expect(streams.has(src.uri.slice('asset:'.length))).toBe(true);
      expect(src.loop).toBe(true);
    }
    const dock = cams.find((c) => c.id === 'dock-door')!;
    // What goes into Kafka is the reference, not the password.
    expect(dock.value).toContain('${env:ARGUS_CAMERA_DOCK_PASSWORD}');
    expect(dock.value).not.toContain('s3cret');
    // The compose file passes the host's password through to each worker, which resolves it.
    for (const name of WORKERS) expect(services[name].environment).toHaveProperty('ARGUS_CAMERA_DOCK_PASSWORD', null);
    const onWorker = parseCamera(dock.id, dock.value, envOf(w, { ARGUS_CAMERA_DOCK_PASSWORD: 's3cret' }));
    expect(onWorker.definition!.source.uri).toBe('rtsp://viewer:s3cret@192.0.2.10:554/stream1');
    expect(onWorker.definition!.cost).toBe(2);
    // A worker whose host set no password names the variable instead of opening the camera.
    expect(parseCamera(dock.id, dock.value, envOf(w)).error).toMatch(/ARGUS_CAMERA_DOCK_PASSWORD/);
  });
});

describe('pipelines/worker.yaml and pipelines/cameras.yaml outside compose', () => {
  it('load and validate: a worker without sources against the loopback test broker; its id, capacity and host from the environment', async () => {
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/worker.yaml'), {});
    expect(cfg.sources).toEqual([]);
    expect(clusterBrokers(cfg)).toEqual(['127.0.0.1:19092']);
    expect(script).toContain('KAFKA_PORT:-19092');
    // Unset, the id is this machine's name: two machines started alike are not twins.
    expect(cfg.cluster).toMatchObject({ workerId: hostId(), group: 'argus-workers', camerasTopic: 'argus.cameras', ownersTopic: 'argus.owners', capacity: 1 });
    expect(cfg.server).toEqual(expect.objectContaining({ host: '127.0.0.1', port: 8080 }));
    const two = await loadPipeline(resolve(ROOT, 'pipelines/worker.yaml'), { ARGUS_WORKER_ID: 'gpu-box', ARGUS_WORKER_CAPACITY: '2.5' });
    expect(two.cluster).toMatchObject({ workerId: 'gpu-box', capacity: 2.5 });
    expect(two.name).toBe('worker-gpu-box');
    expect(cfg.name).toBe(`worker-${hostId()}`);
    expect(outboxDir(two, resolve(ROOT, 'pipelines'), { ARGUS_STATE_DIR: '/s' })).not.toBe(outboxDir(cfg, resolve(ROOT, 'pipelines'), { ARGUS_STATE_DIR: '/s' }));
  });

  it('validates every camera of cameras.yaml with the sources[] schema (zones and rules included) and its cost', async () => {
    const cams = await readCamerasFile(resolve(ROOT, 'pipelines/cameras.yaml'));
    const byId = new Map(cams.map((c) => [c.id, parseCamera(c.id, c.value, { ARGUS_CAMERA_DOCK_PASSWORD: 'x' }).definition!]));
    expect(byId.get('entrance')!.source.rules).toEqual([expect.objectContaining({ id: 'person-in-zone', type: 'zone-enter', zone: 'table-area' })]);
    expect(byId.get('entrance')!.source.zones.map((z) => z.id)).toEqual(['table-area']);
    expect(byId.get('bottling-line')!.source.fps).toBe(10);
    expect(byId.get('dock-door')!.source.enabled).toBe(false);
    expect([...byId.values()].map((d) => d.cost)).toEqual([1, 1, 1, 2]);
  });
});

describe('docker-compose.yml: the health of argus\'s services', () => {
  const run = promisify(execFile);
  /** Runs a service's healthcheck command here, against a server answering /healthz with `status`, as the container would. */
  const probe = async (test: string[], status: number): Promise<{ code: number; paths: string[] }> => {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(req.url === '/healthz' ? status : 404).end('{}');
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      expect(test[0]).toBe('CMD');
      const [cmd, ...args] = test.slice(1);
      const port = (server.address() as AddressInfo).port;
      const code = await run(cmd === 'node' ? process.execPath : cmd, args, { env: { ...process.env, ARGUS_HTTP_PORT: String(port) }, timeout: 20_000 }).then(() => 0, (e: { code?: number }) => e.code ?? -1);
      return { code, paths };
    } finally {
      server.close();
    }
  };

  it('the pipeline and each worker have a healthcheck: node fetches /healthz (the image has no curl), on the port argus serves', async () => {
    for (const name of ['pipeline', ...WORKERS]) {
      const hc = compose.services[name].healthcheck as { test: string[]; start_period: string; timeout: string };
      expect(hc, name).toBeDefined();
      expect(hc.test.slice(0, 2), name).toEqual(['CMD', 'node']);
      const script = hc.test[hc.test.length - 1];
      expect(script).toContain('/healthz');
      // Where ARGUS_HTTP_PORT is unset, the port of the service's config.
      const env = envOf(services[name]);
      const cfg = await loadPipeline(resolve(ROOT, name === 'pipeline' ? 'pipelines/demo-kafka.yaml' : 'pipelines/worker.yaml'), env);
      expect(script).toContain(`process.env.ARGUS_HTTP_PORT || ${cfg.server!.port}`);
      if (env.ARGUS_HTTP_PORT) expect(Number(env.ARGUS_HTTP_PORT)).toBe(cfg.server!.port);
      // The first start downloads the model and the video before the server listens.
      expect(Number(/^(\d+)s$/.exec(hc.start_period)?.[1])).toBeGreaterThanOrEqual(120);
    }
  });

  it('the healthcheck command passes on a 200 from /healthz and fails on a 503', async () => {
    const test = compose.services.pipeline.healthcheck.test as string[];
    const ok = await probe(test, 200);
    expect(ok).toEqual({ code: 0, paths: ['/healthz'] });
    const down = await probe(test, 503);
    expect(down.code).not.toBe(0);
  }, 30_000);
});

describe('.dockerignore', () => {
  /** Docker's matching: `**` any number of folders, `*` and `?` within one name; a path is excluded when it or a folder above it matches; `!` re-includes; the last match wins. */
  const patterns = readFileSync(resolve(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const glob = (negate ? l.slice(1) : l).replace(/^\/+/, '').replace(/\/+$/, '');
      const re = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*\*\//g, '\u0000').replace(/\*\*/g, '.*').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\u0000/g, '(?:.*/)?');
      return { negate, re: new RegExp(`^${re}$`) };
    });
  const excluded = (path: string): boolean => {
    const parts = path.split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let out = false;
    for (const p of patterns) if (prefixes.some((x) => p.re.test(x))) out = !p.negate;
    return out;
  };
  const files = (path: string): string[] => (statSync(resolve(ROOT, path)).isDirectory() ? readdirSync(resolve(ROOT, path)).flatMap((n) => files(`${path}/${n}`)) : [path]);

  it('leaves out the host\'s node_modules, dist, history, test results, notes and caches', () => {
    for (const p of ['node_modules/onnxruntime-node/package.json', 'dist/src/cli.js', 'dist/.built', '.git/HEAD', '.test-results/x.json', '.scratch/notes.md', '.cache/argus/models/x.onnx', '.env', 'out/lobby.jsonl'])
      expect(excluded(p), p).toBe(true);
  });

  it('leaves in everything the Dockerfile copies from the build context', () => {
    const sources = readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ').split('\n').map((l) => l.trim())
      .filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))
      .flatMap((l) => { const words = l.split(/\s+/).slice(1).filter((w) => !w.startsWith('--')); return words.slice(0, -1); });
    expect(sources).toEqual(expect.arrayContaining(['package.json', 'src', 'bin', 'models', 'pipelines', 'scripts/build.mjs']));
    for (const src of sources) {
      const path = relative(ROOT, resolve(ROOT, src.replace(/\/+$/, '')));
      expect(excluded(path), src).toBe(false);
      for (const f of files(path)) expect(excluded(f), f).toBe(false);
    }
  });
});
