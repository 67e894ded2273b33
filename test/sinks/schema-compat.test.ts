/**
 * The message schema's compatibility rule (README, "Message schema": revisions): within version 1
 * a revision only adds (fields, enum values), each revision is dated (SCHEMA_REVISION) and kept
 * (test/schema/message.v1.<revision>.json), and README names what each added, which a strict
 * consumer's copy of an earlier revision refuses. Before, the schema changed under one `$id`
 * with nothing to say so: a consumer validating with its copy refused the new
 * `snapshotOmitted.reason` "unknown" (and every message once `run` came) and could not tell why.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { messageJsonSchema, MESSAGE_VERSION, SCHEMA_REVISION } from '../../src/sinks/message.js';

const ROOT = resolve(__dirname, '../..');
const DIR = resolve(ROOT, 'test/schema');
type S = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A revision's name: the day (YYYY-MM-DD), and `.N` for the Nth of a day whose first was published already. */
const REVISION = /\d{4}-\d{2}-\d{2}(?:\.[2-9]|\.[1-9]\d+)?/;
/** Oldest first: by day, then by N (the day's first has none). */
const byRevision = (a: string, b: string): number => {
  const [da, na = '1'] = a.split('.');
  const [db, nb = '1'] = b.split('.');
  return da < db ? -1 : da > db ? 1 : Number(na) - Number(nb);
};

/** The kept revisions of this version, oldest first. */
function revisions(): string[] {
  const re = new RegExp(`^message\\.v${MESSAGE_VERSION}\\.(${REVISION.source})\\.json$`);
  return readdirSync(DIR).map((f) => re.exec(f)?.[1]).filter((r): r is string => r !== undefined).sort(byRevision);
}
const kept = (rev: string): S => JSON.parse(readFileSync(resolve(DIR, `message.v${MESSAGE_VERSION}.${rev}.json`), 'utf8')) as S;

/** Keywords whose value maps names (of fields, of definitions) to schemas: every name is kept. */
const NAMED = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);

/**
 * A schema without its words (descriptions, comments, title): what it accepts, only. A field
 * named `title` or `description` is a field, kept: dropped as a word, it could be added, removed
 * or retyped without the revision check seeing it.
 */
function accepts(s: unknown, names = false): unknown {
  if (Array.isArray(s)) return s.map((x) => accepts(x));
  if (!s || typeof s !== 'object') return s;
  if (names) return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, accepts(v)]));
  return Object.fromEntries(Object.entries(s).filter(([k]) => k !== 'description' && k !== '$comment' && k !== 'title').map(([k, v]) => [k, accepts(v, NAMED.has(k))]));
}

/**
 * What a combinator's branch is, to find it again in another revision: the message kind it is
 * for (its `type` property's const), its own const or $ref; else its position (`#i`). A branch
 * matched by position shifted when a kind was put before it: each branch of the envelope's anyOf
 * is a kind, and a kind added was "anyOf changed" (a revision could not add one).
 */
function branchKey(b: unknown, i: number): string {
  const s = (b && typeof b === 'object' ? b : {}) as S;
  const kind = s.properties?.type?.const ?? s.const ?? s.$ref;
  return typeof kind === 'string' ? kind : `#${i}`;
}
function branchesByKey(list: readonly unknown[]): Map<string, { schema: S; at: number }> {
  return new Map(list.map((b, i) => [branchKey(b, i), { schema: b as S, at: i }]));
}

/**
 * Where `cur` refuses what `old` accepts, as `path: what` (empty: every message valid under `old`
 * is valid under `cur`, as far as these keywords go: properties, required, enum, const, type,
 * bounds, the schemas of items, values and names, and the combinators' branches (by kind:
 * branchKey; a kind added to anyOf or oneOf is an addition, one gone a narrowing); any
 * change to a keyword that is not walked counts). narrowings(new, old): what a copy of `old`
 * refuses of the messages `new` allows. A keyword `old` lacks is what it accepts without it: an
 * enum, an items' or values' schema given where there was none narrows (the first walk missed
 * them: a free `source` given an enum passed as a revision).
 */
export function narrowings(old: S | boolean, cur: S | boolean, path = '#'): string[] {
  const out: string[] = [];
  if (cur === false) return old === false ? out : [`${path}: refuses every value`];
  if (old === true || old === undefined) old = {};
  if (cur === true) cur = {};
  if (!old || typeof old !== 'object' || !cur || typeof cur !== 'object') return out;
  for (const k of ['type', 'const', '$ref', 'format', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minItems', 'maxItems', 'minLength', 'maxLength', 'multipleOf', 'uniqueItems', 'minProperties', 'maxProperties', 'propertyNames', 'patternProperties', 'dependentRequired', 'dependentSchemas', 'not', 'if', 'then', 'else', 'contains', 'minContains', 'maxContains', 'unevaluatedProperties', 'unevaluatedItems'] as const) {
    if (k in cur && JSON.stringify(old[k]) !== JSON.stringify(cur[k])) out.push(`${path}: ${k} ${JSON.stringify(old[k])} -> ${JSON.stringify(cur[k])}`);
  }
  if (cur.additionalProperties === false && old.additionalProperties !== false) out.push(`${path}: closed to other properties`);
  if (Array.isArray(cur.enum) && !Array.isArray(old.enum)) out.push(`${path}: enum added`);
  if (Array.isArray(cur.enum)) for (const v of old.enum ?? []) if (!cur.enum.includes(v)) out.push(`${path}: value ${JSON.stringify(v)}`);
  for (const r of cur.required ?? []) if (!(old.required ?? []).includes(r)) out.push(`${path}: required ${r}`);
  for (const k of ['oneOf', 'anyOf', 'allOf'] as const) {
    if (!(k in cur)) continue;
    if (!Array.isArray(old[k])) {
      out.push(`${path}: ${k} added`);
      continue;
    }
    // allOf: every branch must hold, one more narrows. anyOf and oneOf: a branch of its own kind
    // (branchKey) added accepts more (a new message kind: an addition); one gone refuses its kind.
    if (k === 'allOf' && old[k].length !== cur[k].length) {
      out.push(`${path}: ${k} changed`);
      continue;
    }
    const now = branchesByKey(cur[k] as unknown[]);
    (old[k] as unknown[]).forEach((o, i) => {
      const key = branchKey(o, i);
      const c = now.get(key);
      if (c === undefined) out.push(`${path}: ${k} ${key.startsWith('#') ? `branch ${key}` : `kind "${key}"`}`);
      else out.push(...narrowings(o as S, c.schema, `${path}/${k}/${c.at}`));
    });
    // Another oneOf branch without a kind of its own may match what one before did: both then fail.
    if (k === 'oneOf') for (const [key] of now) if (key.startsWith('#') && !(old[k] as unknown[]).some((o, i) => branchKey(o, i) === key)) out.push(`${path}: ${k} changed`);
  }
  for (const [k, v] of Object.entries((old.properties ?? {}) as S)) {
    if (!Object.hasOwn(cur.properties ?? {}, k)) {
      if (cur.additionalProperties === false) out.push(`${path}: property ${k}`);
      continue;
    }
    out.push(...narrowings(v as S, cur.properties[k], `${path}/properties/${k}`));
  }
  for (const key of ['items', 'additionalProperties'] as const) if (key in cur && cur[key] !== false) out.push(...narrowings(old[key], cur[key], `${path}/${key}`));
  for (const key of ['$defs', 'prefixItems'] as const) for (const [k, v] of Object.entries((old[key] ?? {}) as S)) if (cur[key]?.[k] !== undefined) out.push(...narrowings(v as S, cur[key][k], `${path}/${key}/${k}`));
  return out;
}

/**
 * The fields `old` names that `cur` no longer does, as paths (walked as narrowings walks). In an
 * open object (the alert body, additionalProperties {}) such a field refuses nothing, so
 * narrowings does not see it; README's rule makes it version 2 all the same: a consumer that
 * reads it finds it gone.
 */
export function removedFields(old: unknown, cur: unknown, path = '#'): string[] {
  if (!old || typeof old !== 'object' || !cur || typeof cur !== 'object') return [];
  const o = old as S;
  const c = cur as S;
  const out: string[] = [];
  for (const k of Object.keys((o.properties ?? {}) as S)) {
    if (!Object.hasOwn(c.properties ?? {}, k)) out.push(`${path}/properties/${k}`);
    else out.push(...removedFields(o.properties[k], c.properties[k], `${path}/properties/${k}`));
  }
  for (const k of ['oneOf', 'anyOf', 'allOf'] as const) {
    if (!Array.isArray(o[k])) continue;
    const now = branchesByKey(Array.isArray(c[k]) ? (c[k] as unknown[]) : []);
    (o[k] as unknown[]).forEach((x, i) => {
      const at = now.get(branchKey(x, i));
      // A kind (an anyOf branch) gone is removed as a field is: version 2.
      if (at === undefined) out.push(`${path}/${k}/${i}`);
      else out.push(...removedFields(x, at.schema, `${path}/${k}/${i}`));
    });
  }
  for (const k of ['items', 'additionalProperties'] as const) out.push(...removedFields(o[k], c[k], `${path}/${k}`));
  for (const key of ['$defs', 'prefixItems'] as const) for (const [k, v] of Object.entries((o[key] ?? {}) as S)) out.push(...removedFields(v, c[key]?.[k], `${path}/${key}/${k}`));
  return out;
}

/** README's revisions list: the lines of the table under "Revisions of version 1". */
function readmeRevisions(): Map<string, string> {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(`Revisions of version ${MESSAGE_VERSION}`);
  expect(at, 'README, "Message schema": the revisions of the version').toBeGreaterThan(0);
  const rows = new Map<string, string>();
  for (const line of readme.slice(at).split('\n').slice(1, 60)) {
    const m = new RegExp(`^\\| (${REVISION.source}) \\|(.*)\\|$`).exec(line);
    if (m) rows.set(m[1], m[2]);
  }
  return rows;
}

describe('the message schema\'s revisions (version 1)', () => {
  it('the schema accepts exactly what its revision\'s kept copy does: a change to what it accepts needs a new revision (SCHEMA_REVISION, a copy, a README row)', () => {
    const revs = revisions();
    expect(revs).toContain(SCHEMA_REVISION);
    expect(revs[revs.length - 1], 'SCHEMA_REVISION is the newest kept').toBe(SCHEMA_REVISION);
    // On failure: the schema changed what it accepts. Set SCHEMA_REVISION to today (today.2 where
    // today's is published already), copy src/sinks/message.schema.json to
    // test/schema/message.v1.<revision>.json, and add README's row.
    expect(accepts(messageJsonSchema())).toEqual(accepts(kept(SCHEMA_REVISION)));
    expect(messageJsonSchema().$comment).toContain(`revision ${SCHEMA_REVISION}`);
  });

  it('each revision accepts every message the one before it did (it only adds), but the few tightenings README names', () => {
    const revs = revisions();
    const rows = readmeRevisions();
    for (let i = 1; i < revs.length; i++) {
      for (const n of narrowings(kept(revs[i - 1]), kept(revs[i]))) {
        // A tightening is allowed only as README's row says it: "tightened" and the property named.
        const name = [...n.split(':')[0].matchAll(/\/properties\/([^/]+)/g)].pop()?.[1] ?? n;
        expect(rows.get(revs[i]) ?? '', `${revs[i]} refuses what ${revs[i - 1]} accepted (${n}); README's row must say it is tightened`).toMatch(new RegExp(`tightened[^|]*\`${name}\``));
      }
      expect(removedFields(kept(revs[i - 1]), kept(revs[i])), `${revs[i]} removes fields of ${revs[i - 1]}: a field removed is version 2`).toEqual([]);
    }
  });

  it('README names, for each revision, every field and value a copy of the one before refuses (what a strict consumer must update for)', () => {
    const revs = revisions();
    const rows = readmeRevisions();
    for (const r of revs) expect(rows.has(r), `README has a row for revision ${r}`).toBe(true);
    // Every revision README names is kept: one deleted went unnoticed.
    for (const r of rows.keys()) expect(revs, `test/schema keeps revision ${r}, which README names`).toContain(r);
    for (let i = 1; i < revs.length; i++) {
      const refused = narrowings(kept(revs[i]), kept(revs[i - 1]));
      for (const n of refused) {
        const what = /: (?:property (\S+)|value "([^"]+)"|(?:anyOf|oneOf) kind "([^"]+)")$/.exec(n);
        expect(what, `an addition README can name: ${n}`).not.toBeNull();
        expect(rows.get(revs[i]), `README's row for ${revs[i]} names ${n}`).toContain(`\`${what![1] ?? what![2] ?? what![3]}\``);
      }
    }
  });

  it('README\'s examples name the current revision: the WebSocket\'s hello (`schemaRevision`) and the schema\'s `$comment`', () => {
    // The hello example named 2026-12-07 by hand: a revision bumped left README showing a client
    // the one before, and a client comparing with README's copy took its own for out of date.
    const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
    const hellos = [...readme.matchAll(/"schemaRevision":\s*"([^"]*)"/g)].map((m) => m[1]);
    expect(hellos.length, 'README shows the hello with its schemaRevision').toBeGreaterThan(0);
    for (const r of hellos) expect(r, 'README\'s hello example: schemaRevision is SCHEMA_REVISION').toBe(SCHEMA_REVISION);
    const comments = [...readme.matchAll(/`version \d+, revision ([^`]*)`/g)].map((m) => m[1]);
    expect(comments.length, 'README quotes the schema\'s $comment').toBeGreaterThan(0);
    for (const r of comments) expect(r, 'README\'s quote of the schema\'s $comment: its revision is SCHEMA_REVISION').toBe(SCHEMA_REVISION);
  });

  it('the walk finds what it must (a field added to a closed kind, a value added, a field made required)', () => {
    const old = { type: 'object', additionalProperties: false, required: ['a'], properties: { a: { type: 'string' }, r: { enum: ['x'] } } };
    const cur = { type: 'object', additionalProperties: false, required: ['a', 'b'], properties: { a: { type: 'string' }, b: { type: 'number' }, r: { enum: ['x', 'y'] } } };
    expect(narrowings(cur, old)).toEqual(['#: property b', '#/properties/r: value "y"']);
    expect(narrowings(old, cur)).toEqual(['#: required b']);
    expect(narrowings(old, old)).toEqual([]);
  });

  it('the walk finds the narrowings it missed: an enum on a free value, a schema for items, values or names where there was none, a property made false; and a field removed from an open kind (the alert body) is found', () => {
    const open = { type: 'object', properties: { s: { type: 'string' }, list: { type: 'array' }, map: { type: 'object' } } };
    const cur = { type: 'object', properties: { s: { type: 'string', enum: ['lobby'] }, list: { type: 'array', items: { type: 'number' } }, map: { type: 'object', propertyNames: { maxLength: 3 }, additionalProperties: { type: 'number' } } } };
    expect(narrowings(open, cur)).toEqual(['#/properties/s: enum added', '#/properties/list/items: type undefined -> "number"', '#/properties/map: propertyNames undefined -> {"maxLength":3}', '#/properties/map/additionalProperties: type undefined -> "number"']);
    expect(narrowings(open, { ...open, properties: { ...open.properties, s: false } })).toEqual(['#/properties/s: refuses every value']);
    expect(narrowings(cur, open)).toEqual([]);
    // The alert body is open (additionalProperties {}): a field taken out of it refused nothing a
    // copy of the revision before accepted, and passed as a revision, though README's rule says a
    // field removed is version 2 (a consumer reading it finds it gone).
    const before = kept(SCHEMA_REVISION);
    const after = JSON.parse(JSON.stringify(before)) as S;
    delete after.$defs.alert.properties.snapshotOmitted;
    expect(narrowings(before, after)).toEqual([]);
    expect(removedFields(before, after)).toEqual(['#/$defs/alert/properties/snapshotOmitted']);
    expect(removedFields(before, before)).toEqual([]);
    // Words are left out of what a schema accepts, but a field of that name is a field.
    expect(accepts({ type: 'object', title: 't', description: 'd', properties: { title: { type: 'string', description: 'x' }, description: { type: 'number' } } })).toEqual({ type: 'object', properties: { title: { type: 'string' }, description: { type: 'number' } } });
  });

  it('a message kind added (a new anyOf branch, wherever it is put) is an addition, which README must name; a kind removed is version 2', () => {
    const kind = (t: string, extra: S = {}) => ({ type: 'object', additionalProperties: false, properties: { type: { const: t }, ...extra } });
    const old = { anyOf: [kind('a'), kind('b')] };
    const added = { anyOf: [kind('a'), kind('z'), kind('b', { n: { type: 'number' } })] };
    // Matched by kind, not position: b is compared with b (its new field an addition), z is new.
    expect(narrowings(old, added)).toEqual([]);
    expect(removedFields(old, added)).toEqual([]);
    // A copy of the revision before refuses the new kind (and b's new field): README's row names them.
    expect(narrowings(added, old)).toEqual(['#: anyOf kind "z"', '#/anyOf/1: property n']);
    const gone = { anyOf: [kind('b')] };
    expect(narrowings(old, gone)).toEqual(['#: anyOf kind "a"']);
    expect(removedFields(old, gone)).toEqual(['#/anyOf/0']);
    // A constraint more (allOf), or an unkinded oneOf branch more, still narrows.
    expect(narrowings({ allOf: [{ required: ['x'] }] }, { allOf: [{ required: ['x'] }, { required: ['y'] }] })).toEqual(['#: allOf changed']);
    expect(narrowings({ oneOf: [{ required: ['x'] }] }, { oneOf: [{ required: ['x'] }, { required: ['y'] }] })).toEqual(['#: oneOf changed']);
    // The kept schema with a kind put first: an addition, nothing refused or removed.
    const before = kept(SCHEMA_REVISION);
    const after = JSON.parse(JSON.stringify(before)) as S;
    after.anyOf.unshift(kind('zones'));
    expect(narrowings(before, after)).toEqual([]);
    expect(removedFields(before, after)).toEqual([]);
    expect(narrowings(after, before)).toEqual(['#: anyOf kind "zones"']);
  });
});
