import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';

const HINT = '(write true or false: YAML reads yes, no, on and off as text, and 1 and 0 as numbers)';
const problem = (source: string, env: NodeJS.ProcessEnv = {}): string => {
  try {
    parseConfigText(`name: x\nsources:\n  - id: a\n    uri: /x.mp4\n${source}\n`, PipelineSchema, 'p.yaml', env);
  } catch (e) {
    expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
    return (e as Error).message;
  }
  throw new Error('taken');
};

describe("a boolean written as YAML 1.1 or a shell spells it says how to write it (it said only 'Expected boolean, received string')", () => {
  it.each(['yes', 'no', 'On', 'OFF', 'y', '"true"', '1', '0'])('loop: %s', (v) => {
    expect(problem(`    loop: ${v}`)).toContain(`sources[0].loop: Expected boolean, received ${/^\d$/.test(v) ? 'number' : 'string'} ${HINT}`);
  });

  it('from the environment too, naming the variable', () => {
    expect(problem('    loop: ${env:LOOP}', { LOOP: '1' })).toContain(`sources[0].loop: Expected boolean, received number ${HINT} (its value comes from the environment: LOOP)`);
  });

  it('another value is not taken for a boolean spelt otherwise', () => {
    const m = problem('    loop: maybe');
    expect(m).toContain('sources[0].loop: Expected boolean, received string');
    expect(m).not.toContain(HINT);
    expect(problem('    fps: "yes"')).not.toContain(HINT);
  });

  it('a field that takes a boolean or a section (sinks.kafka.ssl: yes) says it too', () => {
    expect(problem('sinks:\n  kafka:\n    brokers: [b:9092]\n    ssl: yes')).toContain(`sinks.kafka.ssl: Expected boolean or object, received string ${HINT}`);
    expect(problem('sinks:\n  kafka:\n    brokers: [b:9092]\n    ssl: maybe')).not.toContain(HINT);
  });
});
