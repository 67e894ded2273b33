/** addReports: what two attachments of one source counted, added up. */
import { describe, expect, it } from 'vitest';
import { addReports, type SourceAnalyticsReport } from '../../src/analytics/report.js';

/** The earlier attachments: a person zone that counted nothing (a dog seen instead), a line, and a zone whose id is `__proto__` (any name of letters, digits, . _ -). */
const before = (): SourceAnalyticsReport => ({
  zones: JSON.parse('{"dock":{"classes":["person"],"entered":0,"exited":0,"occupancy":1,"reidentified":0,"alerts":{"in":0},"seenInstead":{"dog":1}},"__proto__":{"entered":2,"exited":1,"occupancy":1,"reidentified":1,"alerts":{}}}'),
  lines: { gate: { in: 3, out: 1, byClass: { in: { car: 3 }, out: { car: 1 } }, alerts: { cross: 4 } } },
  alerts: { in: 0, cross: 4 },
  notes: ["zone 'dock' (classes: person) counted 0 entries; seen inside instead: dog ×1"],
});

describe('addReports', () => {
  it('adds entries, exits, crossings by class and alerts; occupancy 0; seen-instead and notes only while the sum counted nothing', () => {
    const last: SourceAnalyticsReport = {
      zones: JSON.parse('{"dock":{"classes":["person"],"entered":1,"exited":1,"occupancy":0,"reidentified":0,"alerts":{"in":1}},"__proto__":{"entered":1,"exited":0,"occupancy":1,"reidentified":0,"alerts":{}}}'),
      lines: { gate: { in: 1, out: 0, byClass: { in: { car: 1, truck: 0 }, out: {} }, alerts: { cross: 1 } } },
      alerts: { in: 1, cross: 1 },
      notes: [],
    };
    const sum = addReports(before(), last);
    expect(sum.zones.dock).toEqual({ classes: ['person'], entered: 1, exited: 1, occupancy: 0, reidentified: 0, alerts: { in: 1 } });
    // An own key (`zones[id] = …` would have set the prototype instead).
    expect(Object.getOwnPropertyDescriptor(sum.zones, '__proto__')?.value).toEqual({ entered: 3, exited: 1, occupancy: 0, reidentified: 1, alerts: {} });
    expect(sum.lines.gate).toEqual({ in: 4, out: 1, byClass: { in: { car: 4, truck: 0 }, out: { car: 1 } }, alerts: { cross: 5 } });
    expect(sum.alerts).toEqual({ in: 1, cross: 5 });
    expect(sum.notes).toEqual([]);
  });

  it('a filtered zone that counted nothing in either keeps what was seen instead, added up, and its note; a line of the earlier config only stands', () => {
    const last: SourceAnalyticsReport = { zones: { dock: { classes: ['person'], entered: 0, exited: 0, occupancy: 0, reidentified: 0, alerts: {}, seenInstead: { dog: 2, cat: 1 } } }, lines: {}, alerts: {}, notes: [] };
    const sum = addReports(before(), last);
    expect(sum.zones.dock.seenInstead).toEqual({ dog: 3, cat: 1 });
    expect(sum.notes).toEqual(["zone 'dock' (classes: person) counted 0 entries; seen inside instead: dog ×3, cat ×1"]);
    expect(sum.lines.gate).toMatchObject({ in: 3, out: 1 });
  });
});
