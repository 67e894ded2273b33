import { ArgusError, ErrorCodes } from '../core/errors.js';
import { interpolatedValue, mention } from '../core/redact.js';
import type { SourceConfig } from './schema.js';

/** A source's settings that name classes: its zones', lines' and conveyor-defect rules'. */
type ClassSettings = Pick<SourceConfig, 'zones' | 'lines' | 'rules'>;

/** `field: unknown class "x" (the model's labels include …)`: one name that is not a label. */
export function unknownClassText(name: string, labels: readonly string[], field: string): string {
  // The name is repeated (and labels like it suggested) only when it has a name's shape:
  // other text may be a secret from ${env:…} (README, "Pipelines").
  const shown = mention(name);
  const near = shown ? labels.filter((l) => l.startsWith(name.slice(0, 2))).slice(0, 5) : [];
  return `${field}: unknown class${shown ? ` ${shown}` : interpolatedValue(name) ? ' (its value comes from the environment)' : ''} (the model's labels include ${near.length ? near.join(', ') : labels.slice(0, 5).join(', ')}, …)`;
}

/**
 * Every class name of a source's zones, lines and rules that is not one of the model's labels,
 * each as unknownClassText says it, naming its field under `path` (`sources[0]`).
 */
export function unknownClasses(source: ClassSettings, labels: readonly string[], path: string): string[] {
  const lists: [string, readonly string[] | undefined][] = [
    ...source.zones.map((z, i): [string, readonly string[] | undefined] => [`${path}.zones[${i}].classes`, z.classes]),
    ...source.lines.map((l, i): [string, readonly string[] | undefined] => [`${path}.lines[${i}].classes`, l.classes]),
    ...source.rules.flatMap((r, i): [string, readonly string[] | undefined][] =>
      r.type === 'conveyor-defect' ? [[`${path}.rules[${i}].classes`, r.classes], [`${path}.rules[${i}].allowed`, r.allowed]] : [],
    ),
  ];
  const known = new Set(labels);
  return lists.flatMap(([field, names]) => (names ?? []).flatMap((n, i) => (known.has(n) ? [] : [unknownClassText(n, labels, `${field}[${i}]`)])));
}

/**
 * Throws one VAP_ERR_CONFIG naming every unknown class of `sources` (each with its config path,
 * `sources[0]`), after `where` (`FILE: `, or nothing): one line for one, else the count and a
 * line each, as a configuration's other errors are listed. A start used to stop at the first,
 * so a file with three misspelt classes took three runs to put right.
 */
export function checkClasses(sources: readonly { source: ClassSettings; path: string }[], labels: readonly string[], where = ''): void {
  const found = sources.flatMap((s) => unknownClasses(s.source, labels, s.path));
  if (found.length === 0) return;
  if (found.length === 1) throw new ArgusError(ErrorCodes.CONFIG, `${where}${found[0]}`);
  throw new ArgusError(ErrorCodes.CONFIG, `${where}${found.length} unknown classes\n${found.map((f) => `  ${f}`).join('\n')}`);
}
