import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { isatty } from 'node:tty';
import { isAlias, isMap, isPair, isScalar, isSeq, parseDocument, stringify as stringifyYaml, visit, YAMLError, type Document, type DocumentOptions, type Pair, type ParseOptions } from 'yaml';
import { z, type ZodError, type ZodIssue, type ZodTypeAny } from 'zod';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { PipeTimeout, readInto, type PipeWait } from '../core/files.js';
import { mention } from '../core/redact.js';
import { InterpolationError, interpolateEnv, lenientEnv } from './interpolate.js';
import { ClusterSchema, KafkaSinkSchema, PipelineSchema, type PipelineConfig } from './schema.js';
import { unknownKeyHint } from './suggest.js';

const pathText = (path: readonly (string | number)[]) => path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : String(p)), '');

/**
 * An issue's message, without the value it refuses: zod's own message for an enum repeats the
 * value given (`received 'hunter2'` for `model.resize: ${env:PASSWORD}`), and an unknown key is
 * repeated only when it has the shape of a field's name. The custom messages of the schema
 * follow the same rule (README, "Pipelines").
 */
function issueMessage(i: ZodIssue, schema?: ZodTypeAny): string {
  // `.nan` (YAML's not-a-number) worded as `.inf` is (schema/common.ts `finite`).
  if (i.code === 'invalid_type' && i.expected === 'number' && i.received === 'nan') return 'must be a finite number (.nan is not a number)';
  if (i.code === 'invalid_enum_value') return `Invalid enum value. Expected ${i.options.map((o) => `'${String(o)}'`).join(' | ')}`;
  // A value of no kind a union takes (`ssl: "yes"`, `sasl: true`): the kinds it takes, not zod's
  // "Invalid input". Only kinds and literals are named, never the value.
  if (i.code === 'invalid_union') {
    const expected: string[] = [];
    let received: string | undefined;
    for (const e of i.unionErrors) {
      const own = e.issues.filter((x) => x.path.length === i.path.length);
      const t = own.find((x) => x.code === 'invalid_type');
      const l = own.find((x) => x.code === 'invalid_literal');
      if (t && t.code === 'invalid_type') (expected.push(t.expected), (received = t.received));
      else if (l && l.code === 'invalid_literal') expected.push(JSON.stringify(l.expected));
      else return i.message;
    }
    return `Expected ${[...new Set(expected)].join(' or ')}${received ? `, received ${received}` : ''}`;
  }
  if (i.code === 'unrecognized_keys') {
    // A pipeline's section written into a source (or a cluster camera): say where it goes.
    const where = i.path.length === 2 ? i.path[0] : undefined;
    const sections = where === 'sources' || where === 'cameras' ? i.keys.filter((k) => PIPELINE_SECTIONS.has(k)) : [];
    // A misspelt or misplaced field: which one it likely is.
    const hint = (k: string) => {
      const h = schema && !sections.includes(k) ? unknownKeyHint(schema, i.path, k, pathText) : undefined;
      return h ? ` (${h})` : '';
    };
    // Hints for the first few only: each walks the schema and measures the key against the
    // fields near it, and a camera record of the topic (64 KiB) held 2000 keys: 126 ms of hints
    // on every worker, for an error cut to 500 characters.
    let hinted = 0;
    const keys = `Unrecognized key(s) in object: ${i.keys.map((k) => (mention(k) ? `'${k}'${hinted++ < MAX_HINTS ? hint(k) : ''}` : 'a key that is not a field name')).join(', ')}`;
    if (!sections.length) return keys;
    const named = sections.map((k) => `'${k}'`).join(', ');
    return where === 'sources' ? `${keys} (${named}: a section of the pipeline, at the top level, for all its sources)` : `${keys} (${named}: a section of the workers' config, --config WORKER.yaml, for all the cameras they run)`;
  }
  return i.message;
}

/** Unknown keys of one object that get a hint (config/suggest.ts), at most. */
const MAX_HINTS = 5;

/** The pipeline's top-level sections that are not a source's too (a hint for a misplaced one). */
const PIPELINE_SECTIONS = new Set(['model', 'postprocess', 'tracking', 'alerts', 'sinks', 'server', 'outbox', 'cluster']);

/**
 * Formats zod issues as `path.to.field: message` lines. With the schema the document was
 * checked against, an unknown key says which field it likely is (config/suggest.ts).
 */
export function formatIssues(error: ZodError, schema?: ZodTypeAny, from?: ReadonlyMap<string, string>, doc?: unknown): string {
  // A union one branch of which took the value's kind and refused something inside it
  // (`ssl: {passphrase: 123456}`): that branch's issues, not "Invalid input" for the whole.
  const expand = (i: ZodIssue): ZodIssue[] => {
    if (i.code !== 'invalid_union') return [i];
    const inside = i.unionErrors.filter((e) => e.issues.length > 0 && e.issues.every((x) => x.path.length > i.path.length));
    return inside.length === 1 ? inside[0].issues.flatMap(expand) : [i];
  };
  return error.issues
    .flatMap(expand)
    .map((i) => {
      // A value made from the environment says which variable (`ARGUS_THREADS=abc` read as
      // "model.intraOpThreads: Expected number", the variable left to be guessed).
      const vars = from?.get(pathText(i.path));
      return `  ${pathText(i.path) || '(root)'}: ${issueMessage(i, schema)}${booleanHint(i, doc)}${vars ? ` (its value comes from the environment: ${vars})` : ''}`;
    })
    .join('\n');
}

/** How YAML 1.1 (docker-compose, Ansible) and shells spell a boolean, which YAML 1.2 reads as text or a number. */
const BOOLEAN_SPELLINGS = /^(?:y|yes|n|no|on|off|true|false|1|0)$/i;

/**
 * A boolean field (or one that takes a boolean or something else: sinks.kafka.ssl) given `yes`,
 * `no`, `on`, `off` (YAML 1.1's booleans, text in YAML 1.2), `"true"`
 * or 1 and 0 (`ARGUS_DEMO_LOOP=1`): how to write it. `loop: yes` said only "Expected boolean,
 * received string". The value itself is not repeated.
 */
function booleanHint(i: ZodIssue, doc: unknown): string {
  // A boolean, or a union that takes one there (sinks.kafka.ssl: true or a section).
  const takesBoolean = (x: ZodIssue, depth: number): boolean => x.code === 'invalid_type' && x.expected === 'boolean' && x.path.length === depth;
  const boolean = takesBoolean(i, i.path.length) || (i.code === 'invalid_union' && i.unionErrors.some((e) => e.issues.some((x) => takesBoolean(x, i.path.length))));
  if (!boolean || doc === undefined) return '';
  let v: unknown = doc;
  for (const k of i.path) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  if ((typeof v !== 'string' && typeof v !== 'number') || !BOOLEAN_SPELLINGS.test(String(v).trim())) return '';
  return ' (write true or false: YAML reads yes, no, on and off as text, and 1 and 0 as numbers)';
}

/**
 * What YAML's errors say, for the codes whose message quotes the text it is about (a tag, an
 * escape, a header: an unquoted password `!pw` was printed as `Unresolved tag: !pw`).
 */
const YAML_PROBLEMS: Readonly<Record<string, string>> = {
  TAG_RESOLVE_FAILED: 'an unknown tag (a value that starts with ! is a YAML tag: quote it)',
  BAD_COLLECTION_TYPE: 'a tag of another kind of value (a value that starts with ! is a YAML tag: quote it)',
  BAD_DQ_ESCAPE: 'an invalid escape sequence in a double-quoted string (write \\\\ for a backslash, or use single quotes)',
};

/**
 * YAML's errors that a line indented one space too many or too few makes (`     zones:` under
 * `    uri: clip.mp4` read as part of the uri's value, "Nested mappings are not allowed in compact
 * mappings" at the uri): what to look at, after YAML's own words.
 */
const INDENT_CODES: ReadonlySet<string> = new Set(['BLOCK_AS_IMPLICIT_KEY', 'MULTILINE_IMPLICIT_KEY', 'BAD_INDENT', 'MISSING_CHAR']);
/** MISSING_CHAR is also an unclosed quote (`Missing closing "quote`): indentation has nothing to do with that one. */
const indentation = (code: string, message: string) => INDENT_CODES.has(code) && (code !== 'MISSING_CHAR' || /indented/.test(message));
const INDENT_HINT = ' (check the indentation of this line and the ones after it: the keys of one mapping start at the same column, spaces only, each list item with its "- ")';

/** A YAML text that could not be read: where, and what, without the text itself. */
export class YamlTextError extends Error {
  constructor(
    readonly line: number | undefined,
    readonly column: number | undefined,
    readonly problem: string,
  ) {
    super(`not valid YAML${YamlTextError.where(line, column)}${problem}`);
  }

  /** ` (line L, column C)` where known, then `: `. */
  static where(line: number | undefined, column: number | undefined): string {
    return `${line !== undefined ? ` (line ${line}, column ${column})` : ''}: `;
  }
}

/**
 * Parses one YAML document; its errors and warnings (an unknown tag) are refused as a
 * YamlTextError, and nothing is written to stderr (YAML's warnings printed the line they were
 * about, a secret with it, outside redaction). Merge keys are read (`<<: *defaults`, as
 * docker-compose files share settings): the yaml library's YAML 1.2 default took `<<` for a
 * key, refused as "a key that is not a field name". What they merge counts against the same
 * cap on aliases as any alias.
 */
export function parseYamlText(text: string, options: ParseOptions & DocumentOptions = {}): unknown {
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { merge: true, ...options, logLevel: 'silent' });
  } catch (err) {
    // The parser recurses per level of nesting: 100 000 `[` (200 KB) overflowed the stack, and
    // the RangeError came out uncoded, without the file's name.
    throw new YamlTextError(undefined, undefined, stackExhausted(err) ? TOO_DEEP : 'its text could not be read');
  }
  const e: YAMLError | undefined = doc.errors[0] ?? doc.warnings[0];
  if (e) {
    const first = e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
    const problem = YAML_PROBLEMS[e.code] ?? (/^Block scalar header includes extra characters/.test(first) ? "characters after a block scalar's header (| or >, then only a chomping or indentation indicator)" : `${first}${indentation(e.code, first) ? INDENT_HINT : ''}`);
    throw new YamlTextError(e.linePos?.[0].line, e.linePos?.[0].col, problem);
  }
  let value: unknown;
  try {
    if (mergeCopies(doc) > MAX_MERGE_COPIES) throw new MergeCopiesError();
    value = doc.toJS();
  } catch (err) {
    // What only turning the document into values finds (an alias with no anchor before it, which
    // the yaml library reports with the alias's name: an unquoted value starting with *, a secret
    // perhaps): refused like the rest, without the text. Aliases that would expand to more than
    // the yaml library's cap ("billion laughs") were reported as an alias with no anchor.
    const excessive = err instanceof ReferenceError && /excessive alias/i.test(err.message);
    const alias = err instanceof ReferenceError && /alias/i.test(err.message);
    const merge = err instanceof Error && /merge sources/i.test(err.message);
    const problem = stackExhausted(err)
      ? TOO_DEEP
      : err instanceof MergeCopiesError
        ? `merge keys (<<) that copy mappings too many times (more than ${MAX_MERGE_COPIES} values: merges of mappings that merge others multiply)`
        : excessive
        ? 'aliases (*name) that repeat an anchor (&name) too many times (aliases of aliases multiply: a "billion laughs" document)'
        : alias
          ? 'an alias (*name) with no anchor (&name) before it: quote a value that starts with *'
          : merge
            ? 'a merge key (<<) whose value is not a mapping: `<<: *name` with the anchor &name on a mapping, or a list of such aliases'
            : 'its values could not be read';
    throw new YamlTextError(undefined, undefined, problem);
  }
  const shape = value !== null && typeof value === 'object' ? shapeProblem(value) : undefined;
  if (shape !== undefined) throw new YamlTextError(undefined, undefined, shape);
  return value;
}

/**
 * The most values merge keys may copy in one document. A merge (`<<: *a`) converts its mapping
 * afresh each time, and the yaml library counts no alias it merges against its cap: anchors each
 * merging the one before ten times multiplied the work by ten a line, and 470 bytes (a camera
 * record on the topic, too) held the event loop 22 s, 600 for hours. A thousand cameras merging
 * a 30-field default copy about 60 000.
 */
export const MAX_MERGE_COPIES = 200_000;

class MergeCopiesError extends Error {}

/** A pair's key that is a merge key (`<<`, plain): resolved as such with `merge: true`. */
const isMergeKey = (k: unknown) => isScalar(k) && (typeof k.value === 'symbol' ? k.value.description === '<<' : k.value === '<<' && (!k.type || k.type === 'PLAIN'));

/**
 * Prepares `doc`'s merges for toJS and says how many values they copy. Each alias a merge names
 * is replaced by the node it names, found in one pass over the document: the yaml library
 * looked each up by walking the whole document, so 4000 cameras each merging a default (52 KB)
 * took 21 s, a 1 MB file hours. Then each merge counts the values of what it merges, merges
 * within those included (an alias elsewhere is the anchored value itself, not a copy), once per
 * node: linear in the document, without converting it.
 */
function mergeCopies(doc: Document): number {
  // In document order: an alias names the last node anchored so before it.
  const anchored = new Map<string, unknown>();
  const named = new Map<unknown, unknown>();
  const merges: Pair[] = [];
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) named.set(node, anchored.get(node.source));
      else if (node.anchor) anchored.set(node.anchor, node);
    },
    Pair(_key, pair) {
      if (isMergeKey(pair.key)) merges.push(pair as Pair);
    },
  });
  for (const pair of merges) {
    const target = (v: unknown) => (isAlias(v) ? (named.get(v) ?? v) : v);
    if (isSeq(pair.value)) pair.value.items = pair.value.items.map(target);
    else pair.value = target(pair.value);
  }
  // Values a node's conversion makes, merged ones included; `null` while being counted (a merge of an enclosing mapping: toJS refuses it itself).
  const made = new Map<unknown, number | null>();
  let copies = 0;
  const count = (node: unknown): number => {
    const known = made.get(node);
    if (known !== undefined) return known ?? 1;
    made.set(node, null);
    let n = 1;
    if (isMap(node)) {
      for (const p of node.items) {
        if (!isMergeKey(p.key)) {
          n += count(p.key) + count(p.value);
          continue;
        }
        for (const v of isSeq(p.value) ? p.value.items : [p.value]) {
          const c = count(v);
          copies += c;
          n += c;
          if (copies > MAX_MERGE_COPIES) return n;
        }
      }
    } else if (isSeq(node)) for (const v of node.items) n += count(v);
    else if (isPair(node)) n += count(node.key) + count(node.value);
    made.set(node, n);
    return n;
  };
  count(doc.contents);
  return copies;
}

/**
 * Why a parsed document (YAML's, or a camera record's JSON) is refused for its shape, or
 * undefined: nested deeper than MAX_NESTING, a string holding a NUL, or a key `__proto__`, which is no field of anything
 * argus reads and which an object built from it (`out[k] = …`, zod's passthrough) took for its
 * prototype: a camera record's `__proto__` was dropped without a word.
 */
export function shapeProblem(value: unknown): string | undefined {
  const stack: { v: unknown; depth: number; path: (string | number)[] }[] = [{ v: value, depth: 0, path: [] }];
  const where = (path: (string | number)[]) => `${pathText(path.slice(0, 4)) || '(root)'}${path.length > 4 ? '…' : ''}`;
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (depth >= MAX_NESTING) return `${TOO_DEEP} (at ${where(path)})`;
    let nul: (string | number)[] | undefined;
    const next = (k: string | number, c: unknown) => {
      if (c !== null && typeof c === 'object') stack.push({ v: c, depth: depth + 1, path: path.length < 5 ? [...path, k] : path });
      else if (typeof c === 'string' && c.includes('\0')) nul ??= [...path, k];
    };
    if (Array.isArray(v)) v.forEach((c, i) => next(i, c));
    else
      for (const [k, c] of Object.entries(v as object)) {
        if (k === '__proto__') return `a key __proto__ (in ${where(path)}), which is no field`;
        next(k, c);
      }
    // A NUL ("\0" in YAML, \u0000 in JSON) can be in no path, URL or argument: an inputArgs word
    // holding one failed ffmpeg's spawn at every retry, for ever, the word printed with it.
    if (nul) return `a NUL character (\\0) in a string (at ${where(nul)}), which no path, URL or ffmpeg argument can hold`;
  }
  return undefined;
}

/**
 * The most levels of mappings and lists a configuration document (or a camera record) may nest:
 * a pipeline's deepest field (`sources[0].zones[0].polygon[0][0]`) is 6 levels down. Past the
 * cap nothing of the document is used; well past it, the parser itself overflowed the stack.
 */
export const MAX_NESTING = 64;

const TOO_DEEP = `nested more than ${MAX_NESTING} levels deep (mappings and lists within each other)`;

/** Whether an error is the engine running out of stack (a RangeError, or a SyntaxError from a regular expression compiled at the limit). */
const stackExhausted = (e: unknown) => e instanceof Error && /maximum call stack size exceeded/i.test(e.message);

/**
 * `${env:PASSWORD}` holding `123456` was re-read as a number; where the schema wants a string,
 * put the variable's text back. Returns true when something was put back.
 */
function restoreStrings(doc: unknown, error: ZodError, raw: Map<string, string>): boolean {
  let changed = false;
  // Those of a union's branches too (sinks.kafka.ssl: true, or an object with a passphrase).
  const all = (issues: readonly ZodIssue[]): ZodIssue[] => issues.flatMap((i) => (i.code === 'invalid_union' ? all(i.unionErrors.flatMap((e) => e.issues)) : [i]));
  for (const i of all(error.issues)) {
    if (i.code !== 'invalid_type' || i.expected !== 'string') continue;
    const text = raw.get(pathText(i.path));
    if (text === undefined || i.path.length === 0) continue;
    let node = doc as Record<string | number, unknown>;
    for (const k of i.path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
    node[i.path[i.path.length - 1]] = text;
    raw.delete(pathText(i.path));
    changed = true;
  }
  return changed;
}

/** Parses YAML text, interpolates `${env:…}`, validates. Errors name the file and the field. */
export function parseConfigText<S extends ZodTypeAny>(
  text: string,
  schema: S,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  /** Says what the document is when it is another kind than `schema`'s (asked before `${env:…}` is resolved). */
  otherKind?: (doc: Record<string, unknown>) => string | undefined,
): z.infer<S> {
  let doc: unknown;
  try {
    doc = parseYamlText(text);
  } catch (e) {
    // No cause: YAML's own error holds the lines around the problem, which may hold a secret.
    if (e instanceof YamlTextError) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: ${e.message}`);
    throw e;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    // An empty file (or one of comments only) was "expected a mapping at the top level" as a list was.
    if (doc === null && text.replace(/^\s*#.*$/gm, '').trim() === '') throw new ArgusError(ErrorCodes.CONFIG, `${file}: empty (no settings in it)`);
    throw new ArgusError(ErrorCodes.CONFIG, `${file}: expected a mapping at the top level`);
  }
  const other = otherKind?.(doc as Record<string, unknown>);
  if (other) throw new ArgusError(ErrorCodes.CONFIG, `${file}: ${other}`);
  const raw = new Map<string, string>();
  const from = new Map<string, string>();
  try {
    doc = interpolateEnv(doc, env, '', raw, from);
  } catch (e) {
    if (e instanceof InterpolationError) throw new ArgusError(ErrorCodes.CONFIG, `${file}: ${e.message}`);
    throw e;
  }
  let result = schema.safeParse(doc);
  while (!result.success && raw.size > 0 && restoreStrings(doc, result.error, raw)) result = schema.safeParse(doc);
  if (!result.success) {
    throw new ArgusError(ErrorCodes.CONFIG, `${file}: invalid configuration\n${formatIssues(result.error, schema, from, doc)}`);
  }
  return result.data;
}

/**
 * The most bytes argus reads of a configuration file (a pipeline, a worker's YAML, a model
 * manifest): 1 MiB, some hundred cameras' worth of sources, zones and rules. `argus run
 * /dev/zero` grew to 645 MB before its error; the file is read up to one byte past the cap and
 * no further (a FIFO or /dev/zero has no size to check first).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** "1 MiB" for whole MiB, else the bytes. */
const sizeText = (bytes: number) => (bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`);

/**
 * The offset of the first byte that does not start or continue a valid UTF-8 sequence (an
 * overlong form, a surrogate, a value past U+10FFFF, a sequence cut short), or -1.
 */
export function invalidUtf8At(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    // Lead byte: how many continuation bytes follow, and the range of the first (RFC 3629's table).
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return i;
    if (i + need >= b.length) return i; // cut short by the end
    if (b[i + 1] < lo || b[i + 1] > hi) return i;
    for (let k = 2; k <= need; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return i;
    i += need + 1;
  }
  return -1;
}

/** What a file's first bytes say it is, when it is a picture or a video (by its magic number). */
function mediaKind(b: Buffer): string | undefined {
  const at = (i: number, hex: string) => b.length >= i + hex.length / 2 && b.subarray(i, i + hex.length / 2).toString('hex') === hex;
  // ....ftyp, its box's size first (8 to 4096 bytes): a text with "ftyp" at byte 4 is no box.
  if (at(4, '66747970') && b.readUInt32BE(0) >= 8 && b.readUInt32BE(0) <= 4096) return 'an MP4/MOV video';
  if (at(0, '1a45dfa3')) return 'a Matroska/WebM video';
  if (at(0, 'ffd8ff')) return 'a JPEG picture';
  if (at(0, '89504e470d0a1a0a')) return 'a PNG picture';
  if (at(0, '47494638')) return 'a GIF';
  if (at(0, '52494646') && (at(8, '41564920') || at(8, '57454250'))) return at(8, '57454250') ? 'a WebP picture' : 'an AVI video';
  if (at(0, '000001ba') || at(0, '00000001') || at(0, '000001b3')) return 'an MPEG video stream';
  return undefined;
}

/**
 * How long a configuration file that is a pipe (`argus run p.yaml` on a named pipe, `argus run
 * <(render-pipeline)`) is waited for: its writer must have written it whole and closed it by
 * then, else VAP_ERR_CONFIG_FILE naming the file. Long enough for a program that renders a
 * pipeline (fetches a secret, templates a file); a pipe nobody writes to is said, not waited on
 * for ever.
 */
export const CONFIG_PIPE_WAIT_MS = 30_000;

/**
 * A configuration file's text: at most `maxBytes` (else VAP_ERR_CONFIG_FILE, read no further),
 * and UTF-8 (else VAP_ERR_CONFIG_FILE naming the byte offset and line: `readFile(…, 'utf8')`
 * turned a Latin-1 'é' in a password or a uri into U+FFFD without a word). Opened without
 * waiting (O_NONBLOCK): a named pipe is read without holding one of libuv's threads, within
 * `pipe.waitMs` (CONFIG_PIPE_WAIT_MS; core/files.ts, readInto). A blocking open and read of a
 * pipe nobody wrote to held a thread for good, and process.exit() waited for it.
 */
export async function readConfigText(file: string, maxBytes = MAX_CONFIG_BYTES, kind: ConfigKind = 'pipeline', pipe: PipeWait = {}): Promise<string> {
  // A model manifest's file that is no text is most likely the ONNX model itself (`model.manifest:
  // my.onnx`, `--model my.model`): said "larger than 1 MiB, the most argus reads of a configuration file".
  const notText = kind === 'manifest' ? `; a model manifest is YAML text, and an ONNX model file is given as model.path (with manifest: naming its family, e.g. yolox-nano) or as --model FILE.onnx` : '';
  const buf = Buffer.allocUnsafe(maxBytes + 1);
  let n = 0;
  try {
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const st = await handle.stat();
      if (st.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
      // `argus run /dev/stdin` from a terminal: opened without waiting, its read was EAGAIN, and
      // "cannot read (EAGAIN)" said nothing of what to do. A file is read whole, not typed.
      if (st.isCharacterDevice() && isatty(handle.fd)) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: a terminal; argus reads the file whole, not as it is typed: name the file, or pipe it in (\`argus run /dev/stdin < pipeline.yaml\`, \`render-pipeline | argus run /dev/stdin\`)`);
      // Up to one byte past the cap: enough to know it is too large, and no more.
      n = await readInto(handle, buf, st.isFIFO() ? { waitMs: CONFIG_PIPE_WAIT_MS, ...pipe } : undefined);
    } finally {
      await handle.close();
    }
  } catch (e) {
    if (e instanceof ArgusError) throw e;
    if (e instanceof PipeTimeout) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: ${e.message}: write the file whole and close it, or name a regular file`);
    const code = (e as NodeJS.ErrnoException).code;
    // `argus run pipelines`: "cannot read (EISDIR)".
    if (code === 'EISDIR') throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: a folder, not a YAML file: name the file in it`, { cause: e });
    // A Unix socket cannot be opened as a file (ENXIO): said what it is, not "cannot read (ENXIO)".
    if (code === 'ENXIO' && (await stat(file).then((st) => st.isSocket(), () => false))) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: a socket, not a file: name the file, or pipe it in (\`argus run /dev/stdin < pipeline.yaml\`)`, { cause: e });
    throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: cannot read (${code ?? (e as Error).message})`, { cause: e });
  }
  // `argus run clip.mp4`: said "not UTF-8" (or "larger than 1 MiB"), not what the file is.
  const media = mediaKind(buf.subarray(0, Math.min(n, 16)));
  if (media && kind === 'manifest') throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: ${media}, not a model manifest (YAML)`);
  if (media) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: ${media}, not a pipeline YAML: \`argus detect ${file}\` runs the model on it, or name it as a source's uri in a pipeline`);
  if (n > maxBytes) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: larger than ${sizeText(maxBytes)}, the most argus reads of a configuration file (nothing past it was read)${notText}`);
  const bytes = buf.subarray(0, n);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const at = invalidUtf8At(bytes);
    if (at < 0) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: not UTF-8 text; save the file as UTF-8${notText}`);
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) (line++, (lineStart = i + 1));
    throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: not UTF-8 text: the byte at offset ${at} (line ${line}, byte ${at - lineStart + 1} of the line), 0x${bytes[at].toString(16).padStart(2, '0')}, does not start or continue a UTF-8 character; save the file as UTF-8${notText}`);
  }
}

/** What a configuration file is read as: its errors' advice (a model manifest's is not a pipeline's). */
export type ConfigKind = 'pipeline' | 'manifest';

export async function readConfigFile<S extends ZodTypeAny>(file: string, schema: S, env?: NodeJS.ProcessEnv, kind?: ConfigKind): Promise<z.infer<S>> {
  return parseConfigText(await readConfigText(file, undefined, kind), schema, file, env);
}

export async function loadPipeline(file: string, env?: NodeJS.ProcessEnv): Promise<PipelineConfig> {
  return parseConfigText(await readConfigText(file), PipelineSchema, file, env, notAPipeline);
}

/** The parts of a pipeline that loadPipelineParts reads, checked as in a pipeline: a pipeline holding nothing else (no source needed). */
const PipelinePartsSchema = z
  .object({
    cluster: ClusterSchema.optional(),
    sinks: z.object({ kafka: KafkaSinkSchema.optional() }).strict().default({}),
  })
  .strict();
export type PipelineParts = Pick<PipelineConfig, 'cluster'> & { sinks: Pick<PipelineConfig['sinks'], 'kafka'> };

/**
 * A pipeline YAML of which a command reads only some parts (`parts`: `argus consume --config` the
 * Kafka sink; `argus cameras`/`argus cluster --config` the cluster section and the Kafka sink). A
 * `${env:…}` elsewhere may be unset (a camera's password, the server's token): a consumer engineer
 * or an operator had to export the camera's password to read a topic. One of `parts` unset is still
 * VAP_ERR_CONFIG naming it. With every variable set the file is checked whole, as a run checks it;
 * where an unset variable's stand-in is refused by its field (`providers: ["${env:PROVIDER}"]`),
 * only `parts` are, as a pipeline holding nothing else.
 */
export async function loadPipelineParts(file: string, parts: readonly ('cluster' | 'sinks.kafka')[]): Promise<PipelineParts> {
  const read = new RegExp(`^(?:${parts.map((p) => p.replace('.', '\\.')).join('|')})(?:\\.|\\[|$)`);
  const missing: InterpolationError[] = [];
  const neededMissing = (): void => {
    const needed = missing.find((m) => read.test(m.path));
    if (needed) throw new ArgusError(ErrorCodes.CONFIG, `${file}: ${needed.message}`);
  };
  let config: PipelineParts;
  try {
    config = await loadPipeline(file, lenientEnv(process.env, missing));
  } catch (e) {
    neededMissing();
    if (missing.length === 0 || !(e instanceof ArgusError && e.code === ErrorCodes.CONFIG)) throw e;
    const doc = parseYamlText(await readConfigText(file)) as Record<string, unknown> | null;
    const sinks = doc?.sinks as Record<string, unknown> | undefined;
    const part: Record<string, unknown> = {};
    if (parts.includes('cluster') && doc?.cluster !== undefined) part.cluster = doc.cluster;
    if (parts.includes('sinks.kafka') && sinks && typeof sinks === 'object' && sinks.kafka !== undefined) part.sinks = { kafka: sinks.kafka };
    config = parseConfigText(stringifyYaml(part), PipelinePartsSchema, file, lenientEnv(process.env));
  }
  neededMissing();
  return config;
}

/** A cameras list given where a pipeline is wanted (`argus run pipelines/cameras.yaml`: its first error was an unset variable of one camera's password). */
function notAPipeline(doc: Record<string, unknown>): string | undefined {
  if (!('cameras' in doc)) return undefined;
  if (!('sources' in doc)) return 'a list of cameras for argus workers, not a pipeline: `argus cameras apply FILE --config WORKER.yaml` gives them to the workers (README, "Many machines: argus workers")';
  return 'cameras: the list of cameras for argus workers is a file of its own (`argus cameras apply FILE --config WORKER.yaml`), not part of a pipeline: move it out, or name these cameras under sources';
}
