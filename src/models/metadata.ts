import { statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import onnxProto from 'onnx-proto';
import { ArgusError, ErrorCodes } from '../core/errors.js';

const { onnx } = onnxProto;

export interface TensorMeta {
  name: string;
  /** Numbers for fixed dims, the dim_param for symbolic ones, −1 when neither is set. */
  dims: (number | string)[];
  /** As onnxruntime-node names element types: 'float32', 'float16', 'int64', … */
  elemType: string;
}

export interface OnnxMetadata {
  /** producer_name, e.g. 'pytorch'. */
  producer?: string;
  producerVersion?: string;
  irVersion?: number;
  /** Version of the default ('' / 'ai.onnx') operator set. */
  opset?: number;
  /** metadata_props, verbatim. */
  props: Record<string, string>;
  /** Class names from Ultralytics' `names` ({0: 'person', …} or a list); gaps are filled with the index. */
  names?: string[];
  /** Ultralytics `imgsz`, [height, width]. */
  imgsz?: [number, number];
  /** Ultralytics `stride` (the largest, when a list). */
  stride?: number;
  /** Ultralytics `task`: detect, segment, pose, obb, classify. */
  task?: string;
  /** Ultralytics `end2end` (NMS-free head or nms=True export), when written. */
  end2end?: boolean;
  /** Graph inputs, less initializers (older exports list weights as inputs too). */
  inputs: TensorMeta[];
  outputs: TensorMeta[];
}

const ELEM_TYPES: Record<number, string> = {
  1: 'float32',
  2: 'uint8',
  3: 'int8',
  4: 'uint16',
  5: 'int16',
  6: 'int32',
  7: 'int64',
  8: 'string',
  9: 'bool',
  10: 'float16',
  11: 'float64',
  12: 'uint32',
  13: 'uint64',
  14: 'complex64',
  15: 'complex128',
  16: 'bfloat16',
};

/**
 * Reads a model's metadata: producer, metadata_props (with Ultralytics' keys parsed), and the
 * graph's inputs and outputs. The protobuf is walked field by field from the file, through a
 * window of 64 KiB: weights (initializers' data, nodes) are skipped over, never read into
 * memory, so a model of hundreds of MB — already loaded by ONNX Runtime — is not held twice.
 */
export async function readOnnxMetadata(path: string): Promise<OnnxMetadata> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new ArgusError(ErrorCodes.MODEL_LOAD, `cannot read ONNX model ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const size = (await fh.stat()).size;
    return await parseFrom(new FileWindow(fh, size), size);
  } catch (e) {
    if (e instanceof ArgusError) throw e;
    throw new ArgusError(ErrorCodes.MODEL_LOAD, `${path} is not a readable ONNX model: ${(e as Error).message}`, { cause: e });
  } finally {
    await fh.close().catch(() => {});
  }
}

async function parseFrom(w: FileWindow, size: number): Promise<OnnxMetadata> {
  const meta: OnnxMetadata = { props: {}, inputs: [], outputs: [] };
  const text = new TextDecoder();
  let graph: { start: number; end: number } | undefined;
  // Visits return a promise only for the fields they read: the others (weights, nodes, unknown
  // fields, possibly millions of them) pass without a microtask each.
  await walk(w, 0, size, (f) => {
    const { no, start, end } = f;
    if (no === 1 && f.wire === 0) meta.irVersion = f.value;
    else if (no === 7 && f.wire === 2) graph = { start, end };
    else if (f.wire !== 2 || ![2, 3, 8, 14].includes(no)) return;
    else
      return w.bytes(start, end).then((b) => {
        if (no === 2) meta.producer = text.decode(b);
        else if (no === 3) meta.producerVersion = text.decode(b);
        else if (no === 8) {
          const op = onnx.OperatorSetIdProto.decode(b);
          if (!op.domain || op.domain === 'ai.onnx') meta.opset = toNumber(op.version);
        } else {
          const e = onnx.StringStringEntryProto.decode(b);
          meta.props[e.key] = e.value;
        }
      });
  });
  if (graph) {
    const initializers = new Set<string>();
    const inputs: TensorMeta[] = [];
    await walk(w, graph.start, graph.end, (f) => {
      if (f.wire !== 2) return;
      const { no, start, end } = f;
      // TensorProto: only its name (field 8) is read; the data is skipped.
      if (no === 5)
        return walk(w, start, end, (t) => {
          if (t.no === 8 && t.wire === 2) return w.bytes(t.start, t.end).then((b) => void initializers.add(text.decode(b)));
        });
      if (no === 11) return w.bytes(start, end).then((b) => void inputs.push(valueInfo(b)));
      if (no === 12) return w.bytes(start, end).then((b) => void meta.outputs.push(valueInfo(b)));
    });
    meta.inputs = inputs.filter((i) => !initializers.has(i.name));
  }
  applyUltralytics(meta);
  return meta;
}

function applyUltralytics(meta: OnnxMetadata): void {
  const p = meta.props;
  if (p.names !== undefined) meta.names = parseNames(p.names);
  if (p.imgsz !== undefined) {
    const v = tryParse(p.imgsz);
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) meta.imgsz = [v, v];
    else if (Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isInteger(x) && x > 0)) {
      if (v.length === 1) meta.imgsz = [v[0] as number, v[0] as number];
      else if (v.length === 2) meta.imgsz = [v[0] as number, v[1] as number];
    }
  }
  if (p.stride !== undefined) {
    const v = tryParse(p.stride);
    if (typeof v === 'number' && v > 0) meta.stride = v;
    else if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number')) meta.stride = Math.max(...(v as number[]));
  }
  if (p.task !== undefined && p.task.trim() !== '') meta.task = p.task.trim();
  if (p.end2end !== undefined) {
    const v = tryParse(p.end2end);
    if (typeof v === 'boolean') meta.end2end = v;
  }
}

/** Class names from `{0: 'person', 1: 'bicycle'}` (keys may be sparse or strings of ints) or `['person', …]`. */
export function parseNames(text: string): string[] | undefined {
  const v = tryParse(text);
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : String(x)));
  if (!(v instanceof Map) || v.size === 0) return undefined;
  const byIndex = new Map<number, string>();
  for (const [k, name] of v) {
    const i = typeof k === 'number' ? k : typeof k === 'string' && /^\d+$/.test(k) ? Number(k) : NaN;
    if (!Number.isInteger(i) || i < 0 || i > 1_000_000) return undefined;
    byIndex.set(i, typeof name === 'string' ? name : String(name));
  }
  const n = Math.max(...byIndex.keys()) + 1;
  return Array.from({ length: n }, (_, i) => byIndex.get(i) ?? String(i));
}

export type PyValue = number | string | boolean | null | PyValue[] | Map<number | string | boolean | null, PyValue>;

function tryParse(text: string): PyValue | undefined {
  try {
    return parsePythonLiteral(text);
  } catch {
    return undefined;
  }
}

/**
 * Parses a Python literal as `repr()` writes it (and JSON): dicts, lists, tuples, str ('…' or
 * "…" with backslash escapes), int, float, True/False/None. No evaluation; throws SyntaxError
 * on anything else.
 */
export function parsePythonLiteral(text: string): PyValue {
  let i = 0;
  const s = text;
  const ws = () => {
    while (i < s.length && /\s/.test(s[i])) i++;
  };
  const fail = (what: string): never => {
    throw new SyntaxError(`python literal: ${what} at offset ${i} of ${JSON.stringify(s.length > 60 ? s.slice(0, 60) + '…' : s)}`);
  };
  const str = (): string => {
    const q = s[i++];
    let out = '';
    while (i < s.length && s[i] !== q) {
      const c = s[i++];
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = s[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case 'x':
        case 'u':
        case 'U': {
          const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
          const hex = s.slice(i, i + len);
          if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) fail(`bad \\${e} escape`);
          out += String.fromCodePoint(parseInt(hex, 16));
          i += len;
          break;
        }
        case undefined: fail('unterminated string'); break;
        default: out += e; // \\ \' \" and unknown escapes keep the character
      }
    }
    if (i >= s.length) fail('unterminated string');
    i++;
    return out;
  };
  const seq = (close: string): PyValue[] => {
    const items: PyValue[] = [];
    ws();
    while (s[i] !== close) {
      items.push(value());
      ws();
      if (s[i] === ',') {
        i++;
        ws();
      } else if (s[i] !== close) fail(`expected , or ${close}`);
    }
    i++;
    return items;
  };
  const value = (): PyValue => {
    ws();
    const c = s[i];
    if (c === undefined) return fail('unexpected end');
    if (c === "'" || c === '"') return str();
    if (c === '[') {
      i++;
      return seq(']');
    }
    if (c === '(') {
      i++;
      return seq(')');
    }
    if (c === '{') {
      i++;
      const m = new Map<number | string | boolean | null, PyValue>();
      ws();
      while (s[i] !== '}') {
        const k = value();
        if (typeof k === 'object' && k !== null) fail('unhashable key');
        ws();
        if (s[i] !== ':') fail('expected :');
        i++;
        m.set(k as number | string | boolean | null, value());
        ws();
        if (s[i] === ',') {
          i++;
          ws();
        } else if (s[i] !== '}') fail('expected , or }');
      }
      i++;
      return m;
    }
    const word = /^(True|False|None|true|false|null)\b/.exec(s.slice(i, i + 6));
    if (word) {
      i += word[1].length;
      return word[1] === 'True' || word[1] === 'true' ? true : word[1] === 'False' || word[1] === 'false' ? false : null;
    }
    const num = /^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?/.exec(s.slice(i));
    if (num) {
      i += num[0].length;
      return Number(num[0].replace(/_/g, ''));
    }
    return fail('unexpected character');
  };
  const v = value();
  ws();
  if (i !== s.length) fail('trailing characters');
  return v;
}

function valueInfo(bytes: Uint8Array): TensorMeta {
  const vi = onnx.ValueInfoProto.decode(bytes);
  const t = vi.type?.tensorType;
  const dims = (t?.shape?.dim ?? []).map((d) => (d.dimParam ? d.dimParam : d.dimValue !== undefined && d.dimValue !== null ? toNumber(d.dimValue) : -1));
  return { name: vi.name, dims, elemType: ELEM_TYPES[t?.elemType ?? 0] ?? `type${t?.elemType ?? '?'}` };
}

function toNumber(v: number | { toNumber(): number } | null | undefined): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'number' ? v : v.toNumber();
}

interface Field {
  no: number;
  wire: number;
  /** Varint fields: the value. */
  value: number;
  /** Length-delimited fields: the payload's byte range. */
  start: number;
  end: number;
}

/** A model file, read through a window of 64 KiB. */
class FileWindow {
  readonly buf = Buffer.allocUnsafe(64 * 1024);
  from = 0;
  len = 0;
  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}
  /** Whether [pos, pos + n) is in the window (or runs to the file's end from it). */
  holds(pos: number, n: number): boolean {
    return pos >= this.from && Math.min(pos + n, this.size) <= this.from + this.len;
  }
  async fill(pos: number): Promise<void> {
    const { bytesRead } = await this.fh.read(this.buf, 0, this.buf.length, pos);
    this.from = pos;
    this.len = bytesRead;
  }
  /** A copy of the bytes of [start, end). */
  async bytes(start: number, end: number): Promise<Uint8Array> {
    if (this.holds(start, end - start)) return Buffer.from(this.buf.subarray(start - this.from, end - this.from));
    const out = Buffer.allocUnsafe(end - start);
    const { bytesRead } = await this.fh.read(out, 0, out.length, start);
    if (bytesRead < out.length) throw new Error('truncated field');
    return out;
  }
}

/**
 * Calls `visit` with each top-level field of one protobuf message in [start, end) of the file,
 * in order, one at a time (a message of millions of fields costs no memory). Runs through the
 * window without awaiting, and reads the file again only where a field starts beyond it; a
 * visit that returns a promise is awaited before the next field. `f` is reused: copy what is kept.
 */
async function walk(w: FileWindow, start: number, end: number, visit: (f: Field) => void | Promise<void>): Promise<void> {
  let p = start;
  const f: Field = { no: 0, wire: 0, value: 0, start: 0, end: 0 };
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (p >= end) throw new Error('truncated varint');
      const b = w.buf[p++ - w.from];
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
      if (mul > 2 ** 63) throw new Error('varint too long');
    }
  };
  while (p < end) {
    // A tag and a length or value: two varints of at most 10 bytes each.
    if (!w.holds(p, 20)) await w.fill(p);
    const key = varint();
    f.no = Math.floor(key / 8);
    f.wire = key % 8;
    f.value = 0;
    f.start = f.end = p;
    if (f.wire === 0) f.value = varint();
    else if (f.wire === 1) p += 8;
    else if (f.wire === 5) p += 4;
    else if (f.wire === 2) {
      const len = varint();
      f.start = p;
      f.end = p + len;
      p += len;
    } else throw new Error(`unsupported wire type ${f.wire} (field ${f.no})`);
    if (p > end) throw new Error(`field ${f.no} runs past the end of its message`);
    const r = visit(f);
    if (r) await r;
  }
}

/**
 * Why `path` is no model file to hand to ONNX Runtime, or undefined: missing, a folder, not a
 * regular file, or empty. ONNX Runtime (and the metadata reader after it) opened a named pipe and waited
 * on it for ever, Ctrl-C and all (`model.path`, `detect --model`, `models inspect`).
 */
export function modelFileProblem(path: string): string | undefined {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'file not found' : `cannot be read (${code ?? (e as Error).message})`;
  }
  if (st.isDirectory()) return 'a folder, not a model file';
  if (!st.isFile()) return 'not a regular file (a named pipe, a socket or a device): give the model as a file';
  // ONNX Runtime's own words were a C++ signature and "ModelProto does not have a graph".
  if (st.size === 0) return 'empty (0 bytes), not a model file';
  return undefined;
}
