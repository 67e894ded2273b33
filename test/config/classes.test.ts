import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkClasses, unknownClasses } from '../../src/config/classes.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { createPipeline } from '../../src/pipeline/pipeline.js';
import { fakeDetector } from '../helpers/fake-session.js';

const LABELS = ['person', 'car', 'bicycle'];

/** Two sources, three misspelt classes between them: a zone's, a line's and a conveyor-defect rule's. */
const PIPELINE = `name: t
model: { path: fake.onnx }
sources:
  - id: a
    uri: /nonexistent-a.mp4
    zones:
      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [person, persn]}
    lines:
      - {id: l, from: [0, 0.5], to: [1, 0.5], classes: [car]}
  - id: b
    uri: /nonexistent-b.mp4
    lines:
      - {id: l, from: [0, 0.5], to: [1, 0.5], classes: [carr]}
    rules:
      - {id: d, type: conveyor-defect, k: 2, n: 3, allowed: [bicycle, bicyle]}
`;
const config = () => parseConfigText(PIPELINE, PipelineSchema, 'p.yaml', {});

describe('unknown classes', () => {
  it('every unknown name of every zone, line and rule is found, each naming its field', () => {
    const c = config();
    expect(c.sources.flatMap((s, i) => unknownClasses(s, LABELS, `sources[${i}]`))).toEqual([
      `sources[0].zones[0].classes[1]: unknown class "persn" (the model's labels include person, …)`,
      `sources[1].lines[0].classes[0]: unknown class "carr" (the model's labels include car, …)`,
      `sources[1].rules[0].allowed[1]: unknown class "bicyle" (the model's labels include bicycle, …)`,
    ]);
  });

  it('one error (VAP_ERR_CONFIG) names them all; one alone is said on one line as before', () => {
    const c = config();
    let err: unknown;
    try {
      checkClasses(c.sources.map((s, i) => ({ source: s, path: `sources[${i}]` })), LABELS, 'p.yaml: ');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'VAP_ERR_CONFIG' });
    expect((err as Error).message).toBe(
      [
        'p.yaml: 3 unknown classes',
        `  sources[0].zones[0].classes[1]: unknown class "persn" (the model's labels include person, …)`,
        `  sources[1].lines[0].classes[0]: unknown class "carr" (the model's labels include car, …)`,
        `  sources[1].rules[0].allowed[1]: unknown class "bicyle" (the model's labels include bicycle, …)`,
      ].join('\n'),
    );
    expect(() => checkClasses([{ source: c.sources[0], path: 'sources[0]' }], LABELS, 'p.yaml: ')).toThrow(
      expect.objectContaining({ code: 'VAP_ERR_CONFIG', message: `p.yaml: sources[0].zones[0].classes[1]: unknown class "persn" (the model's labels include person, …)` }),
    );
    expect(() => checkClasses([{ source: { zones: [], lines: [], rules: [] }, path: 'sources[0]' }], LABELS)).not.toThrow();
  });

  it('a name that is not a name (a secret from ${env:…}) is not repeated', () => {
    const c = parseConfigText(`name: t\nsources:\n  - id: a\n    uri: /x.mp4\n    zones:\n      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: ["hunter2 !x"]}\n`, PipelineSchema, 'p.yaml', {});
    const [text] = unknownClasses(c.sources[0], LABELS, 'sources[0]');
    expect(text).toMatch(/^sources\[0\]\.zones\[0\]\.classes\[0\]: unknown class \(the model's labels include person, car, bicycle, …\)$/);
  });
});

describe('a pipeline with unknown classes', () => {
  let detector: Detector;
  beforeAll(async () => {
    ({ detector } = await fakeDetector()); // labels: person, car
  });
  afterAll(() => detector?.release());

  it('fails its start with one error naming every unknown class of every source (the first alone, before)', async () => {
    const err = await createPipeline(config(), { detector, configFile: 'p.yaml' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'VAP_ERR_CONFIG' });
    const message = (err as Error).message;
    expect(message).toMatch(/^p\.yaml: 4 unknown classes\n/);
    for (const field of ['sources[0].zones[0].classes[1]', 'sources[1].lines[0].classes[0]', 'sources[1].rules[0].allowed[0]', 'sources[1].rules[0].allowed[1]']) expect(message).toContain(`\n  ${field}: unknown class`);
  });
});
