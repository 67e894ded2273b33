import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Imports run one way: each folder of src/ is a layer, lowest first, following the data flow
 * (source → preprocess → infer → postprocess → track → analyze → sink); a module imports
 * only from its own layer or lower ones, and no import chain comes back to where it started.
 */
const LAYERS = ['core', 'flow', 'config', 'sources', 'assets', 'preprocess', 'models', 'inference', 'postprocess', 'tracking', 'analytics', 'annotate', 'sinks', 'server', 'pipeline', 'cluster', 'bench', 'tools', 'cli.ts', 'index.ts'];

const SRC = resolve(__dirname, '../src');

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sourceFiles(p, out);
    else if (/\.(ts|js)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Module → the src/ modules it imports (type-only imports included: they bind the layers too). */
function importGraph(): Map<string, string[]> {
  const files = sourceFiles(SRC);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps: string[] = [];
    for (const i of ts.preProcessFile(readFileSync(f, 'utf8'), true, true).importedFiles) {
      if (!i.fileName.startsWith('.')) continue;
      const target = resolve(dirname(f), i.fileName);
      const hit = [target, target.replace(/\.js$/, '.ts'), `${target}.ts`, target.replace(/\.js$/, '.d.ts')].find((c) => known.has(c) || c.endsWith('.d.ts'));
      const real = hit && known.has(hit) ? hit : hit?.replace(/\.d\.ts$/, '.js');
      if (real && known.has(real)) deps.push(real);
    }
    graph.set(f, deps);
  }
  return graph;
}

const layerOf = (file: string) => relative(SRC, file).split('/')[0];
const rel = (file: string) => relative(SRC, file);

describe('architecture', () => {
  const graph = importGraph();

  it('every folder and top-level file of src/ has a layer', () => {
    const layers = new Set([...graph.keys()].map(layerOf));
    expect([...layers].filter((l) => !LAYERS.includes(l))).toEqual([]);
  });

  it('no module imports from a higher layer', () => {
    const backwards: string[] = [];
    for (const [f, deps] of graph) {
      for (const d of deps) if (LAYERS.indexOf(layerOf(d)) > LAYERS.indexOf(layerOf(f))) backwards.push(`${rel(f)} → ${rel(d)}`);
    }
    expect(backwards).toEqual([]);
  });

  it('there is no import cycle', () => {
    // Tarjan's strongly connected components: any component of more than one module is a cycle.
    let index = 0;
    const idx = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    const visit = (v: string) => {
      idx.set(v, index);
      low.set(v, index++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!idx.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
      if (low.get(v) === idx.get(v)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(rel(w));
        } while (w !== v);
        if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.sort());
      }
    };
    for (const v of graph.keys()) if (!idx.has(v)) visit(v);
    expect(cycles).toEqual([]);
  });

  it('the checker sees real imports (a known edge exists)', () => {
    // Guards the tests above against a parser that finds nothing.
    expect(graph.get(join(SRC, 'pipeline/pipeline.ts'))?.map(rel)).toContain('pipeline/detect.ts');
  });
});

describe('paths from file URLs', () => {
  it('no program of the checkout takes a folder from a file URL\'s pathname (percent-encoded: a checkout path with a space or an accent was not found)', () => {
    // `new URL('..', import.meta.url).pathname` of /home/ana/my projects/argus is
    // /home/ana/my%20projects/argus: `npm run chaos`, `bench:sinks`, … looked for their files
    // there. fileURLToPath decodes it.
    const ROOT = resolve(__dirname, '..');
    const files = ['src', 'scripts', 'pipelines', 'bin', 'test'].flatMap((d) => sourceFiles(join(ROOT, d)));
    const found = files.filter((f) => /import\.meta\.url\)\.pathname/.test(readFileSync(f, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''))).map((f) => relative(ROOT, f));
    expect(files.length).toBeGreaterThan(100);
    expect(found).toEqual([]);
  });
});
