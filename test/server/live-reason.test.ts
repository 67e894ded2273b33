// The dashboard's tile reasons as they stand some time after they were said (liveReason): the
// module runs in the page; its functions are plain.
import { describe, expect, it } from 'vitest';
// @ts-expect-error: the dashboard's own JavaScript, served as is (no types)
import { liveReason } from '../../src/server/dashboard/js/tile-state.js';

describe("a tile's reason, counted from when it was said", () => {
  it("counts argus's retry down, then says it is under way; a stall's silence counts up", () => {
    expect(liveReason('reconnecting', 'connection refused; retry 3 in 4.0 s', 1500)).toBe('connection refused; retry 3 in 3 s');
    expect(liveReason('reconnecting', 'connection refused; retry 3 in 4.0 s', 4000)).toBe('connection refused; retry 3 under way');
    expect(liveReason('stalled', 'no frame for 2.0 s', 60_000)).toBe('no frame for 62 s');
  });

  it("counts only argus's own retry, which ends the reason's first line, not the camera's words before it", () => {
    // The camera's error text (before argus's own) says the same words: it was counted down instead.
    const reason = 'RTSP 503: camera busy, retry 9 in 30 s please; retry 2 in 4.0 s\nffmpeg: Server returned 5XX';
    expect(liveReason('reconnecting', reason, 1000)).toBe('RTSP 503: camera busy, retry 9 in 30 s please; retry 2 in 3 s\nffmpeg: Server returned 5XX');
    // A named pipe's words after argus's retry (supervised-source's pipeWait): still counted.
    expect(liveReason('reconnecting', 'ffmpeg exited 1; retry 1 in 2.0 s; the named pipe /p is opened again, and its next frames come once a writer opens it', 500)).toBe('ffmpeg exited 1; retry 1 in 2 s; the named pipe /p is opened again, and its next frames come once a writer opens it');
  });
});
