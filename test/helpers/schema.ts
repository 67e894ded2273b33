import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** The committed message schema (test/sinks/schema.test.ts proves it is what `npm run schema` generates). */
export const SCHEMA_FILE = resolve(__dirname, '../../src/sinks/message.schema.json');
const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
const ajv = new Ajv2020.default({ allErrors: true, strict: false });
addFormats.default(ajv);
const validate = ajv.compile(schema);

/** ajv's errors for `msg` against the v1 message schema, or '' when it is valid. */
export function messageErrors(msg: unknown): string {
  return validate(msg) ? '' : ajv.errorsText(validate.errors);
}

/** Throws with ajv's errors unless `msg` is a valid v1 message. */
export function assertValidMessage(msg: unknown): void {
  const errors = messageErrors(msg);
  if (errors) throw new Error(`message does not match the schema: ${errors}\n${JSON.stringify(msg).slice(0, 300)}`);
}
