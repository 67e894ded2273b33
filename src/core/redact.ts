/**
 * Credentials never leave the process: every URL-looking `scheme://user:pass@host` in a string
 * has its user-info replaced with `***`, query parameters that commonly carry secrets
 * (token, password, …) have their values replaced, and so do credential headers
 * (`Authorization: Basic ***`, `Cookie: ***`). Used for logs, status messages, HTTP
 * answers and anything else that is written out.
 *
 * Two layers. The secrets argus was given (rememberSecret: source URLs' passwords and secret
 * query values; in a source's inputArgs, credential headers' values of `-headers`, `-cookies`'
 * values, `-http_proxy`'s password and other secret options' values (rememberArgSecrets); SASL
 * passwords, the server's token; as the config's schema reads them) are replaced wherever they
 * appear, in each form text may hold them (as written, percent-decoded and -encoded, JSON-escaped
 * once or twice): a password may hold any character, and no pattern can tell where it ends in
 * text already formatted (`pa":ss`, `s"}t`).
 * Then the patterns below, for secrets argus was not given (a URL a camera redirected to, a
 * request head ffmpeg prints).
 */
// Greedy up to the last '@' before the path: a password may itself hold '@' or a quote
// (ffmpeg splits user-info at the last '@'). Whitespace, '/', '?' and '#' end it, and so does a
// quote that closes a JSON string (before ',', '}', ']', whitespace or the end), so a URL
// without a password in a JSON text is not run into the next field's '@'; a quote before
// anything else is the password's (`pa":ss`: one before ':' ended it, and it was printed whole).
// A backslash takes the quote or backslash after it (JSON's `\"` is a quote inside the string,
// never its end), each way of reading a run of them one (no backtracking on `\\…`). A scheme
// starts only where a run of scheme characters starts (not at every '.' inside one: `a.a.a…`
// took 7 ms a 4 KB line). The source schema refuses whitespace in a URL (a password with a space).
const USERINFO = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*:\/{1,3})((?:[^\s/?#"\\]|\\["\\]|\\(?!["\\])|"(?![,}\]\s]|$))*)@/gi;
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
// A quote in a value is the value's, as in USERINFO, unless it closes a string (`pwd=pa"ss`
// printed `"ss`); a backslash takes the quote or backslash it escapes.
const PARAM = /([?&;#])([^=&\s'"?;#]*)=(#?(?:[^&\s'"#\\]|\\["'\\]|\\(?!["'\\])|['"](?![,}\]\s]|$))*)/g;
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

/**
 * Header names whose value is a credential when a source's `-headers` gives them (an API key, a
 * session, a token: `X-API-Key`, `X-Auth-Token`, `Authorization`, `Cookie`, …): their values are
 * remembered (rememberArgSecrets). The patterns star the values of `Authorization`,
 * `Proxy-Authorization`, `Cookie`, `Set-Cookie` and `X-…` headers of these names (HEADER).
 */
const SECRET_HEADER = /auth|token|key|secret|passw|cookie|session|signature|credential/i;
// A header's name and ':' (in an ffmpeg debug log, an error quoting a request's head, a JSON
// object of headers: `"authorization":"Basic …"`, JSON-escaped or not): its value is starred
// when the name is a credential header's (secretHeaderName). Names are bounded and start only
// where a word starts (or after JSON's `\r\n`), so one scan is linear on any line; a value is
// read once, and the scan goes on after it.
const HEADER = /(?:(?<![\w\\-])|(?<=\\[rn]))([a-z][a-z0-9_-]{0,63})(\\?")?[ \t]*:[ \t]*(\\?")?/gi;
// A value not in quotes runs to the end of its line (a CR or LF, JSON's `\r` or `\n`), or to a
// quote that closes a JSON string (before whitespace, `,"`, '}', ']' or the end): a quote before
// anything else is the value's (Digest's `username="admin",realm=…`); a backslash takes the quote
// or backslash after it.
const HEADER_VALUE = /(?:[^\r\n"\\]|\\["\\]|\\(?![rn"\\])|"(?!\s|,\s*"|[}\]]|$))*/y;
// In quotes (a JSON string's value), to the closing quote: `"` unescaped, or `\"` when it opened the value.
const QUOTED_VALUE = /(?:[^"\\]|\\.)*/y;
const ESCAPED_QUOTED_VALUE = /(?:[^\\]|\\(?!"))*/y;
/** An HTTP authentication scheme (`Basic`, `Bearer`, `Digest`, …) and the space after it, before its credentials: kept where they are starred. */
const AUTH_SCHEME_AT = /[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*[ \t]+(?=[^\s"\\])/y;

/** Whether a header of this name carries credentials whose value the patterns star: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, and `X-` headers named as SECRET_HEADER says (`X-API-Key`, `X-Auth-Token`). */
function secretHeaderName(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'authorization' || n === 'proxy-authorization' || n === 'cookie' || n === 'set-cookie' || (n.startsWith('x-') && SECRET_HEADER.test(n));
}

/** `rtsp://admin:hunter2@cam/stream?token=abc` → `rtsp://***@cam/stream?token=***` (also with one slash: a mistyped URL, read as a path, is named in errors). */
export function redact(text: string): string {
  if (secrets.size === 0) return starred(text, patternRanges(text));
  // The remembered secrets first (the patterns may stop inside one: `s"}t`), and the patterns in
  // what is left; and the patterns in the text as it came too: a secret may be the very text a
  // pattern reads (a camera's password `password`, `token` or `rtsp`), and starred first it hid
  // the `?password=` or `rtsp://` of another URL (a camera's redirect), whose secret was printed.
  const known = knownRanges(text);
  if (!known.length) return starred(text, patternRanges(text));
  const once = starred(text, known);
  const after = patternRanges(once).map(([from, to]): Range => [original(known, from, 'from'), original(known, to, 'to')]);
  return starred(text, [...known, ...after, ...patternRanges(text)]);
}

/** A part of a text to be starred, [from, to): `***` in its place (an empty one: `***` put there). */
type Range = [number, number];

/** `text` with each range (merged where they touch or overlap) replaced by `***`. */
function starred(text: string, ranges: Range[]): string {
  if (!ranges.length) return text;
  ranges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let out = '';
  let done = 0;
  let [from, to] = ranges[0];
  for (const [f, t] of ranges) {
    if (f <= to) {
      to = Math.max(to, t);
      continue;
    }
    out += `${text.slice(done, from)}***`;
    done = to;
    [from, to] = [f, t];
  }
  return `${out}${text.slice(done, from)}***${text.slice(to)}`;
}

/**
 * A place in the text the `known` ranges were starred in (each `***`), as a place in the text
 * before: one inside a `***` is its range's start (`from`) or end (`to`).
 */
function original(known: readonly Range[], at: number, end: 'from' | 'to'): number {
  let shift = 0;
  for (const [f, t] of known) {
    const star = f + shift;
    if (at <= star) break;
    if (at < star + 3 || (at === star + 3 && end === 'to')) return end === 'from' ? f : t;
    shift += 3 - (t - f);
  }
  return at - shift;
}

/**
 * The parts of `text` the patterns star: the user-info of a URL (USERINFO, CUT_USERINFO), the
 * value of a secret query parameter (PARAM, with what follows a '#' in it: SRT's
 * `passphrase=abc#def`, which ffmpeg reads whole, to '&'), and what follows `=***#`.
 */
function patternRanges(text: string): Range[] {
  if (text.indexOf(':') < 0 && text.indexOf('=') < 0) return [];
  const ranges: Range[] = [];
  const inside = (at: number) => ranges.some(([f, t]) => at >= f && at < t);
  for (const m of text.matchAll(USERINFO)) {
    const from = m.index + m[1].length;
    if (m[2]) ranges.push([from, from + m[2].length]);
  }
  for (const m of text.matchAll(CUT_USERINFO)) {
    const from = m.index + m[1].length;
    if (m[2].includes(':') && !inside(m.index)) ranges.push([from, from + m[2].length]);
  }
  const users = ranges.length;
  for (const m of text.matchAll(PARAM)) {
    if (!SECRET_NAMES.has(paramName(m[2])) || ranges.slice(0, users).some(([f, t]) => m.index >= f && m.index < t)) continue;
    const from = m.index + m[1].length + m[2].length + 1;
    let to = m.index + m[0].length;
    if (text[to] === '#') to += /^#[^&\s'"]*/.exec(text.slice(to, to + 4096))![0].length;
    ranges.push([from, to]);
  }
  for (const m of text.matchAll(SECRET_REST)) ranges.push([m.index + 1, m.index + m[0].length]);
  headerRanges(text, ranges);
  return ranges;
}

/** Adds to `ranges` the values of credential headers in `text` (HEADER): an `Authorization`'s after its scheme (`Basic ***`, `Digest ***`), the others' whole. */
function headerRanges(text: string, ranges: Range[]): void {
  HEADER.lastIndex = 0;
  for (let m = HEADER.exec(text); m; m = HEADER.exec(text)) {
    if (!secretHeaderName(m[1])) continue;
    let from = HEADER.lastIndex;
    if (/authorization$/i.test(m[1])) {
      AUTH_SCHEME_AT.lastIndex = from;
      if (AUTH_SCHEME_AT.test(text)) from = AUTH_SCHEME_AT.lastIndex;
    }
    const value = m[3] === '"' ? QUOTED_VALUE : m[3] ? ESCAPED_QUOTED_VALUE : HEADER_VALUE;
    value.lastIndex = from;
    value.test(text);
    if (value.lastIndex > from) ranges.push([from, value.lastIndex]);
    HEADER.lastIndex = Math.max(value.lastIndex, HEADER.lastIndex);
  }
}

/** Secrets shorter than this are not looked for alone (`1` would star every digit); the patterns still find them in a URL. */
export const MIN_SECRET_LENGTH = 4;
/**
 * The most secrets remembered, and the most characters of their forms: the least recently
 * remembered are forgotten first (a cameras topic rewritten with new passwords: the old ones go).
 * A cluster worker reads every camera of the topic (cluster.maxCameras, 10 000 by default), each
 * with a password and secret query values: at 4096, first-in first-out, a camera's password
 * was forgotten while it ran, and printed whole where no pattern bounds it (`s"}t`).
 */
export const MAX_SECRETS = 65_536;
const MAX_SECRET_CHARS = 16 * 1024 * 1024;
/** The secrets remembered (rememberSecret), each to the forms it is looked for in, least recently remembered first. */
const secrets = new Map<string, string[]>();
/** How many remembered secrets have each form (two may share one: `a%41b` decoded is `aAb`). */
const formCount = new Map<string, number>();
/**
 * The forms by their first MIN_SECRET_LENGTH characters (knownKey), then by length (the lengths
 * longest first): many may share a beginning (JSON Web Tokens share their first 36 characters),
 * and a list of them was searched, and kept in order, one by one.
 */
const byKey = new Map<number, { lengths: number[]; forms: Map<number, Set<string>> }>();
/** Which characters start a form (the places `starKnown` looks up). */
const starts = new Uint8Array(65536);
let secretChars = 0;

/** A key of the MIN_SECRET_LENGTH characters of `text` at `at` (FNV-1a; a collision costs a comparison). */
function knownKey(text: string, at: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < at + MIN_SECRET_LENGTH; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h & 0x3fffffff;
}

/**
 * Where the forms of the remembered secrets are in `text`: at each place, the longest form that
 * starts there. One pass over the text, looking up only the places whose character
 * starts a form, whatever the number of secrets: one pattern of every form (4096 secrets, 12 forms
 * each) took a second to make again after each secret remembered, and 110 ms for 100 KB of text.
 */
function knownRanges(text: string): Range[] {
  const ranges: Range[] = [];
  for (let at = 0; at <= text.length - MIN_SECRET_LENGTH; ) {
    const bucket = starts[text.charCodeAt(at)] ? byKey.get(knownKey(text, at)) : undefined;
    const length = bucket?.lengths.find((l) => at + l <= text.length && bucket.forms.get(l)!.has(text.slice(at, at + l)));
    if (length === undefined) {
      at++;
      continue;
    }
    ranges.push([at, at + length]);
    at += length;
  }
  return ranges;
}

function addForm(form: string): void {
  const n = formCount.get(form) ?? 0;
  formCount.set(form, n + 1);
  if (n > 0) return;
  secretChars += form.length;
  starts[form.charCodeAt(0)] = 1;
  const key = knownKey(form, 0);
  let bucket = byKey.get(key);
  if (!bucket) byKey.set(key, (bucket = { lengths: [], forms: new Map() }));
  const same = bucket.forms.get(form.length);
  if (same) return void same.add(form);
  bucket.forms.set(form.length, new Set([form]));
  bucket.lengths = [...bucket.forms.keys()].sort((a, b) => b - a);
}

function dropForm(form: string): void {
  const n = formCount.get(form) ?? 0;
  if (n > 1) return void formCount.set(form, n - 1);
  formCount.delete(form);
  secretChars -= form.length;
  const key = knownKey(form, 0);
  const bucket = byKey.get(key);
  const same = bucket?.forms.get(form.length);
  if (!bucket || !same) return;
  same.delete(form);
  if (same.size) return;
  bucket.forms.delete(form.length);
  bucket.lengths = bucket.lengths.filter((l) => l !== form.length);
  if (!bucket.lengths.length) byKey.delete(key);
  // (Its first character may start another form: left set, which costs a look-up.)
}

/**
 * Remembers a secret argus was given, so that `redact` replaces it wherever it appears in the
 * forms text may hold it: as given, percent-decoded, percent-encoded, and each of these
 * JSON-escaped once and twice (a record inside a log line's string). Forms shorter than
 * MIN_SECRET_LENGTH are left to the patterns. One remembered again is the most recent again.
 */
export function rememberSecret(secret: string): void {
  if (secret.length < MIN_SECRET_LENGTH) return;
  const had = secrets.get(secret);
  if (had) {
    secrets.delete(secret);
    secrets.set(secret, had);
    return;
  }
  const plain = new Set([secret, percentDecoded(secret)]);
  for (const p of [...plain]) plain.add(encodeURIComponent(p));
  const forms = new Set<string>();
  for (const p of plain) {
    const once = JSON.stringify(p).slice(1, -1);
    forms.add(p).add(once).add(JSON.stringify(once).slice(1, -1));
  }
  const kept = [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH);
  secrets.set(secret, kept);
  kept.forEach(addForm);
  for (const [old, oldForms] of secrets) {
    if (secrets.size <= MAX_SECRETS && secretChars <= MAX_SECRET_CHARS) break;
    if (old === secret) break;
    secrets.delete(old);
    oldForms.forEach(dropForm);
  }
}

/** Remembers the secrets of a URL (rememberSecret): the password of its user-info, and each secret query parameter's value. */
export function rememberUrlSecrets(url: string): void {
  const info = /^[a-z][a-z0-9+.-]*:\/{1,3}([^/?#]*)@/i.exec(url)?.[1];
  if (info !== undefined && info.includes(':')) rememberSecret(info.slice(info.indexOf(':') + 1));
  for (const m of url.matchAll(/[?&;#]([^=&?;#]*)=([^&#]*)/g)) if (isSecretParam(m[1])) rememberSecret(m[2]);
}

/** `Name: value` header lines (ffmpeg's `-headers`): the values of credential headers (SECRET_HEADER) remembered, each cookie's of a `Cookie` line, and an `Authorization`'s without its scheme. */
function rememberHeaderSecrets(lines: string): void {
  for (const line of lines.split(/\r?\n/)) {
    const m = /^\s*([^:\s]+)\s*:(.*)$/.exec(line);
    if (!m || !SECRET_HEADER.test(m[1])) continue;
    const name = m[1];
    const value = m[2].trim();
    if (/^cookie$/i.test(name)) {
      for (const pair of value.split(';')) rememberCookie(pair);
      continue;
    }
    // An `Authorization`'s credentials alone: its scheme, remembered with them, would be starred too.
    AUTH_SCHEME_AT.lastIndex = 0;
    rememberSecret(/authorization$/i.test(name) && AUTH_SCHEME_AT.test(value) ? value.slice(AUTH_SCHEME_AT.lastIndex) : value);
  }
}

/** A cookie's value (`name=value`, of a `Cookie` header or one line of ffmpeg's `-cookies`, attributes after `;` aside). */
function rememberCookie(cookie: string): void {
  const pair = cookie.split(';')[0];
  const eq = pair.indexOf('=');
  if (eq >= 0) rememberSecret(pair.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1'));
}

/**
 * ffmpeg input options whose value is or holds a secret, and how it is remembered: header lines
 * (their credentials), cookies (`-cookies`: one `Set-Cookie`-like line each), a URL (a proxy's
 * user and password, a referer's secret query values), or the value whole (SRT's passphrase,
 * SRTP's keys, a decryption key, RTMP's connection data). Not all of them are options a source
 * may give (schema/input-args refuses the others); each is remembered where given all the same.
 */
const SECRET_OPTIONS: Readonly<Record<string, (value: string) => void>> = {
  headers: rememberHeaderSecrets,
  cookies: (v) => v.split(/\r?\n/).forEach(rememberCookie),
  http_proxy: rememberUrlSecrets,
  referer: rememberUrlSecrets,
  passphrase: rememberSecret,
  srtp_in_params: rememberSecret,
  srtp_out_params: rememberSecret,
  decryption_key: rememberSecret,
  cenc_decryption_key: rememberSecret,
  key: rememberSecret,
  // `S:data`, `NS:name:data` items, space-separated: each item's data too.
  rtmp_conn: (v) => {
    rememberSecret(v);
    for (const item of v.split(' ')) rememberSecret(item.replace(/^(?:N[BNOSZ]:[^:]*:|[BNOSZ]:)/, ''));
  },
};

/** Remembers the secrets of a source's ffmpeg input options (`inputArgs`: option and value words; SECRET_OPTIONS), so that `redact` stars them wherever they are printed. */
export function rememberArgSecrets(args: readonly string[]): void {
  for (let i = 0; i + 1 < args.length; i++) {
    const name = /^-([a-z_]+)$/.exec(args[i])?.[1];
    if (name && Object.hasOwn(SECRET_OPTIONS, name)) SECRET_OPTIONS[name](args[i + 1]);
  }
}

/** Forgets every secret remembered (tests). */
export function forgetSecrets(): void {
  secrets.clear();
  interpolated.clear();
  formCount.clear();
  byKey.clear();
  starts.fill(0);
  secretChars = 0;
}

/** `text` with each %XX decoded (UTF-8), or as it is where that fails. */
function percentDecoded(text: string): string {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether a query parameter of this name carries a secret (its value is redacted: `pwd`, `token`, …), the name as written in the URL. */
export function isSecretParam(name: string): boolean {
  return SECRET_NAMES.has(paramName(name));
}

/** A parameter's name as a server reads it: percent-decoded (`to%6Ben` is `token`), in lower case. */
function paramName(name: string): string {
  return percentDecoded(name.toLowerCase()).toLowerCase();
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
 * The configuration's values made with an environment variable's value (`${env:VAR}`, whole or
 * in part), as they came out (rememberInterpolated): `mention` repeats none of them, whatever its
 * shape. At most MAX_INTERPOLATED, of at most MAX_INTERPOLATED_LENGTH characters each, the
 * oldest forgotten first. For the process's life, as the secrets are: the same text written in
 * another file is not repeated either.
 */
const interpolated = new Set<string>();
const MAX_INTERPOLATED = 65_536;
/**
 * The longest value remembered: `mention` repeats no value longer than a name (64), an id is at
 * most 128. Longer ones were kept whole for the process's life: a worker that read 3,000
 * camera records of 60 KB with a `${env:ARGUS_CAMERA_…}` in them, all refused, held 181 MB more
 * (65,536 of them, 4 GB), whoever could write the cameras topic.
 */
const MAX_INTERPOLATED_LENGTH = 256;

/**
 * An environment variable's name that says its value is a secret (`KAFKA_PASSWORD`, `CAM_PW`,
 * `API_TOKEN`, `SECRET_KEY`, `BASIC_AUTH`, `apiKey`): its value is remembered as one
 * (rememberSecret) wherever the configuration uses it, so `redact` stars it wherever it is printed
 * (a typo that puts it in a path or a class name), not only in the fields the schema knows for
 * secrets. Judged by the name's words (secretVariable), not by any text inside them: a value
 * starred that is no secret hides it in every log line, path and API answer (the shell's `PWD`,
 * the working folder, starred every path under it; `AUTHOR`, `SESSION_NAME` a source's id).
 */
const SECRET_WORDS: ReadonlySet<string> = new Set(['pw', 'pwd', 'pass', 'passwd', 'password', 'passwords', 'passphrase', 'secret', 'secrets', 'token', 'tokens', 'credential', 'credentials', 'creds', 'auth', 'authorization', 'cookie', 'cookies', 'apikey', 'sig', 'signature', 'sessionid']);
/** Words that are a secret's name only as the name's last word (`API_KEY`, `KAFKA_SSL_KEY`; not `KEY_FRAMES`, `KEY_INTERVAL`). */
const SECRET_LAST_WORDS: ReadonlySet<string> = new Set(['key', 'keys']);
/** Inside one word, text that names a secret (`DBPASSWORD`, `CLIENTSECRET`, `AUTHTOKEN`, `BASICAUTH`, `PRIVATEKEY`). */
const SECRET_IN_WORD = /passw|passphrase|secret|credential|cookie|token$|auth$|apikey|privatekey|accesskey/;
/** The shell's folders (`${env:PWD}/alerts.jsonl`): named like a password, never one. */
const SHELL_FOLDERS: ReadonlySet<string> = new Set(['PWD', 'OLDPWD']);

/** Whether an environment variable's name says its value is a secret (see SECRET_WORDS). */
export function secretVariable(name: string): boolean {
  if (SHELL_FOLDERS.has(name)) return false;
  const words = name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== '');
  return words.some((w, i) => SECRET_WORDS.has(w) || SECRET_IN_WORD.test(w) || (i === words.length - 1 && SECRET_LAST_WORDS.has(w)) || (w === 'session' && words[i + 1] === 'id') || (w === 'private' && words[i + 1] === 'key'));
}

/**
 * Notes a configuration value made with environment variables `names` (set ones): `mention`
 * repeats it no more (`classes: [${env:KAFKA_PASSWORD}]`, a typo, printed the password in the
 * unknown-class error: it has a name's shape), and where a variable's name says it holds a secret
 * (secretVariable), its value is remembered as one.
 */
export function rememberInterpolated(value: string, names: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): void {
  // As with rememberSecret, a value shorter than MIN_SECRET_LENGTH is no secret worth hiding
  // (`a`, `on`), and hiding it would hide the same text written in the file.
  if (value.length >= MIN_SECRET_LENGTH && value.length <= MAX_INTERPOLATED_LENGTH) {
    interpolated.delete(value);
    interpolated.add(value);
    if (interpolated.size > MAX_INTERPOLATED) interpolated.delete(interpolated.values().next().value as string);
  }
  for (const name of names) {
    const v = env[name];
    if (v && secretVariable(name)) rememberSecret(v);
  }
}

/** Whether a configuration value was made from an environment variable (rememberInterpolated). */
export function interpolatedValue(value: string): boolean {
  return interpolated.has(value);
}

/**
 * A value an error message may repeat, quoted, or undefined. Messages about configuration repeat a
 * value only when it has the shape of a name (an id, a reference to one, a misspelt key) and was
 * not made from an environment variable (rememberInterpolated): any other text may hold a secret
 * (a password given to an enum field, or as a class name, was printed in the error). Anything
 * else, numbers included (`mention` is for text), is left out.
 */
export function mention(value: unknown): string | undefined {
  return typeof value === 'string' && NAME_SHAPE.test(value) && !interpolated.has(value) ? `"${value}"` : undefined;
}

/**
 * A Kafka broker address as it may be written out: `host:port` as it is; credentials written
 * into it (`user:secret@host:9092`, `kafka://user:secret@host:9092`, which Kafka clients do not
 * take: SASL settings carry them) become `***@host:9092`, and secret query parameters `***`.
 */
export function redactBroker(address: string): string {
  return redact(address).replace(/^((?:[a-z][a-z0-9+.-]*:\/\/)?)[^\s/]*@/i, '$1***@');
}
