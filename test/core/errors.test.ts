// How argus's command line ends on an error: every line it ends with carries a code.
import { describe, expect, it } from 'vitest';
import { ArgusError, endingOf, ErrorCodes } from '../../src/core/errors.js';

describe('endingOf: the code, message and exit status an error ends argus with', () => {
  it('a coded error keeps its code and message, status 2 (130 for an interrupt)', () => {
    expect(endingOf(new ArgusError(ErrorCodes.CONFIG, 'p.yaml: sources[0].uri: …'))).toEqual({ code: 'VAP_ERR_CONFIG', message: 'p.yaml: sources[0].uri: …', status: 2 });
    expect(endingOf(new ArgusError(ErrorCodes.INTERRUPTED, 'stopped')).status).toBe(130);
  });

  it("any other is a bug: VAP_ERR_INTERNAL and status 4, as a run's uncaught exception (it was the bare message, status 2: `argus: Cannot read properties of undefined (reading 'uri')`)", () => {
    const bug = endingOf(new TypeError("Cannot read properties of undefined (reading 'uri')"));
    expect(bug).toMatchObject({ code: 'VAP_ERR_INTERNAL', status: 4 });
    expect(bug.message).toMatch(/^Cannot read properties of undefined \(reading 'uri'\) \(an error argus does not know: a bug; please report it with this line\)$/);
    expect(endingOf('a string')).toMatchObject({ code: 'VAP_ERR_INTERNAL', status: 4, message: expect.stringMatching(/^a string \(thrown by/) });
  });
});
