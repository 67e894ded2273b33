import { createHash } from 'node:crypto';
import { isSecretParam } from '../core/redact.js';

/**
 * The camera's credentials stay in argus: ffmpeg is given the relay's URL with a placeholder
 * user and password (PLACEHOLDER_USERINFO), so a command line that every local user can read
 * (`ps`, /proc/PID/cmdline) holds none. ffmpeg answers the camera's 401 challenge with them,
 * as it would with the real ones (Basic, or Digest with the camera's realm and nonce), and
 * the relay rewrites that answer, in each request on its way to the camera, with the real
 * user and password: the camera sees what ffmpeg would have sent, ffmpeg never knew them.
 */
export const PLACEHOLDER_USER = 'argus';
export const PLACEHOLDER_PASSWORD = 'relay';
export const PLACEHOLDER_USERINFO = `${PLACEHOLDER_USER}:${PLACEHOLDER_PASSWORD}`;

/** What ffmpeg is given for the value of a secret query parameter (`pwd=`, `token=`, … : redact's list); the relay puts the real one back. */
export const PLACEHOLDER_SECRET = 'argus-relay';

/**
 * The placeholder of the `n`-th value (from 0) of one secret parameter's name: PLACEHOLDER_SECRET,
 * then `argus-relay-2`, `-3`…: each value of a name given twice (`?token=a&token=b`) has its own,
 * and goes back to the camera as it was (one placeholder for both sent `token=b&token=b`).
 */
export function placeholderSecret(n: number): string {
  return n === 0 ? PLACEHOLDER_SECRET : `${PLACEHOLDER_SECRET}-${n + 1}`;
}

/** A value placeholderSecret gives. */
export function isPlaceholderSecret(value: string): boolean {
  return /^argus-relay(?:-[1-9]\d*)?$/.test(value);
}

/**
 * A query parameter: its separator, name and value as written. A value runs to the next `&`, or
 * to a `;` that starts another parameter (`;name=`): a `;` followed by no name and `=` is the
 * value's own (`token=ab;cd`: ffmpeg sends it whole, and redact hides it whole). In an RTSP URL a
 * `#` is the value's own too: ffmpeg sends an RTSP URL to its end (`pwd=ab#12` reaches the
 * camera whole), and stops an HTTP one's path at its fragment.
 */
const QUERY_PARAM = /([?&;])([^=&;#]*)=((?:[^&;#]|;(?![^=&;#]*=))*)/g;
const RTSP_QUERY_PARAM = /([?&;])([^=&;]*)=((?:[^&;]|;(?![^=&;]*=))*)/g;

/** The query of `url` (from its `?` to the end; an HTTP URL's to any `#`), and how its parameters are read. */
function queryOf(url: string): { at: number; query: string; param: RegExp } | undefined {
  const at = url.indexOf('?');
  if (at < 0) return undefined;
  if (/^rtsps?:/i.test(url)) return { at, query: url.slice(at), param: RTSP_QUERY_PARAM };
  const hash = url.indexOf('#', at);
  return { at, query: url.slice(at, hash < 0 ? undefined : hash), param: QUERY_PARAM };
}

/** The secret query parameters of a camera's URL (redact's list, with a value), name as written → its values, in order (a name may be given more than once). */
export function secretParams(url: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const q = queryOf(url);
  if (!q) return out;
  for (const m of q.query.matchAll(q.param)) {
    if (!isSecretParam(m[2]) || m[3] === '') continue;
    const values = out.get(m[2]);
    if (values) values.push(m[3]);
    else out.set(m[2], [m[3]]);
  }
  return out;
}

/** `url` with the `n`-th value of each secret query parameter's name (secretParams) replaced by placeholderSecret(n): what ffmpeg is given. */
export function placeholderQuery(url: string): string {
  const q = queryOf(url);
  if (!q) return url;
  const seen = new Map<string, number>();
  const query = q.query.replace(q.param, (p, sep: string, name: string, value: string) => {
    if (!isSecretParam(name) || value === '') return p;
    const n = seen.get(name) ?? 0;
    seen.set(name, n + 1);
    return `${sep}${name}=${placeholderSecret(n)}`;
  });
  return `${url.slice(0, q.at)}${query}${url.slice(q.at + q.query.length)}`;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Secret query parameters: name as written → the real values, in order (secretParams). */
export type Secrets = ReadonlyMap<string, readonly string[]>;

/**
 * `text` (a request line, a URI, a reply's header or SDP) with each secret query parameter of
 * `secrets` (secretParams) given its real value where it holds the placeholder (`toReal`: on the
 * way to the camera), or the placeholder where it holds the real value (on the way to ffmpeg).
 * A value is matched whole, after `?`, `&` or `;`, and ended by what ends a value in a URI as
 * cameras echo it: `&`, `;`, `#`, `/` (`?token=abc/trackID=1`, a control URL under a Content-Base
 * that ends in the query), `,`, `"`, white space or the end.
 */
export function swapSecrets(text: string, secrets: Secrets, toReal: boolean): string {
  let out = text;
  for (const [name, reals] of secrets) {
    // Each name in one pass: no value is swapped twice (a real value that reads as another's placeholder).
    const from = toReal ? reals.map((_v, n) => placeholderSecret(n)) : reals;
    if (!from.some((f) => out.includes(f))) continue;
    const alternatives = [...new Set(from)].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|');
    out = out.replace(new RegExp(`([?&;]${escapeRegExp(name)}=)(${alternatives})(?=[&;#/,"\\s]|$)`, 'g'), (_m, lead: string, value: string) => `${lead}${toReal ? reals[from.indexOf(value)] : placeholderSecret(from.indexOf(value))}`);
  }
  return out;
}

/**
 * Where a head ends in `held` (what was held of it, `headLength` bytes already searched, and
 * the bytes that came since): after its blank line, CRLF or LF alone (ffmpeg writes either; a
 * camera may too). The search starts 3 bytes before where the last one stopped, so a blank
 * line split between two chunks is found. The head's text (latin1) and its length, or undefined.
 */
export function headEnd(held: Buffer, headLength: number): { end: number; head: string } | undefined {
  const from = Math.max(0, headLength - 3);
  const text = held.toString('latin1');
  const blank = /\r?\n\r?\n/.exec(text.slice(from));
  if (!blank) return undefined;
  const end = from + blank.index + blank[0].length;
  return { end, head: text.slice(0, end) };
}

/** A request head longer than this is not rewritten (and nothing after it is: the rewriter passes bytes on as they are). */
const MAX_HEAD = 64 * 1024;

/**
 * A user and password as the bytes ffmpeg would send, one character a byte (latin1), as the
 * request heads they go into are handled: a URL's `%E9` (a Latin-1 password) is one byte 0xE9,
 * and a name typed in UTF-8 its UTF-8 bytes, in the Digest `username` as in the hashes.
 */
export interface Credentials {
  user: string;
  password: string;
}

/**
 * The credentials in an rtsp:// URL's user-info (up to its last `@` before the path), as ffmpeg
 * reads them: percent-decoded (ff_urldecode, `+` kept), split at the first `:`. Undefined
 * without a password (ffmpeg then answers no challenge at all).
 */
export function urlCredentials(url: string): Credentials | undefined {
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(url);
  if (!m) return undefined;
  const decoded = percentDecode(m[1]);
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * %XX sequences decoded to bytes, others left as they are, as ffmpeg's ff_urldecode does on the
 * URL's bytes (UTF-8): a `%` followed by two characters that are not both hex digits is kept
 * with them (`%%41` stays `%%41`). One character a byte (Credentials).
 */
function percentDecode(s: string): string {
  const b = Buffer.from(s, 'utf8');
  const hex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
  const out: number[] = [];
  for (let i = 0; i < b.length; i++) {
    if (b[i] === 0x25 && i + 2 < b.length) {
      if (hex(b[i + 1]) && hex(b[i + 2])) out.push(parseInt(String.fromCharCode(b[i + 1], b[i + 2]), 16));
      else out.push(b[i], b[i + 1], b[i + 2]);
      i += 2;
    } else out.push(b[i]);
  }
  // One character a byte (Credentials): ffmpeg hashes and sends the bytes as they are, UTF-8 or not.
  return Buffer.from(out).toString('latin1');
}

const md5 = (s: string) => createHash('md5').update(s, 'latin1').digest('hex');

/**
 * The parameters of a Digest `Authorization` value (`key=value` or `key="value"`,
 * comma-separated), as ffmpeg writes them: each quoted value as it is, never escaped
 * (httpauth.c: "TODO: Escape the quoted strings properly"), so a `\` in it is the value's own
 * (a realm `Dom\Cam` ffmpeg read from the camera's escaped `"Dom\\Cam"`, and hashed as `Dom\Cam`).
 */
function digestParams(value: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of value.matchAll(/([a-z0-9_-]+)\s*=\s*(?:"([^"]*)"|([^,\s]*))/gi)) out.set(m[1].toLowerCase(), m[2] ?? m[3]);
  return out;
}

/**
 * A quoted username as ffmpeg writes it, the name as it is (a `DOMAIN\user` reached cameras so
 * before the relay, and those that work take it so); only a `"`, which would end the value
 * early (ffmpeg's answer was unreadable then), is escaped.
 */
const quote = (s: string) => `"${s.replace(/"/g, '\\"')}"`;

/**
 * A request head with its `Authorization` answer computed again with `cred`: Basic's
 * `user:password`, or Digest's `username` and `response` (RFC 2617, MD5 and MD5-sess, with or
 * without `qop=auth`, as ffmpeg's httpauth.c computes them, from the realm, nonce, uri, nc and
 * cnonce ffmpeg sent). A head without one, or with one of another scheme, is returned as it is.
 * `mapUri`: the request's URI as the camera gets it (its secret query values put back: swapSecrets),
 * given to the Digest `uri` too and hashed so, as ffmpeg given the real URL would have: a camera
 * checks that the answer's `uri` is its request's (RFC 2617, 3.2.2.5).
 */
export function rewriteAuthorization(head: string, cred: Credentials, mapUri: (u: string) => string = (u) => u): string {
  const method = /^([A-Z_]+)\s/.exec(head)?.[1];
  return head.replace(/(\r?\n)(authorization)([ \t]*:[ \t]*)([^\r\n]*)/gi, (m, nl: string, name: string, sep: string, value: string) => {
    const scheme = /^(\S+)\s*(.*)$/.exec(value.trim());
    if (!scheme) return m;
    if (/^basic$/i.test(scheme[1])) return `${nl}${name}${sep}Basic ${Buffer.from(`${cred.user}:${cred.password}`, 'latin1').toString('base64')}`;
    if (!/^digest$/i.test(scheme[1]) || !method) return m;
    const p = digestParams(scheme[2]);
    const realm = p.get('realm') ?? '';
    const nonce = p.get('nonce') ?? '';
    const uri = mapUri(p.get('uri') ?? '');
    const qop = p.get('qop');
    const nc = p.get('nc') ?? '';
    const cnonce = p.get('cnonce') ?? '';
    let ha1 = md5(`${cred.user}:${realm}:${cred.password}`);
    if (/^md5-sess$/i.test(p.get('algorithm') ?? '')) ha1 = md5(`${ha1}:${nonce}:${cnonce}`);
    const ha2 = md5(`${method}:${uri}`);
    const response = qop ? md5(`${ha1}:${nonce}:${nc}:${cnonce}:${qop}:${ha2}`) : md5(`${ha1}:${nonce}:${ha2}`);
    const rewritten = scheme[2]
      .replace(/(^|,)(\s*username\s*=\s*)(?:"[^"]*"|[^,\s]*)/i, (_x, a: string, b: string) => `${a}${b}${quote(cred.user)}`)
      .replace(/(^|,)(\s*response\s*=\s*)(?:"[^"]*"|[^,\s]*)/i, (_x, a: string, b: string) => `${a}${b}"${response}"`)
      .replace(/(^|,)(\s*uri\s*=\s*)("[^"]*"|[^,\s]*)/i, (x, a: string, b: string, v: string) => (uri === (p.get('uri') ?? '') ? x : `${a}${b}${v.startsWith('"') ? `"${uri}"` : uri}`));
    return `${nl}${name}${sep}${scheme[1]} ${rewritten}`;
  });
}

/**
 * ffmpeg's side of a relayed connection (requests, and the interleaved RTCP it sends back; an
 * HTTP camera's requests alike, with `edit`: http-relay), on
 * its way to the camera: each request head is held until complete and its `Authorization`
 * rewritten (rewriteAuthorization); everything else passes as it is. Bytes it cannot read as
 * RTSP (a head over MAX_HEAD) make it pass everything on unchanged from there.
 */
export class AuthRewriter {
  private mode: 'start' | 'head' | 'body' | 'held' | 'frame' | 'payload' | 'raw' = 'start';
  private head: Buffer[] = [];
  private headLength = 0;
  private left = 0;
  private frameHeader = 0;
  /** A head whose body is held for `options.body` (mode 'held'), and the body's bytes so far. */
  private heldHead = '';
  private heldBody: Buffer[] = [];

  /**
   * `edit`: each head's further change, after its `Authorization` (an HTTP camera's `Host`:
   * http-relay; a reply's, on its way to ffmpeg: rtsp-tap). `options.secrets`: the camera's
   * secret query values (secretParams), or a function of each request line giving those of the
   * URL it asks for (http-relay: a redirect's own), put back where a request's line and Digest
   * `uri` hold the placeholder (swapSecrets). `options.body`: a body's change (a reply's SDP, on its way to
   * ffmpeg), given the head; such a body (up to MAX_HEAD) is held until complete, and its
   * `Content-Length` made the new body's.
   */
  constructor(
    private readonly cred: Credentials | undefined,
    private readonly edit?: (head: string) => string,
    private readonly options: { secrets?: Secrets | ((line: string) => Secrets | undefined); body?: (head: string, body: string) => string } = {},
  ) {}

  /** A request head as the camera is to get it: its secrets put back in its line (and Digest `uri`), its Authorization rewritten, then `edit`. */
  private rewrite(head: string): string {
    const nl = head.search(/\r?\n/);
    const line = nl < 0 ? head : head.slice(0, nl);
    const given = this.options.secrets;
    const secrets = typeof given === 'function' ? given(line) : given;
    const real = secrets?.size ? (u: string) => swapSecrets(u, secrets, true) : undefined;
    let out = head;
    if (real) out = real(line) + head.slice(line.length);
    if (this.cred) out = rewriteAuthorization(out, this.cred, real);
    return this.edit ? this.edit(out) : out;
  }

  /**
   * What is held (a head not yet complete, a held body's start), as it came: the stream ended
   * (the bytes were not what the rewriter reads; they are passed on, never lost).
   */
  flush(): Buffer[] {
    const held = this.mode === 'head' ? this.head : this.mode === 'held' ? [Buffer.from(this.heldHead, 'latin1'), ...this.heldBody] : [];
    this.head = [];
    this.heldBody = [];
    this.heldHead = '';
    this.mode = 'raw';
    return held;
  }

  /** Reads a chunk from ffmpeg; returns the bytes to send the camera now (a head not yet complete is held). */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let i = 0;
    let passFrom = 0;
    const pass = (to: number) => {
      if (to > passFrom) out.push(chunk.subarray(passFrom, to));
      passFrom = to;
    };
    while (i < chunk.length) {
      switch (this.mode) {
        case 'raw':
          i = chunk.length;
          break;
        case 'start':
          if (chunk[i] === 0x24) {
            this.mode = 'frame';
            this.frameHeader = 0;
            this.left = 0;
            i++;
          } else if (chunk[i] === 0x0d || chunk[i] === 0x0a) i++;
          else {
            pass(i);
            this.mode = 'head';
            this.head = [];
            this.headLength = 0;
          }
          break;
        case 'frame':
          // channel, then a 16-bit length
          if (this.frameHeader++ > 0) this.left = (this.left << 8) | chunk[i];
          i++;
          if (this.frameHeader === 3) this.mode = this.left ? 'payload' : 'start';
          break;
        case 'payload':
        case 'body': {
          const n = Math.min(this.left, chunk.length - i);
          i += n;
          this.left -= n;
          if (this.left === 0) this.mode = 'start';
          break;
        }
        case 'held': {
          const n = Math.min(this.left, chunk.length - i);
          this.heldBody.push(chunk.subarray(i, i + n));
          i += n;
          passFrom = i;
          this.left -= n;
          if (this.left === 0) {
            const body = this.options.body!(this.heldHead, Buffer.concat(this.heldBody).toString('latin1'));
            const head = this.heldHead.replace(/(\r?\ncontent-length[ \t]*:[ \t]*)\d+/i, (_m, name: string) => `${name}${Buffer.byteLength(body, 'latin1')}`);
            out.push(Buffer.from(head + body, 'latin1'));
            this.heldHead = '';
            this.heldBody = [];
            this.mode = 'start';
          }
          break;
        }
        case 'head': {
          // Look for the blank line in what is held and this chunk (CRLF or LF alone, as ffmpeg writes either).
          const held = Buffer.concat([...this.head, chunk.subarray(i)]);
          const found = headEnd(held, this.headLength);
          if (!found) {
            if (held.length > MAX_HEAD) {
              // Not RTSP as ffmpeg writes it: everything from here on as it is.
              out.push(held);
              passFrom = chunk.length;
              this.head = [];
              this.mode = 'raw';
            } else {
              this.head = [held];
              this.headLength = held.length;
              passFrom = chunk.length;
            }
            i = chunk.length;
            break;
          }
          const { end, head: headText } = found;
          const rewritten = this.rewrite(headText);
          const consumed = end - this.headLength; // bytes of this chunk in the head
          i += consumed;
          passFrom = i;
          this.head = [];
          this.headLength = 0;
          const length = Number(/\r?\ncontent-length[ \t]*:[ \t]*(\d+)/i.exec(headText)?.[1] ?? 0);
          this.left = length;
          if (this.options.body && length > 0 && length <= MAX_HEAD) {
            this.heldHead = rewritten;
            this.heldBody = [];
            this.mode = 'held';
            break;
          }
          out.push(Buffer.from(rewritten, 'latin1'));
          this.mode = length > 0 ? 'body' : 'start';
          break;
        }
      }
    }
    pass(chunk.length);
    return out;
  }
}
