import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';

const pipeline = (server: string) => `name: x\nsources:\n  - id: a\n    uri: /x.mp4\nserver:\n  port: 8080\n${server}\n`;
const parse = (text: string) => parseConfigText(text, PipelineSchema, 'p.yaml', {});

describe('server.allowedHosts', () => {
  it('an empty list is refused at load, naming the field: it served no name, and every route but the probes answered 403', () => {
    let error: unknown;
    try {
      parse(pipeline('  allowedHosts: []'));
    } catch (e) {
      error = e;
    }
    expect((error as { code?: string })?.code).toBe('VAP_ERR_CONFIG');
    expect((error as Error).message).toContain('server.allowedHosts: at least one host name ("*" for any; leave the field out for the default');
  });

  it('names, "*", and no field at all are taken', () => {
    expect(parse(pipeline('  allowedHosts: [cams.example]')).server?.allowedHosts).toEqual(['cams.example']);
    expect(parse(pipeline('  allowedHosts: ["*"]')).server?.allowedHosts).toEqual(['*']);
    expect(parse(pipeline('')).server?.allowedHosts).toBeUndefined();
  });
});
