/**
 * Credentials never leave the process: every URL-looking `scheme://user:pass@host` in a string
 * has its user-info replaced with `***`, and query parameters that commonly carry secrets
 * (token, password, …) have their values replaced. Used for logs, status messages, HTTP
 * answers and anything else that is written out.
 */
// Greedy up to the last '@' before the path: a password may itself hold '@' or a quote
// (ffmpeg splits user-info at the last '@'). Only whitespace, '/', '?' and '#' end it: redact
// is given raw text, never serialised JSON, and a quote in a password must not end it.
// A scheme starts only where a run of scheme characters starts (not at every '.' inside one:
// `a.a.a…` took 7 ms a 4 KB line).
const USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/\/)([^\s/?#]*)@/gi;
// A parameter (after '?', '&' or ';') up to '=', and its value to the next parameter: SRT's
// stream ids start with '#!::'. Its value is a secret when its name holds a word that marks one
// (token, X-Amz-Signature, client_secret, api-key, X-Amz-Credential, …). The name is checked
// apart from the match, so the pattern stays linear on any line.
const PARAM = /([?&;])([^=&\s'"?;#]*)=([^&\s'"]*)/g;
const SECRET_NAME = /token|secret|key|sig|pass|pwd|auth|credential|jwt|streamid/i;

/** Secrets named in the configuration (see registerSecrets), longest first, as one pattern. */
const known = new Set<string>();
let knownPattern: RegExp | undefined;
/** Shorter values are left to the patterns: replacing every "abc" in a log would garble it. */
const MIN_KNOWN = 4;
const MAX_KNOWN = 4096;

/**
 * Remembers the password of `uri`'s user-info and its secret parameters' values, so that they
 * are redacted wherever they appear, also where the patterns cannot find them: a password
 * with a space (`rtsp://admin:my pass@cam`), a value that ffmpeg prints outside its URL. The
 * user-info is split as ffmpeg splits it: the authority ends at the first '/', '?' or '#', the
 * user-info at its last '@'.
 */
export function registerSecrets(uri: string): void {
  const add = (v: string) => {
    for (const x of new Set([v, safeDecode(v)])) {
      if (x.length >= MIN_KNOWN && !known.has(x)) {
        // Bounded (a worker's cameras come and go): the oldest is forgotten first.
        if (known.size >= MAX_KNOWN) known.delete(known.values().next().value!);
        known.add(x);
        knownPattern = undefined;
      }
    }
  };
  const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(uri);
  const at = m ? m[1].lastIndexOf('@') : -1;
  if (m && at >= 0) {
    const info = m[1].slice(0, at);
    add(info);
    const colon = info.indexOf(':');
    if (colon >= 0) add(info.slice(colon + 1));
  }
  for (const p of uri.matchAll(PARAM)) if (SECRET_NAME.test(p[2])) add(p[3]);
}

function safeDecode(v: string): string {
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

function knownRe(): RegExp | undefined {
  if (!knownPattern && known.size) knownPattern = new RegExp([...known].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return knownPattern;
}

/** `rtsp://admin:hunter2@cam/stream?token=abc` → `rtsp://***@cam/stream?token=***`. */
export function redact(text: string): string {
  const re = knownRe();
  if (re) text = text.replace(re, '***');
  if (text.indexOf('://') < 0 && text.indexOf('=') < 0) return text;
  return text
    .replace(USERINFO, (_m, scheme: string, info: string) => (info ? `${scheme}***@` : `${scheme}@`))
    .replace(PARAM, (m, sep: string, name: string) => (SECRET_NAME.test(name) ? `${sep}${name}=***` : m));
}

/** Redacts every string inside a plain value (objects, arrays), returning a copy only when something changed. */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const r = redactDeep(v);
      if (r !== v) changed = true;
      return r;
    });
    return (changed ? out : value) as T;
  }
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = redactDeep(v);
      if (r !== v) changed = true;
      out[k] = r;
    }
    return (changed ? out : value) as T;
  }
  return value;
}
