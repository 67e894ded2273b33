import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const schema = JSON.parse(readFileSync(resolve(__dirname, '../../src/sinks/message.schema.json'), 'utf8'));
const ajv = new Ajv2020.default({ allErrors: true, strict: false });
addFormats.default(ajv);
const validate = ajv.compile(schema);

/** Throws with ajv's errors unless `msg` is a valid v1 message. */
export function assertValidMessage(msg: unknown): void {
  if (!validate(msg)) throw new Error(`message does not match the schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(msg).slice(0, 300)}`);
}
