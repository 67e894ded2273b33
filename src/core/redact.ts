/**
 * Credentials never leave the process: every URL-looking `scheme://user:pass@host` in a string
 * has its user-info replaced with `***`, and query parameters that commonly carry secrets
 * (token, password, …) have their values replaced. Used for logs, status messages, HTTP
 * answers and anything else that is written out.
 */
// Greedy up to the last '@' before the path: a password may itself hold '@' or a quote
// (ffmpeg splits user-info at the last '@'); a double quote still ends it (JSON strings).
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"]*)@/gi;
const SECRET_PARAM = /([?&;](?:token|access_token|password|passwd|pwd|pass|passphrase|secret|key|api_key|apikey|auth|sig|signature|streamid)=)([^&\s'"]*)/gi; // to the next parameter: SRT's stream ids start with '#!::'

/** `rtsp://admin:hunter2@cam/stream?token=abc` → `rtsp://***@cam/stream?token=***`. */
export function redact(text: string): string {
  if (text.indexOf('://') < 0 && text.indexOf('=') < 0) return text;
  return text.replace(USERINFO, (_m, scheme: string, info: string) => (info ? `${scheme}***@` : `${scheme}@`)).replace(SECRET_PARAM, '$1***');
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
