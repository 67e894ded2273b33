/** The analyze operator: each result's alert list is its own, for operators after it to add to. */
import { from, lastValueFrom, map, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/analytics/analyze.js';
import type { AlertDraft } from '../../src/analytics/analyzer.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';

const frame = (pts: number): DetectedFrame => ({
  frame: { source: 'cam', seq: pts * 10, pts, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 640, 480, 'top-left'), stamps: emptyStamps(1), producedBy: 'captured', release: () => {} },
  detections: new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)),
});

describe('analyze', () => {
  it('a source without rules: an alert an extension pushes onto one result is not on the next (each result has its own list)', async () => {
    // Before, every such result shared one module-wide array: an alert pushed on the first
    // frame was raised again on every later frame of every source without rules.
    const draft: AlertDraft = { rule: 'mine', severity: 'warning', event: 'my.event', message: 'once', row: -1 };
    const out = await lastValueFrom(
      from([frame(0), frame(0.1), frame(0.2)]).pipe(
        analyze(undefined),
        map((r) => {
          if (r.frame.pts === 0) r.alerts.push(draft);
          return r;
        }),
        toArray(),
      ),
    );
    expect(out.map((r) => r.alerts.length)).toEqual([1, 0, 0]);
  });
});
