import { hostname } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { rememberInterpolated } from '../core/redact.js';

// A default holds no `${`: `${env:A,${env:B}}` was read as A's value (or the default "${env:B")
// followed by a stray "}".
const EXPR = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?:,((?:(?!\$\{)[^}])*))?\}/g;
const HOST = /\$\{hostname\}/g;
const WHOLE = /^\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?:,((?:(?!\$\{)[^}])*))?\}$/;

export class InterpolationError extends Error {
  constructor(
    readonly path: string,
    readonly variable: string,
    why = `environment variable ${variable} is not set and has no default`,
  ) {
    super(`${path}: ${why}`);
  }
}

/**
 * Why the file's own text holds a `${` that starts none of the expressions argus replaces, or
 * undefined. `${HOME}`, `${ENV:CAM_PW}`, `${env:A,${env:B}}` or an unclosed `${env:A` were kept
 * as text without a word: a password sent to the camera as "${CAM_PW}", a file "./${HOME}/x.mp4".
 * The text itself is not repeated (it may be a secret), only a name-shaped `${NAME}`.
 */
function strayExpression(text: string): string | undefined {
  const rest = text.replace(HOST, 'host').replace(EXPR, '');
  if (!rest.includes('${')) return undefined;
  const named = /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}/i.exec(rest);
  const hint = named ? `\`\${${named[1]}}\` is no expression argus replaces: write \`\${env:${named[1]}}\`` : 'a `${` that starts no expression argus replaces';
  return `${hint} (it replaces \`\${env:VAR}\`, \`\${env:VAR,default}\`, whose default holds no other \`\${env:…}\`, and \`\${hostname}\`; a value that must hold \`\${\` as it is can come from an environment variable)`;
}

/**
 * This machine's name as an id (config's `id`: letters, digits, dot, dash, underscore; others
 * become `_`): what `${hostname}` gives, and the start of a worker's default id.
 */
export function hostId(name = hostname()): string {
  const h = name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64);
  return h === '' || /^\.+$/.test(h) ? 'localhost' : h;
}

/**
 * Replaces `${hostname}`, `${env:VAR}` and `${env:VAR,default}` in every string of a parsed YAML
 * document (`${hostname}` first, so it may be a default: `${env:ARGUS_WORKER_ID,${hostname}}`).
 * A string that is exactly one expression is re-read as a YAML scalar, so `${env:FPS,30}`
 * becomes the number 30 and `${env:LOOP,false}` the boolean false.
 */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv = process.env, path = '', raw?: Map<string, string>, from?: Map<string, string>): unknown {
  if (typeof value === 'string') {
    const stray = value.includes('${') ? strayExpression(value) : undefined;
    if (stray) throw new InterpolationError(path || '(root)', '', stray);
    const text = value.includes('${hostname}') ? value.replace(HOST, hostId()) : value;
    const whole = WHOLE.exec(text.trim());
    // `from`, when given, gets the variables (set ones: a default is the file's own text) each value was made with, by path.
    const used: string[] = [];
    const note = (name: string) => {
      if (env[name] === undefined || env[name] === '') return;
      used.push(name);
      if (from && !from.get(path)?.split(', ').includes(name)) from.set(path, from.has(path) ? `${from.get(path)}, ${name}` : name);
    };
    if (whole) {
      const v = lookup(whole[1], whole[2], env, path);
      note(whole[1]);
      // A value made from the environment is never repeated in an error (core/redact.ts, mention).
      if (used.length) rememberInterpolated(v, used, env);
      const parsed = parseScalar(v);
      // Remember the text, so a field that wants a string (a password "123456") can get it back.
      if (typeof parsed !== 'string') raw?.set(path, v);
      return parsed;
    }
    const out = text.replace(EXPR, (_m: string, name: string, def: string | undefined) => {
      note(name);
      return lookup(name, def, env, path);
    });
    if (used.length) rememberInterpolated(out, used, env);
    return out;
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, `${path}[${i}]`, raw, from));
  if (value && typeof value === 'object') {
    // Each key an own property: a key `__proto__` (the parsers make it one) assigned as
    // `out[k] = …` set the object's prototype instead, whose keys the schema then read as the
    // object's own, and its error named them and not `__proto__`.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, path ? `${path}.${k}` : k, raw, from)]));
  }
  return value;
}

const LENIENT = Symbol('lenient');

/**
 * An environment for checking text whose `${env:…}` another process resolves (`argus cameras`:
 * the workers' environment): a variable is this one's, else its default, else '1', a stand-in
 * that most fields accept. (A proxy answering '1' for every missing variable hid the defaults:
 * `${env:ARGUS_CAMERA_ON,true}` read as 1, not a boolean.) `missing`, when given, collects each
 * variable stood in for, with where (a worker's YAML read by `argus cameras`, which needs only
 * some of its fields).
 */
export function lenientEnv(env: NodeJS.ProcessEnv = process.env, missing?: InterpolationError[]): NodeJS.ProcessEnv {
  return { ...env, [LENIENT]: missing ?? true } as NodeJS.ProcessEnv;
}

function lookup(name: string, def: string | undefined, env: NodeJS.ProcessEnv, path: string): string {
  const v = env[name];
  if (v !== undefined && v !== '') return v;
  if (def !== undefined) return def;
  const lenient = (env as { [LENIENT]?: true | InterpolationError[] })[LENIENT];
  if (Array.isArray(lenient)) lenient.push(new InterpolationError(path || '(root)', name));
  if (lenient) return '1';
  throw new InterpolationError(path || '(root)', name);
}

/**
 * A variable's text as the value it spells: a number or a boolean as such, anything else the
 * text exactly as set. A string YAML would read otherwise is kept as written (`s3cret #1` lost
 * its `#1` as a comment, `!pw` its tag, `"quoted"` its quotes), and YAML's warnings are silent
 * (an unresolved tag printed the secret that spelt it on stderr, outside redaction).
 */
function parseScalar(s: string): unknown {
  try {
    const v: unknown = parseYaml(s, { logLevel: 'silent' });
    return typeof v === 'number' || typeof v === 'boolean' ? v : s;
  } catch {
    return s;
  }
}
