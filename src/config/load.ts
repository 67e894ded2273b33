import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z, ZodError, ZodTypeAny } from 'zod';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { InterpolationError, interpolateEnv } from './interpolate.js';
import { PipelineSchema, type PipelineConfig } from './schema.js';

/** Formats zod issues as `path.to.field: message` lines. */
export function formatIssues(error: ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : String(p)), '');
      return `  ${path || '(root)'}: ${i.message}`;
    })
    .join('\n');
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
  try {
    doc = interpolateEnv(doc, env);
  } catch (e) {
    if (e instanceof InterpolationError) throw new ArgusError(ErrorCodes.CONFIG, `${file}: ${e.message}`);
    throw e;
  }
  const result = schema.safeParse(doc);
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
