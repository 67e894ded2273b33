import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { trackingGapWarnings } from '../../src/pipeline/pipeline.js';

/**
 * A zone's exitDelayMs (a line's forgetAfterMs) below tracking.lostTrackBufferMs: a track the
 * tracker re-finds after a gap between the two enters again. The README says to keep them at
 * least as long; such a config was taken without a word (new-user review).
 */
const parse = (yaml: string) => parseConfigText(yaml, PipelineSchema, 'p.yaml', {});
const zone = (extra = '') => `      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]]${extra}}\n`;
const line = (extra = '') => `      - {id: l, from: [0, 0.5], to: [1, 0.5]${extra}}\n`;

function warnings(yaml: string): string[] {
  const p = parse(yaml);
  return trackingGapWarnings(p.sources[0], p.tracking, 'p.yaml: sources[0]');
}

describe('zones and lines that forget a track before the tracker does are warned of, naming the field', () => {
  it('a raised lostTrackBufferMs with the default exitDelayMs and forgetAfterMs (2000)', () => {
    const w = warnings(`sources:\n  - id: a\n    uri: /x.mp4\n    zones:\n${zone()}    lines:\n${line()}tracking: {lostTrackBufferMs: 5000}\n`);
    expect(w).toEqual([
      'p.yaml: sources[0].zones[0].exitDelayMs (2000) is below tracking.lostTrackBufferMs (5000): a track the tracker re-finds after a gap between the two exits and enters again (a second zone-enter); keep it at least as long (README, "Tracking, zones, lines and rules")',
      'p.yaml: sources[0].lines[0].forgetAfterMs (2000) is below tracking.lostTrackBufferMs (5000): a track the tracker re-finds after a gap between the two learns its side afresh (a crossing in the gap is not counted); keep it at least as long',
    ]);
  });

  it("a lowered exitDelayMs against the tracker's default", () => {
    expect(warnings(`sources:\n  - id: a\n    uri: /x.mp4\n    zones:\n${zone(', exitDelayMs: 500')}`)).toEqual([expect.stringContaining('sources[0].zones[0].exitDelayMs (500) is below tracking.lostTrackBufferMs (1000, its default)')]);
  });

  it('none with the defaults, with them equal, or with tracking off (no zones or lines then)', () => {
    expect(warnings(`sources:\n  - id: a\n    uri: /x.mp4\n    zones:\n${zone()}    lines:\n${line()}`)).toEqual([]);
    expect(warnings(`sources:\n  - id: a\n    uri: /x.mp4\n    zones:\n${zone(', exitDelayMs: 3000')}tracking: {lostTrackBufferMs: 3000}\n`)).toEqual([]);
    expect(trackingGapWarnings({ zones: [], lines: [] }, { enabled: false }, 's')).toEqual([]);
  });
});
