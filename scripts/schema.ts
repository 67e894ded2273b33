/**
 * Writes the message JSON Schema from its zod definition (src/sinks/message.ts).
 *
 *   npm run schema                    write src/sinks/message.schema.json
 *   npm run schema -- --check         exit 1, naming the file, when the committed file differs
 *   npm run schema -- [--check] FILE  another file instead (the tests check a copy)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageJsonSchemaText } from '../src/sinks/message.js';

const args = process.argv.slice(2);
const check = args.includes('--check');
const rest = args.filter((a) => a !== '--check');
if (rest.length > 1 || rest.some((a) => a.startsWith('-'))) {
  process.stderr.write(`usage: tsx scripts/schema.ts [--check] [FILE]\n`);
  process.exit(2);
}
const file = resolve(rest[0] ?? fileURLToPath(new URL('../src/sinks/message.schema.json', import.meta.url)));
// A file named on the command line is named back as given; the default file, relative to here.
const name = rest[0] ?? (relative(process.cwd(), file) || file);
const text = messageJsonSchemaText();

if (check) {
  let committed: string | undefined;
  try {
    committed = readFileSync(file, 'utf8');
  } catch (e) {
    process.stderr.write(`${name}: cannot read (${(e as NodeJS.ErrnoException).code}); run \`npm run schema\` to write it\n`);
    process.exit(1);
  }
  if (committed !== text) {
    process.stderr.write(`${name} differs from the schema in src/sinks/message.ts; run \`npm run schema\` and commit the result\n`);
    process.exit(1);
  }
  process.stdout.write(`${name} is up to date\n`);
} else {
  writeFileSync(file, text);
  process.stdout.write(`wrote ${name}\n`);
}
