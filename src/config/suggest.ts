import type { ZodTypeAny } from 'zod';
import { CameraSchema, SourceSchema } from './schema.js';

/**
 * What an unknown key of a configuration probably meant: a field of the same object spelt
 * alike (`deinterlase` → `deinterlace`, `lostTrackBuferMs`, `modle`), else a field of an object
 * inside it (`deinterlace` written beside `decode` → `decode.deinterlace`), else a field of the
 * object around it (`fps` written into `decode`). Zod's own message named the key alone, and a
 * new user had to find the field's spelling and place in the README. A field of each item of a
 * list beside it (`rules` at the top level: `sources[0].rules`) is said so.
 */

type Path = readonly (string | number)[];
type Shape = Record<string, ZodTypeAny>;

/** The shapes of the objects a document may hold at `path` under `schema` (through defaults, effects, lists, unions, records). */
function shapesAt(schema: ZodTypeAny, path: Path, out: Shape[] = [], depth = 0): Shape[] {
  // The schemas are not recursive; a bound all the same (a lazy one would be).
  if (depth > 32) return out;
  const def = schema._def as Record<string, unknown> & { typeName?: string };
  const next = (s: unknown, p: Path) => s && shapesAt(s as ZodTypeAny, p, out, depth + 1);
  const [head, ...rest] = path;
  switch (def.typeName) {
    case 'ZodObject': {
      const shape = (def.shape as () => Shape)();
      if (path.length === 0) out.push(shape);
      else if (typeof head === 'string' && Object.hasOwn(shape, head)) next(shape[head], rest);
      break;
    }
    case 'ZodEffects':
      next(def.schema, path);
      break;
    case 'ZodDefault':
    case 'ZodOptional':
    case 'ZodNullable':
    case 'ZodCatch':
    case 'ZodReadonly':
      next(def.innerType, path);
      break;
    case 'ZodBranded':
      next(def.type, path);
      break;
    case 'ZodPipeline':
      next(def.in, path);
      next(def.out, path);
      break;
    case 'ZodArray':
      if (typeof head === 'number') next(def.type, rest);
      break;
    case 'ZodTuple':
      if (typeof head === 'number') next((def.items as ZodTypeAny[])[head], rest);
      break;
    case 'ZodRecord':
      if (path.length > 0) next(def.valueType, rest);
      break;
    case 'ZodUnion':
    case 'ZodDiscriminatedUnion':
      for (const o of def.options as ZodTypeAny[]) next(o, path);
      break;
    case 'ZodIntersection':
      next(def.left, path);
      next(def.right, path);
      break;
    case 'ZodLazy':
      next((def.getter as () => ZodTypeAny)(), path);
      break;
  }
  // A cluster camera is a source's fields and its own (cost, placement), read by a transform.
  if (schema === CameraSchema) next(SourceSchema, path);
  return out;
}

/** The fields a document may have at `path` under `schema`. */
export function fieldsAt(schema: ZodTypeAny, path: Path): Set<string> {
  return new Set(shapesAt(schema, path).flatMap((s) => Object.keys(s)));
}

/** Case, `_` and `-` aside. */
const plain = (s: string) => s.toLowerCase().replace(/[_-]/g, '');

/** Edits between two words: insertions, deletions, substitutions and swaps of neighbours (optimal string alignment). */
function distance(a: string, b: string): number {
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      row.push(d);
    }
    prev2 = prev;
    prev = row;
  }
  return prev[b.length];
}

/** The field `key` is likely a misspelling of: the same but for case, `_` and `-`, the field without its unit, or a few edits away (a third of its length, at most 3). */
function closest(key: string, fields: Iterable<string>): string | undefined {
  const k = plain(key);
  const most = Math.min(3, Math.max(1, Math.floor(k.length / 3)));
  let best: string | undefined;
  let bestD = Infinity;
  for (const f of fields) {
    if (f === key) continue;
    // A field's name without its unit (`cooldown` for cooldownSec, `exitDelay` for exitDelayMs).
    const unitless = k.length >= 4 && plain(f).startsWith(k) && plain(f).length - k.length <= 5;
    const d = plain(f) === k ? 0 : unitless ? 1 : distance(k, plain(f));
    if (d <= most && d < bestD) (best = f), (bestD = d);
  }
  return best;
}

/** The same field (case, `_` and `-` aside) among `fields`. */
const same = (key: string, fields: Iterable<string>) => [...fields].find((f) => plain(f) === plain(key));

/**
 * A hint for an unknown key `key` of the object at `path` (without parentheses), or undefined:
 * `did you mean 'deinterlace'?`, `did you mean decode.deinterlace?`, `fps is a field of
 * sources[0], not of sources[0].decode`, or, for docker-compose's `x-…`, where an anchor goes.
 * Only for keys that have a field name's shape (the caller checks: others are not repeated).
 */
export function unknownKeyHint(schema: ZodTypeAny, path: Path, key: string, pathText: (p: Path) => string): string | undefined {
  // docker-compose's place for shared settings (`x-defaults: &cam {…}`) has no match here.
  if (/^x-/i.test(key)) return 'argus takes no extension keys: put the anchor on a source (`- &cam {…}`) and merge it into the others (`<<: *cam`)';
  const here = fieldsAt(schema, path);
  const near = closest(key, here);
  if (near) return `did you mean '${near}'?`;
  for (const f of here) {
    const inner = same(key, fieldsAt(schema, [...path, f]));
    if (inner) return `did you mean ${f}.${inner}?`;
  }
  // A field of each item of a list beside it: `zones`, `rules` or `uri` written at the top level
  // (a first pipeline's likeliest slip) belong in each source. It said nothing.
  for (const f of here) {
    const inner = same(key, fieldsAt(schema, [...path, f, 0]));
    if (inner) return `${inner} is a field of each item of ${pathText([...path, f])}: ${pathText([...path, f, 0])}.${inner}, …`;
  }
  if (path.length > 0) {
    // The object around this one (a list's item: the list's owner).
    const up = typeof path[path.length - 1] === 'number' ? path.slice(0, -2) : path.slice(0, -1);
    const outer = same(key, fieldsAt(schema, up));
    if (outer) return `${outer} is a field of ${pathText(up) || 'the top level'}, not of ${pathText(path)}`;
  }
  return undefined;
}
