/**
 * Credentials never leave the process: every URL-looking `scheme://user:pass@host` in a string
 * has its user-info replaced with `***`, and query parameters that commonly carry secrets
 * (token, password, …) have their values replaced. Used for logs, status messages, HTTP
 * answers and anything else that is written out.
 */
// Greedy up to the last '@' before the path: a password may itself hold '@' or a quote
// (ffmpeg splits user-info at the last '@'). Whitespace, '/', '?' and '#' end it, and so does a
// quote that closes a string (before ',', '}', ']', ':', whitespace or the end), so a URL
// without a password in a JSON text is not run into the next field's '@'. A scheme starts only
// where a run of scheme characters starts (not at every '.' inside one: `a.a.a…` took 7 ms a
// 4 KB line). The source schema refuses whitespace in a URL (a password with a space).
const USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/{1,3})((?:[^\s/?#"]|"(?![,}\]:\s]|$))*)@/gi;
// User-info cut by a '/', '?' or '#' (`rtsp://admin:pa#ss@cam/x`, `rtsp://admin:1234/5678@cam`,
// `rtsp://dom/user:pw@cam`: ffmpeg's authority ends at the first of them, and USERINFO stops
// there): from the scheme to an '@' after such a character, with no '=', '&', quote or
// whitespace on the way (a query's `?mail=a@b` is not user-info), and a ':' in it (a user and a
// password; `http://host/a@b` is a path). Bounded runs: one scan per scheme stays short on any
// line (unbounded, 'a://u:p/' repeated took 276 ms on 64 KB). The schema refuses such source
// URLs (cutUserInfo); this is for text from elsewhere.
const CUT_USERINFO_SOURCE = String.raw`([a-z][a-z0-9+.-]*:\/{1,3})(?![/[])([^\s/?#"@]{0,256}[/?#][^\s"@=&]{0,256})@`;
const CUT_USERINFO = new RegExp(String.raw`(?<![a-z0-9+.-])` + CUT_USERINFO_SOURCE, 'gi');

/**
 * True when `url`'s user-info may be cut by a '/', '?' or '#' (see CUT_USERINFO): an '@' after
 * the first of them, and a ':' before that '@' (a user and a password). ffmpeg reads the part
 * before the cut as host and port (`rtsp://admin:1234/5678@cam`: host `admin`, port 1234, which
 * its errors print), so no redaction can find the password again. A path or a query holding an
 * '@' after a port (`rtsp://cam:554/live@main`) looks the same: it is refused too, and writes the
 * '@' as %40.
 */
export function cutUserInfo(url: string): boolean {
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/{1,3}/i, '');
  const end = rest.search(/[/?#]/);
  const at = rest.lastIndexOf('@');
  return end >= 0 && at > end && rest.slice(0, at).includes(':');
}

// A parameter (after '?', '&', ';' or '#') up to '=', and its value to the next parameter or
// fragment ('#'; SRT's stream ids start with '#!::'). Its value is a secret when its name, percent-decoded, is one of
// SECRET_NAMES (checked apart from the match, so the pattern stays linear on any line).
const PARAM = /([?&;#])([^=&\s'"?;#]*)=(#?[^&\s'"#]*)/g;
const SECRET_REST = /=\*\*\*#[^&\s'"]*/g;
const SECRET_NAMES = new Set(
  [
    'token', 'access_token', 'access-token', 'auth_token', 'authtoken', 'id_token', 'refresh_token', 'jwt',
    'password', 'passwd', 'pwd', 'pass', 'passphrase', 'secret', 'client_secret',
    'key', 'api_key', 'api-key', 'apikey', 'auth', 'sig', 'signature', 'streamid',
    'x-amz-signature', 'x-amz-security-token', 'x-amz-credential', 'x-goog-signature', 'x-goog-credential',
    // GitLab's; cheap IP cameras' CGI (loginuse=admin&loginpas=…); sessions.
    'private_token', 'loginpas', 'loginpass', 'user_password', 'session', 'sessionid', 'session_id',
  ],
);

/** `rtsp://admin:hunter2@cam/stream?token=abc` → `rtsp://***@cam/stream?token=***` (also with one slash: a mistyped URL, read as a path, is named in errors). */
export function redact(text: string): string {
  if (text.indexOf(':/') < 0 && text.indexOf('=') < 0) return text;
  return text
    .replace(USERINFO, (_m, scheme: string, info: string) => (info ? `${scheme}***@` : `${scheme}@`))
    .replace(CUT_USERINFO, (m, scheme: string, info: string) => (info.includes(':') ? `${scheme}***@` : m))
    .replace(PARAM, (m, sep: string, name: string) => (SECRET_NAMES.has(paramName(name)) ? `${sep}${name}=***` : m))
    // A secret value with '#' in it (SRT's passphrase=abc#def: ffmpeg reads it whole, to '&').
    .replace(SECRET_REST, '=***');
}

/** Whether a query parameter of this name carries a secret (its value is redacted: `pwd`, `token`, …), the name as written in the URL. */
export function isSecretParam(name: string): boolean {
  return SECRET_NAMES.has(paramName(name));
}

/** A parameter's name as a server reads it: percent-decoded (`to%6Ben` is `token`), in lower case. */
function paramName(name: string): string {
  const lower = name.toLowerCase();
  if (!lower.includes('%')) return lower;
  try {
    return decodeURIComponent(lower).toLowerCase();
  } catch {
    return lower;
  }
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

/** The shape of a name: an id, a label, a field's key (letters, digits, `_`, `.`, `-`; at most 64). */
const NAME_SHAPE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A value an error message may repeat, quoted, or undefined. Messages about configuration repeat a
 * value only when it has the shape of a name (an id, a reference to one, a misspelt key): any
 * other text may have come from `${env:…}` and hold a secret (a password given to an enum field
 * was printed in the error). Anything else, numbers included (`mention` is for text), is left out.
 */
export function mention(value: unknown): string | undefined {
  return typeof value === 'string' && NAME_SHAPE.test(value) ? `"${value}"` : undefined;
}

/**
 * A Kafka broker address as it may be written out: `host:port` as it is; credentials written
 * into it (`user:secret@host:9092`, `kafka://user:secret@host:9092`, which Kafka clients do not
 * take: SASL settings carry them) become `***@host:9092`, and secret query parameters `***`.
 */
export function redactBroker(address: string): string {
  return redact(address).replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^\s/]*@/i, '$1***@');
}
