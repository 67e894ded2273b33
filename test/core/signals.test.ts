import { describe, expect, it } from 'vitest';
import { SIGNAL_REPEAT_MS, StopSignals } from '../../src/core/signals.js';

describe('StopSignals', () => {
  const setup = () => {
    let t = 1000;
    const calls: string[] = [];
    const s = new StopSignals({ stop: (sig) => calls.push(`stop ${sig}`), force: (sig) => calls.push(`force ${sig}`) }, () => t);
    return { s, calls, advance: (ms: number) => (t += ms) };
  };

  it('the same signal delivered twice at once (GNU timeout: the command, then its group) is one orderly stop', () => {
    const { s, calls, advance } = setup();
    s.receive('SIGTERM');
    s.receive('SIGTERM');
    advance(SIGNAL_REPEAT_MS - 1);
    s.receive('SIGINT');
    expect(calls).toEqual(['stop SIGTERM']);
  });

  it('a second signal after the repeat window forces the exit, each time', () => {
    const { s, calls, advance } = setup();
    s.receive('SIGINT');
    advance(SIGNAL_REPEAT_MS);
    s.receive('SIGINT');
    advance(5000);
    s.receive('SIGTERM');
    expect(calls).toEqual(['stop SIGINT', 'force SIGINT', 'force SIGTERM']);
  });
});
