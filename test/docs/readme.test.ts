/**
 * README.md, read as a new user reads it: every error code, environment variable, metric, HTTP
 * route, CLI flag and YAML example it shows exists as shown, and every one the code has is in it.
 * A name the README gives that the code lacks sends a user looking for a thing that is not there;
 * one the code has that the README never names is a feature, or a failure, nobody can look up.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import client, { Registry } from 'prom-client';
import { parse } from 'yaml';
import type { ZodTypeAny } from 'zod';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { parseConfigText } from '../../src/config/load.js';
import { CamerasFileSchema, ModelManifestSchema, PipelineSchema } from '../../src/config/schema.js';
import { Metrics, type MetricsSources } from '../../src/server/metrics.js';
import { ARGUS, ROOT } from '../helpers/cli.js';
import { messageErrors } from '../helpers/schema.js';

const README = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
const LINE_STARTS = [0, ...[...README.matchAll(/\n/g)].map((m) => m.index! + 1)];
/** The 1-based line of a character index of README (a binary search of the lines' starts). */
function lineOf(index: number): number {
  let lo = 0;
  let hi = LINE_STARTS.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (LINE_STARTS[mid] <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/** The README's fenced blocks: language, text, and the line of their first line. */
const FENCED = [...README.matchAll(/^```([a-z]*)\n([\s\S]*?)^```/gm)].map((m) => ({ lang: m[1], text: m[2], line: lineOf(m.index!) + 1 }));
/** The prose (fenced blocks blanked, lines kept) and its `code` spans. */
const PROSE = README.replace(/^```[a-z]*\n[\s\S]*?^```/gm, (s) => s.replace(/[^\n]/g, ' '));
const SPANS = [...PROSE.matchAll(/`([^`\n]+)`/g)].map((m) => ({ text: m[1], line: lineOf(m.index!) }));

/** Every file under `dir` (relative to the root) whose name ends with one of `exts`. */
function files(dir: string, exts: string[]): string[] {
  return readdirSync(resolve(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile() && exts.some((e) => f.name.endsWith(e)))
    .map((f) => join(f.parentPath ?? f.path, f.name));
}
const read = (f: string) => readFileSync(f, 'utf8');
/** Source text without its comments (a name given as an example in a comment is not one the code reads). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
const SRC_TS = files('src', ['.ts']);

describe('README: error codes', () => {
  const named = new Set(README.match(/\bVAP_ERR_[A-Z0-9_]*[A-Z0-9]\b/g));
  const defined = new Set<string>(Object.values(ErrorCodes));

  it('every VAP_ERR_… code the README names is one argus raises', () => {
    expect([...named].filter((c) => !defined.has(c))).toEqual([]);
  });

  it('the table under "Error codes" lists every code of ErrorCodes, once each, so that a user who reads one in a log can look it up', () => {
    const at = README.indexOf('\n### Error codes\n');
    expect(at, 'README: a section "Error codes"').toBeGreaterThan(0);
    const table = README.slice(at).split('\n').slice(2).join('\n').replace(/\n\n(?!\|)[\s\S]*$/, '');
    const rows = [...table.matchAll(/^\| `(VAP_ERR_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(rows.length).toBe(new Set(rows).size);
    expect(rows.sort()).toEqual([...defined].sort());
  });
});

describe('README: environment variables', () => {
  // Names a user picks for `${env:NAME}` in a YAML are the user's, not argus's.
  const chosen = new Set([...README.matchAll(/\$\{env:([A-Z0-9_]+)/g)].map((m) => m[1]));
  const named = new Set([...README.matchAll(/\bARGUS_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]));
  // What argus itself reads: src/ and its entry, bin/ (the scripts' own knobs are in their --help).
  const readByArgus = new Set([...SRC_TS, ...files('bin', ['.js'])].flatMap((f) => code(read(f)).match(/\bARGUS_[A-Z0-9_]*[A-Z0-9]\b/g) ?? []));
  const anywhere = [...SRC_TS, ...files('bin', ['.js']), ...files('scripts', ['.sh', '.mjs', '.ts']), ...files('test', ['.ts']), ...files('pipelines', ['.yaml']), resolve(ROOT, 'docker-compose.yml'), resolve(ROOT, 'Dockerfile'), resolve(ROOT, 'package.json')]
    .map(read)
    .join('\n');

  it('every ARGUS_… variable the README names is read by argus, its scripts, its tests or a shipped pipeline (or is a ${env:…} name of an example)', () => {
    expect([...named].filter((v) => !chosen.has(v) && !new RegExp(`\\b${v}\\b`).test(anywhere))).toEqual([]);
  });

  it('every variable a shipped pipeline reads (pipelines/*.yaml) is a row of README\'s table of them', () => {
    const rows = README.split('\n').filter((l) => /^\| `[A-Z0-9_]+`/.test(l)).join('\n');
    const read = files('pipelines', ['.yaml']).flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/\$\{env:([A-Z0-9_]+)/g)].map((m) => m[1]));
    expect(read.length).toBeGreaterThan(10);
    expect([...new Set(read)].filter((v) => !rows.includes(`\`${v}\``))).toEqual([]);
  });

  it('every ARGUS_… variable argus reads (src/, bin/) is named in the README', () => {
    expect([...readByArgus].filter((v) => !named.has(v))).toEqual([]);
  });
});

describe('README: metrics', () => {
  // Every optional part present, so that every metric argus can register is registered; only
  // registered (getMetricsAsArray does not collect: the stubs are never read).
  const stub = {} as never;
  const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka: { stats: {} } as never, websocket: stub, outbox: stub, alertsByRule: () => new Map(), jsonl: { behind: new Map() }, annotate: { stats: [] }, http: { stats: { requestsLimited: 0 } }, cluster: stub } satisfies MetricsSources);
  const registered = new Set(metrics.registry.getMetricsAsArray().map((m) => m.name));
  const defaults = new Registry();
  client.collectDefaultMetrics({ register: defaults, prefix: 'argus_' });
  const processMetrics = new Set(defaults.getMetricsAsArray().map((m) => m.name));
  // A name followed by `<` is a pattern (the session cookie argus_session_<port>), not a metric.
  const named = new Set([...README.matchAll(/\bargus_[a-z0-9_]+(?![a-z0-9_<])/g)].map((m) => m[0]).filter((n) => !n.endsWith('_')));

  it('sees every metric (the stubs registered the optional parts)', () => {
    expect(registered.size).toBeGreaterThan(processMetrics.size + 30);
  });

  it('every argus_… metric the README names is one /metrics can show (a histogram\'s _bucket, _sum, _count included)', () => {
    expect([...named].filter((n) => !registered.has(n) && !registered.has(n.replace(/_(bucket|sum|count)$/, '')))).toEqual([]);
  });

  it('every metric of argus\'s own (not prom-client\'s process metrics) is named in the README', () => {
    expect([...registered].filter((n) => !processMetrics.has(n) && !named.has(n))).toEqual([]);
  });

  it('the README gives each of argus\'s metrics its type and every label it has (a table row, or NAME{label,…})', () => {
    const rows = README.split('\n').filter((l) => l.startsWith('| `argus_'));
    const wrong: string[] = [];
    for (const m of metrics.registry.getMetricsAsArray() as unknown as { name: string; labelNames?: string[]; constructor: { name: string } }[]) {
      if (processMetrics.has(m.name)) continue;
      const labels = m.labelNames ?? [];
      const type = m.constructor.name.toLowerCase();
      const row = rows.find((l) => l.split(' | ')[0].includes(`\`${m.name}\``));
      if (row) {
        const [, rowType = '', rowLabels = ''] = row.split(' | ');
        if (!rowType.startsWith(type)) wrong.push(`${m.name}: a ${type}, README's row says ${rowType}`);
        for (const l of labels) if (!new RegExp(`(^|[\\s,(])${l}\\b`).test(rowLabels)) wrong.push(`${m.name}: label ${l} not in README's row`);
      } else if (labels.length) {
        const shown = [...README.matchAll(new RegExp(`\\b${m.name}\\{([^}]*)\\}`, 'g'))].map((x) => x[1].split(',').map((l) => l.replace(/=.*$/, '')));
        if (!shown.some((ls) => labels.every((l) => ls.includes(l)))) wrong.push(`${m.name}: README shows no ${m.name}{${labels.join(',')}}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('README: HTTP routes', () => {
  const routes = SRC_TS.flatMap((f) => [...code(read(f)).matchAll(/\.route\(\s*['`](\/[^'`$]*)['`]/g)].map((m) => m[1]));
  const upgrades = SRC_TS.flatMap((f) => [...code(read(f)).matchAll(/upgrades: hub \? \{ '(\/[^']*)'/g)].map((m) => m[1]));
  // The dashboard's own files are served under / and are its business.
  const api = [...routes.filter((r) => !['/', '/index.html', '/app.js', '/style.css'].includes(r)), ...upgrades];

  it('finds the routes it checks', () => {
    expect(api).toEqual(expect.arrayContaining(['/metrics', '/healthz', '/readyz', '/ws']));
  });

  it('every route of the server is named in the README', () => {
    expect(api.filter((r) => !README.includes(`\`${r}`))).toEqual([]);
  });

  it('every /api/… route the README names is served', () => {
    const named = new Set([...README.matchAll(/`(\/api\/[a-z0-9/-]*[a-z0-9])/g)].map((m) => m[1]));
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((r) => !api.includes(r))).toEqual([]);
  });
});

describe('README: the command line', () => {
  const helpOf = new Map<string, Promise<string[]>>();
  /** The options `argus PATH --help` lists (its option lines, not the words of its descriptions). */
  const options = (path: string[]) => {
    const key = path.join(' ');
    if (!helpOf.has(key)) {
      helpOf.set(
        key,
        promisify(execFile)(process.execPath, [ARGUS, ...path, '--help'], { cwd: ROOT, encoding: 'utf8' }).then(({ stdout }) =>
          [...stdout.matchAll(/^ {2}(?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]),
        ),
      );
    }
    return helpOf.get(key)!;
  };
  const COMMANDS: Record<string, string[]> = { run: [], worker: [], bench: [], consume: [], detect: [], preview: [], check: [], assets: [], cameras: ['apply', 'add', 'rm', 'ls'], cluster: ['status', 'drain'], models: ['inspect'] };
  const commandList = () => Object.entries(COMMANDS).flatMap(([c, subs]) => (subs.length ? subs.map((s) => [c, s]) : [[c]]));

  /** Each `argus COMMAND [SUB] …--flag…` the README shows, in a fenced block's line or a code span. */
  const uses = [...FENCED.flatMap((b) => b.text.split('\n').map((l, i) => ({ text: l.replace(/\s#\s.*$/, ''), line: b.line + i }))), ...SPANS].flatMap((s) =>
    [...s.text.matchAll(/(?:^|[\s(])argus(?:\.js)?\s+([a-z]+)(?:\s+([a-z]+))?([^|;&]*)/g)]
      .filter((m) => m[1] in COMMANDS)
      .map((m) => {
        const subs = COMMANDS[m[1]];
        const sub = m[2] !== undefined && subs.includes(m[2]) ? m[2] : undefined;
        const rest = (sub === undefined && m[2] !== undefined ? m[2] : '') + m[3];
        return { line: s.line, path: sub ? [m[1], sub] : [m[1]], flags: [...rest.matchAll(/(?:^|\s)(--[a-z][a-z0-9-]*)/g)].map((f) => f[1]) };
      }),
  );

  it('finds the commands it checks in the README', () => {
    expect(uses.filter((u) => u.flags.length).length).toBeGreaterThan(20);
  });

  it('every flag the README gives a command is one of its options', async () => {
    const wrong: string[] = [];
    for (const u of uses) {
      // `argus cameras --config …`: the flags every subcommand of the group has.
      const known = COMMANDS[u.path[0]].length && u.path.length === 1 ? (await Promise.all(COMMANDS[u.path[0]].map((s) => options([u.path[0], s])))).reduce((a, b) => a.filter((f) => b.includes(f))) : await options(u.path);
      for (const f of u.flags) if (!known.includes(f)) wrong.push(`README.md:${u.line}: argus ${u.path.join(' ')} ${f}`);
    }
    expect(wrong).toEqual([]);
  }, 240_000);

  it('every command and every option of each is named in the README', async () => {
    const missing: string[] = [];
    for (const path of commandList()) {
      if (!README.includes(`argus ${path.join(' ')}`)) missing.push(`argus ${path.join(' ')}`);
      for (const f of await options(path)) if (f !== '--help' && !new RegExp(`${f}(?![a-z0-9-])`).test(README)) missing.push(`argus ${path.join(' ')} ${f}`);
    }
    expect(missing).toEqual([]);
  }, 240_000);

  it('the commands the README knows are the commands argus has', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [ARGUS, '--help'], { cwd: ROOT, encoding: 'utf8' });
    const listed = [...stdout.replace(/^[\s\S]*?\nCommands:\n/, '').matchAll(/^ {2}([a-z]+)/gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(listed.sort()).toEqual(Object.keys(COMMANDS).sort());
  }, 60_000);
});

describe('README: YAML examples', () => {
  const yaml = FENCED.filter((b) => b.lang === 'yaml');
  // A fragment of a source (indented, as cut out of sources: [...]) is put back under one.
  const asDocument = (text: string) => {
    if (!/^\s/.test(text)) return parse(text) as Record<string, unknown>;
    const indent = /^ */.exec(text)![0].length;
    return parse(`sources:\n  - id: cam\n${text.split('\n').map((l) => `    ${l.slice(indent)}`).join('\n')}`) as Record<string, unknown>;
  };

  it('finds them', () => {
    expect(yaml.length).toBeGreaterThan(10);
  });

  it.each(yaml.map((b) => [b.line, b.text] as const))('the example at README.md:%i is a valid part of a pipeline', (line, text) => {
    const doc = asDocument(text);
    // Each example is a part of a pipeline: given a source where it has none, and the Kafka sink
    // the outbox and a worker's cluster section need (README says a pipeline without one is
    // refused); a worker's pipeline has no sources.
    const full: Record<string, unknown> = { name: 'readme', ...('cluster' in doc ? {} : { sources: [{ id: 'lobby', uri: 'asset:one-by-one-person-detection.mp4' }] }), ...doc };
    if (('outbox' in doc || 'cluster' in doc) && !('sinks' in doc)) full.sinks = { kafka: { brokers: ['127.0.0.1:9092'] } };
    // The fingerprint shown elided (5E:3A:…:9C) is one of 32 bytes.
    const json = JSON.stringify(full).replace(/"5E:3A:…:9C"/g, JSON.stringify(Array.from({ length: 32 }, (_, i) => (i + 16).toString(16).toUpperCase()).join(':')));
    expect(() => parseConfigText(json, PipelineSchema, `README.md:${line}`, { KAFKA_PASSWORD: 'secret', ARGUS_TOKEN: 'token', CAM_PW: 'pw' })).not.toThrow();
  });
});

describe('README: configuration keys', () => {
  /** Every key of an object anywhere in `schema`, with its path. */
  function keys(schema: ZodTypeAny, at: string, out = new Map<string, string>(), seen = new Set<ZodTypeAny>()): Map<string, string> {
    if (seen.has(schema)) return out;
    seen.add(schema);
    const d = schema._def as Record<string, unknown> & { typeName: string };
    const walk = (s: unknown, path: string) => keys(s as ZodTypeAny, path, out, seen);
    switch (d.typeName) {
      case 'ZodObject':
        for (const [k, v] of Object.entries((d.shape as () => Record<string, ZodTypeAny>)())) {
          out.set(`${at}${at ? '.' : ''}${k}`, k);
          walk(v, `${at}${at ? '.' : ''}${k}`);
        }
        break;
      case 'ZodOptional': case 'ZodNullable': case 'ZodDefault': case 'ZodReadonly': case 'ZodCatch':
        walk(d.innerType, at);
        break;
      case 'ZodEffects': walk(d.schema, at); break;
      case 'ZodLazy': walk((d.getter as () => unknown)(), at); break;
      case 'ZodPipeline': walk(d.in, at); walk(d.out, at); break;
      case 'ZodArray': walk(d.type, `${at}[]`); break;
      case 'ZodRecord': walk(d.valueType, `${at}.*`); break;
      case 'ZodUnion': case 'ZodDiscriminatedUnion':
        for (const o of d.options instanceof Map ? [...d.options.values()] : (d.options as unknown[])) walk(o, at);
        break;
      case 'ZodIntersection': walk(d.left, at); walk(d.right, at); break;
      case 'ZodTuple': for (const i of d.items as unknown[]) walk(i, `${at}[]`); break;
    }
    return out;
  }
  const all = new Map([...keys(PipelineSchema, ''), ...keys(ModelManifestSchema, '(manifest)'), ...keys(CamerasFileSchema, '(cameras file)')]);

  it('finds the keys', () => {
    expect(all.size).toBeGreaterThan(200);
    expect(all.get('sinks.kafka.brokers')).toBe('brokers');
  });

  it('every key a pipeline, a model manifest or a cameras file takes is named in the README', () => {
    expect([...all].filter(([, k]) => !new RegExp(`(?<![A-Za-z0-9_])${k}(?![A-Za-z0-9_])`).test(README)).map(([path]) => path)).toEqual([]);
  });
});

describe('README: files and npm scripts', () => {
  it('every file of the repository the README names is there (src/…/x.js: the .ts it is compiled from)', () => {
    const named = new Set(README.match(/\b(?:src|test|scripts|pipelines|models|streams|bin)\/[A-Za-z0-9_./-]+\.(?:ts|js|mjs|sh|yaml|yml|json|c|py)\b/g));
    expect(named.size).toBeGreaterThan(20);
    const exists = (f: string) => {
      try {
        return readdirSync(resolve(ROOT, f, '..')).includes(f.split('/').pop()!);
      } catch {
        return false;
      }
    };
    expect([...named].filter((f) => !exists(f) && !(f.startsWith('src/') && exists(f.replace(/\.js$/, '.ts'))))).toEqual([]);
  });

  it('every `npm run NAME` the README shows is a script of package.json, and every script but the lifecycle ones is shown', () => {
    const scripts = Object.keys((JSON.parse(read(resolve(ROOT, 'package.json'))) as { scripts: Record<string, string> }).scripts);
    const shown = new Set([...README.matchAll(/\bnpm run ([a-z][a-z0-9:-]*[a-z0-9])/g)].map((m) => m[1]));
    expect([...shown].filter((s) => !scripts.includes(s))).toEqual([]);
    // `npm test` and `npm run demo` are the README's first lines; prepare runs at npm ci; bench is argus bench.
    const lifecycle = ['prepare', 'test', 'bench'];
    expect(scripts.filter((s) => !lifecycle.includes(s) && !shown.has(s))).toEqual([]);
  });
});

describe('README: message examples', () => {
  const messages = FENCED.filter((b) => b.lang === 'json' && b.text.startsWith('{"type":'));

  it('finds them', () => {
    expect(messages.map((b) => (JSON.parse(b.text) as { type: string }).type).sort()).toEqual(['detections', 'status']);
  });

  it.each(messages.map((b) => [b.line, b.text] as const))('the message at README.md:%i is valid under the message schema', (_line, text) => {
    expect(messageErrors(JSON.parse(text))).toBe('');
  });
});

describe('README: the sections argus\'s own messages point to', () => {
  // Headings, and the bold titles that open a paragraph (**Inference threads.**).
  const titles = [...README.matchAll(/^#+ (.+)$/gm), ...README.matchAll(/^\*\*([^*]+?)\.?\*\*/gm)].map((m) => m[1].trim());

  it('every (README, "SECTION") an error or a help text of argus names is a section README has', () => {
    const refs = SRC_TS.flatMap((f) =>
      read(f)
        .split('\n')
        .filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l))
        .flatMap((l) => [...l.matchAll(/README, "([^"]+)"/g)].map((m) => ({ file: f.slice(ROOT.length + 1), section: m[1] }))),
    );
    expect(refs.length).toBeGreaterThan(3);
    expect(refs.filter((r) => !titles.some((t) => t.startsWith(r.section))).map((r) => `${r.file}: README, "${r.section}"`)).toEqual([]);
  });
});

describe('README: its references to itself', () => {
  const headings = [...README.matchAll(/^#+ (.+)$/gm)].map((m) => m[1].trim());
  const titles = [...headings, ...[...README.matchAll(/\*\*([^*]+?)\.?\*\*/g)].map((m) => m[1].trim())].map((t) => t.toLowerCase());
  // GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces as -.
  const anchors = new Set(headings.map((h) => h.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')));

  it('every [link](#anchor) goes to a heading', () => {
    const links = [...README.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    expect(links.filter((l) => !anchors.has(l))).toEqual([]);
  });

  it('every see "SECTION" (or *SECTION*) names a heading or a paragraph\'s bold title', () => {
    const refs = [...README.matchAll(/see (?:also )?(?:the )?["*]([^"*\n]{3,60})["*]/g)].map((m) => m[1].replace(/[.,]$/, '').toLowerCase());
    expect(refs.length).toBeGreaterThan(5);
    expect(refs.filter((r) => !titles.some((t) => t.startsWith(r) || t.includes(r)))).toEqual([]);
  });
});

describe('README: Layout', () => {
  it('lists every folder of src/, and only those', () => {
    const at = README.indexOf('\n## Layout\n');
    expect(at).toBeGreaterThan(0);
    const block = /```\n([\s\S]*?)```/.exec(README.slice(at))![1];
    const listed = [...block.matchAll(/^ {2}([a-z_-]+)\//gm)].map((m) => m[1]).sort();
    const folders = readdirSync(resolve(ROOT, 'src'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();
    expect(listed).toEqual(folders);
  });
});

describe('README: the WebSocket API\'s error codes', () => {
  it('the codes of the hub\'s error messages are the ones README\'s table lists', () => {
    const sent = new Set([...read(resolve(ROOT, 'src/sinks/websocket.ts')).matchAll(/this\.error\(\s*\w+,\s*'([a-z_]+)'/g)].map((m) => m[1]));
    const row = /\{"type":"error","code":((?:"[a-z_]+"\|?)+)/.exec(README);
    expect(row, 'README: the error message of the WebSocket API').not.toBeNull();
    const listed = new Set([...row![1].matchAll(/"([a-z_]+)"/g)].map((m) => m[1]));
    expect(sent.size).toBeGreaterThan(2);
    expect([...listed].sort()).toEqual([...sent].sort());
  });
});
