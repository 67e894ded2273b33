import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z, ZodError, ZodTypeAny } from 'zod';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { InterpolationError, interpolateEnv } from './interpolate.js';
import { PipelineSchema, type PipelineConfig } from './schema.js';

const pathText = (path: readonly (string | number)[]) => path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : String(p)), '');

/** Formats zod issues as `path.to.field: message` lines. */
export function formatIssues(error: ZodError): string {
  return error.issues.map((i) => `  ${pathText(i.path) || '(root)'}: ${i.message}`).join('\n');
}

/**
 * `${env:PASSWORD}` holding `123456` was re-read as a number; where the schema wants a string,
 * put the variable's text back. Returns true when something was put back.
 */
function restoreStrings(doc: unknown, error: ZodError, raw: Map<string, string>): boolean {
  let changed = false;
  for (const i of error.issues) {
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
): z.infer<S> {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    const where = e instanceof YAMLParseError && e.linePos ? ` (line ${e.linePos[0].line})` : '';
    throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: not valid YAML${where}: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ArgusError(ErrorCodes.CONFIG, `${file}: expected a mapping at the top level`);
  }
  const raw = new Map<string, string>();
  try {
    doc = interpolateEnv(doc, env, '', raw);
  } catch (e) {
    if (e instanceof InterpolationError) throw new ArgusError(ErrorCodes.CONFIG, `${file}: ${e.message}`);
    throw e;
  }
  let result = schema.safeParse(doc);
  while (!result.success && raw.size > 0 && restoreStrings(doc, result.error, raw)) result = schema.safeParse(doc);
  if (!result.success) {
    throw new ArgusError(ErrorCodes.CONFIG, `${file}: invalid configuration\n${formatIssues(result.error)}`);
  }
  return result.data;
}

export async function readConfigFile<S extends ZodTypeAny>(file: string, schema: S, env?: NodeJS.ProcessEnv): Promise<z.infer<S>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
  return parseConfigText(text, schema, file, env);
}

export function loadPipeline(file: string, env?: NodeJS.ProcessEnv): Promise<PipelineConfig> {
  return readConfigFile(file, PipelineSchema, env);
}
