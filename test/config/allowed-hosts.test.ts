import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { hostAllowed } from '../../src/server/http.js';

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

  it('a name written with its port, scheme or path is refused at load, saying how to write it: it never matched, and every route but the probes answered 403', () => {
    const problem = (entry: string): string => {
      try {
        parse(pipeline(`  allowedHosts: ["${entry}"]`));
      } catch (e) {
        expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
        return (e as Error).message.split('\n')[1];
      }
      throw new Error(`${entry} taken`);
    };
    expect(problem('cams.example:8080')).toBe('  server.allowedHosts[0]: a host name without its port (the Host header\'s port is not compared): cams.example, not cams.example:8080');
    expect(problem('https://cams.example')).toBe('  server.allowedHosts[0]: a host name alone, without a scheme or a path (cams.example, not https://cams.example/)');
    expect(problem('cams.example/dashboard')).toBe('  server.allowedHosts[0]: a host name alone, without a scheme or a path (cams.example, not https://cams.example/)');
    expect(problem('cams example')).toBe('  server.allowedHosts[0]: a host name alone, without a scheme or a path (cams.example, not https://cams.example/)');
  });

  it('an IPv6 address is taken with or without its brackets, and matches the Host that names it', () => {
    const hosts = parse(pipeline('  allowedHosts: ["[fd00::1]", "FD00::2"]')).server?.allowedHosts;
    expect(hosts).toEqual(['fd00::1', 'FD00::2']);
    for (const host of ['[fd00::1]:8080', '[fd00::2]']) expect(hostAllowed(host, '0.0.0.0', hosts), host).toBe(true);
    expect(hostAllowed('[fd00::3]:8080', '0.0.0.0', hosts)).toBe(false);
    expect(() => parse(pipeline('  allowedHosts: ["[::1]:8080"]'))).toThrow(/server.allowedHosts\[0\]: a host name without its port/);
  });
});
