import { Alias } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseCamera } from '../../src/cluster/view.js';
import { parseConfigText } from '../../src/config/load.js';
import { CamerasFileSchema, PipelineSchema } from '../../src/config/schema.js';
import { ErrorCodes } from '../../src/core/errors.js';

/**
 * YAML merge keys (`<<: *defaults`), as docker-compose and CI files share settings: the yaml
 * library reads YAML 1.2, where `<<` is a plain key, and the pipeline was refused with
 * "Unrecognized key(s) in object: a key that is not a field name".
 */
const errorOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected an error');
};

describe('YAML merge keys', () => {
  it('a source takes the fields of another through <<: *anchor, its own fields winning', () => {
    const p = parseConfigText(
      ['sources:', '  - &cam', '    id: a', '    uri: /a.mp4', '    rate: fast', '    decode: {threads: 2}', '  - <<: *cam', '    id: b', '    uri: /b.mp4', '    rate: native', ''].join('\n'),
      PipelineSchema,
      'p.yaml',
      {},
    );
    expect(p.sources.map((s) => [s.id, s.uri, s.rate, s.decode.threads])).toEqual([
      ['a', '/a.mp4', 'fast', 2],
      ['b', '/b.mp4', 'native', 2],
    ]);
  });

  it('a list of mappings merged, in a cameras file', () => {
    const f = parseConfigText(
      ['cameras:', '  - &net {id: a, uri: "rtsp://cam-a/s", rtspTransport: udp}', '  - &slow {id: s, uri: /s.mp4, fps: 5}', '  - <<: [*net, *slow]', '    id: c', ''].join('\n'),
      CamerasFileSchema,
      'c.yaml',
      {},
    );
    expect(f.cameras[2].source).toMatchObject({ id: 'c', uri: 'rtsp://cam-a/s', rtspTransport: 'udp', fps: 5 });
  });

  it('merges count against the alias cap ("billion laughs" through merges)', () => {
    let yaml = 'sources:\n  - {id: a, uri: /a.mp4}\n';
    yaml += 'extra:\n  a0: &a0 {k: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n';
    for (let i = 1; i < 20; i++) yaml += `  a${i}: &a${i} {<<: [*a${i - 1}], k${i}: [*a${i - 1}, *a${i - 1}, *a${i - 1}]}\n`;
    const e = errorOf(() => parseConfigText(yaml, PipelineSchema, 'p.yaml', {}));
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toMatch(/^p\.yaml: not valid YAML: aliases \(\*name\) that repeat an anchor \(&name\) too many times/);
  });

  it('merges of merges are bounded: a 400-byte chain of anchors merging the one before ten times is refused, not converted for seconds', () => {
    // Each merge converts its source afresh (the yaml library counts no alias it merges), so
    // the work multiplied by ten a line: six lines held the event loop 22 s, eight for hours.
    let yaml = 'sources:\n  - {id: a, uri: /a.mp4}\nx:\n  l0: &l0 {a: 1, b: 2, c: 3}\n';
    for (let i = 1; i <= 5; i++) yaml += `  l${i}: &l${i} {<<: [${Array(10).fill(`*l${i - 1}`).join(', ')}]}\n`;
    const e = errorOf(() => parseConfigText(yaml, PipelineSchema, 'p.yaml', {}));
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toMatch(/^p\.yaml: not valid YAML: merge keys \(<<\) that copy mappings too many times/);
    // A camera record from the topic takes the same path.
    expect(parseCamera('c', yaml.replace(/^sources:\n.*\n/, '')).error).toMatch(/merge keys \(<<\) that copy mappings too many times/);
  });

  it('many cameras merging one default mapping are read, each merge not a walk of the whole document', () => {
    // The yaml library found each merged alias's anchor by walking the whole document: 4000
    // cameras merging a default (52 KB) took 21 s, a 1 MB file hours.
    const lines = ['cameras:', '  - &d {id: c0, uri: "rtsp://cam/s", rtspTransport: tcp, fps: 5}'];
    for (let i = 1; i < 500; i++) lines.push(`  - {<<: *d, id: c${i}}`);
    const resolve = Alias.prototype.resolve;
    let walks = 0;
    Alias.prototype.resolve = function (this: Alias, ...args: Parameters<Alias['resolve']>) {
      walks++;
      return resolve.apply(this, args);
    };
    try {
      const f = parseConfigText(lines.join('\n') + '\n', CamerasFileSchema, 'c.yaml', {});
      expect(f.cameras).toHaveLength(500);
      expect(f.cameras[499].source).toMatchObject({ id: 'c499', rtspTransport: 'tcp', fps: 5 });
      expect(walks).toBe(0);
    } finally {
      Alias.prototype.resolve = resolve;
    }
  });

  it('a merge of something other than a mapping is a coded YAML error saying so', () => {
    const e = errorOf(() => parseConfigText('sources:\n  - &u /a.mp4\n  - {<<: *u, id: a}\n', PipelineSchema, 'p.yaml', {}));
    expect(e.code).toBe(ErrorCodes.CONFIG_FILE);
    expect(e.message).toBe('p.yaml: not valid YAML: a merge key (<<) whose value is not a mapping: `<<: *name` with the anchor &name on a mapping, or a list of such aliases');
  });

  it('a camera record written by hand in YAML may merge too', () => {
    const r = parseCamera('c', 'base: &b {uri: /c.mp4, fps: 5}\n');
    // (Only fields of a camera are taken: the anchor's holder is refused, the merge itself is read.)
    expect(r.error).toContain("Unrecognized key(s) in object: 'base'");
    expect(parseCamera('c', '{<<: {uri: /c.mp4, fps: 5}, id: c}\n').definition?.source).toMatchObject({ id: 'c', uri: '/c.mp4', fps: 5 });
  });
});
