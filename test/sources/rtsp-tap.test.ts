import { describe, expect, it, vi } from 'vitest';
import { now } from '../../src/core/clock.js';
import { buildFfmpegArgs } from '../../src/sources/ffmpeg-args.js';
import { connect } from 'node:net';
import { senderReport as sr } from '../helpers/rtsp-camera.js';
import { relaysRtsp, tapsCameraClock } from '../../src/core/rtsp-relay.js';
import { CAMERA_BEHIND_MAX_MS, CAMERA_BEHIND_NOTICE_MS, CAMERA_BEHIND_SUSTAINED_MS, InterleavedReader, MISS_LIMIT, nptStart, relayUrl, RtpClock, RtspTap, UNIT_END_TRUST, UNIT_JUMP_BACK_MS, UnitEnds, videoStream } from '../../src/sources/rtsp-tap.js';

/** An interleaved RTP packet (`$`, channel, length, 12-byte header, payload). */
function rtp(channel: number, ts: number, seq = 0, ssrc = 0x1234, payload = 20): Buffer {
  const p = Buffer.alloc(12 + payload);
  p[0] = 0x80;
  p[1] = 96;
  p.writeUInt16BE(seq & 0xffff, 2);
  p.writeUInt32BE(ts >>> 0, 4);
  p.writeUInt32BE(ssrc, 8);
  return Buffer.concat([Buffer.from([0x24, channel, p.length >> 8, p.length & 0xff]), p]);
}

const SDP = 'v=0\r\no=- 1 1 IN IP4 10.0.0.9\r\ns=cam\r\nt=0 0\r\nm=audio 0 RTP/AVP 97\r\na=rtpmap:97 MPEG4-GENERIC/16000/1\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=control:trackID=1\r\n';
const reply = (cseq: number, headers: string, body = '') => Buffer.from(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\n${headers}${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`, 'latin1');
const request = (method: string, url: string, cseq: number) => Buffer.from(`${method} ${url} RTSP/1.0\r\nCSeq: ${cseq}\r\nAuthorization: Digest username="u", response="x"\r\n\r\n`, 'latin1');

/** A slice NAL unit's first bytes: H.264 (type 1, a P slice) and H.265 (type 1, TRAIL_R). */
const SLICE = { H264: [0x41, 0x9a], H265: [0x02, 0x01] };

/** An interleaved RTP packet on `channel` with the marker bit (the last of its access unit), its payload starting with `nal`. */
const marked = (channel: number, ts: number, seq = 0, ssrc = 0x1234, payload = 20, nal: number[] = SLICE.H264): Buffer => {
  const b = rtp(channel, ts, seq, ssrc, payload);
  b[5] |= 0x80;
  Buffer.from(nal).copy(b, 16);
  return b;
};

/**
 * A clock fed an RTSP session: requests and replies through InterleavedReaders, as the relay
 * reads them; with `ends`, the relay's UnitEnds too (`camera` then returns what it sends ffmpeg
 * after the packets).
 */
function session(opts: { rtpInfo?: string; range?: string; sdp?: string; ends?: boolean } = {}) {
  const clock = new RtpClock();
  const ends = opts.ends ? new UnitEnds(clock) : undefined;
  let at = 0;
  const down = new InterleavedReader((h) => clock.request(h), () => {});
  const up = new InterleavedReader(
    (h, b) => clock.response(h, b),
    (ch, p, len) => {
      clock.packet(ch, p, len, at);
      return ends?.after(ch, p, len);
    },
  );
  const setup = 'rtsp://10.0.0.9/live/trackID=1';
  down.push(request('DESCRIBE', 'rtsp://10.0.0.9/live', 2));
  up.push(reply(2, 'Content-Type: application/sdp\r\n', opts.sdp ?? SDP));
  down.push(request('SETUP', setup, 3));
  up.push(reply(3, 'Transport: RTP/AVP/TCP;unicast;interleaved=2-3\r\nSession: 1\r\n'));
  down.push(request('PLAY', 'rtsp://10.0.0.9/live/', 4));
  up.push(reply(4, `Session: 1\r\n${opts.range ? `Range: ${opts.range}\r\n` : ''}${opts.rtpInfo ? `RTP-Info: ${opts.rtpInfo}\r\n` : ''}`));
  return {
    clock,
    setup,
    /** Bytes from the camera arriving at epoch ms `t`; what the relay sends after its packets (offsets into `bytes`). */
    camera: (bytes: Buffer, t: number) => {
      at = t;
      return up.push(bytes);
    },
  };
}

/** ffmpeg's print of a pts of `ticks` at 90 kHz, in µs (av_rescale_q, rounded to nearest). */
const us = (ticks: number) => Math.round((ticks * 1e6) / 90000);

describe('RtpClock: a frame time of ffmpeg → the camera\'s time of its access unit', () => {
  it('counts pts from the first packet, as ffmpeg does, and stamps frames with the camera\'s time once a sender report came', () => {
    const s = session();
    const T0 = 1_796_000_000_000;
    const ts0 = 3_000_000_000;
    // Three access units (two packets each), 100 ms apart, arriving 40 ms after capture.
    for (let k = 0; k < 3; k++) {
      s.camera(Buffer.concat([rtp(2, ts0 + k * 9000, 2 * k), rtp(2, ts0 + k * 9000, 2 * k + 1)]), T0 + k * 100 + 40);
    }
    // Before any sender report: the arrival.
    expect(s.clock.lookup(us(9000))).toEqual({ at: T0 + 140, by: 'arrival' });
    s.camera(sr(3, T0 + 250, ts0 + 22500), T0 + 300);
    // Another stream's reports (another SSRC) are not this one's.
    s.camera(sr(3, T0 + 10_250, ts0 + 22500, 0x9999), T0 + 310);
    const first = s.clock.lookup(us(0))!;
    expect(first.by).toBe('camera');
    expect(first.at).toBeCloseTo(T0, 3);
    expect(s.clock.lookup(us(18000))!.at).toBeCloseTo(T0 + 200, 3);
    // No access unit with that timestamp: nothing.
    expect(s.clock.lookup(us(4500))).toBeUndefined();
  });

  it('B-frames: access units arrive in decode order and frames are found by their own timestamp', () => {
    const s = session();
    const T0 = 1_796_000_000_000;
    // decode order I0 P3 B1 B2 (pts in frames of 3600 ticks at 25 fps)
    const order = [0, 3, 1, 2];
    order.forEach((k, i) => s.camera(rtp(2, 1000 + k * 3600, i), T0 + 10 + i * 40));
    s.camera(sr(3, T0, 1000), T0 + 200);
    // P3 was captured 120 ms after I0 but arrived at 50 ms: its camera time is after its arrival → not believed.
    expect(s.clock.lookup(us(3 * 3600))).toEqual({ at: T0 + 50, by: 'arrival' });
    expect(s.clock.rejectedOffset).toBeCloseTo(70, 3);
    const b1 = s.clock.lookup(us(3600))!;
    expect(b1.at).toBeCloseTo(T0 + 40, 3);
    expect(b1.by).toBe('camera');
  });

  it('RTP-Info\'s rtptime for the SETUP\'s URL is the base, and the PLAY range\'s start is added, as ffmpeg does', () => {
    const s = session({ rtpInfo: 'url=rtsp://10.0.0.9/live/trackID=0;seq=1;rtptime=5,url=rtsp://10.0.0.9/live/trackID=1;seq=7;rtptime=1000', range: 'npt=2.5-' });
    s.camera(rtp(2, 10_000), 1);
    // pts = ts − rtptime + 2.5 s
    expect(s.clock.lookup(us(10_000 - 1000 + 225_000))).toEqual({ at: 1, by: 'arrival' });
    expect(nptStart('npt=now-')).toBeUndefined();
    expect(nptStart('npt=0.000-')).toBe(0);
    expect(nptStart('npt=00:01:02.5-')).toBe(62_500_000);
  });

  it('unwraps RTP timestamps across 2^32 as ffmpeg does', () => {
    const s = session();
    const ts0 = 2 ** 32 - 9000;
    s.camera(rtp(2, ts0), 1);
    s.camera(rtp(2, ts0 + 9000), 2); // wraps to 0
    s.camera(rtp(2, ts0 + 18000), 3);
    expect(s.clock.lookup(us(9000))!.at).toBe(2);
    expect(s.clock.lookup(us(18000))!.at).toBe(3);
  });

  it('a camera clock further behind than CAMERA_BEHIND_MAX_MS is not believed', () => {
    const s = session();
    s.camera(rtp(2, 0 + 9000), 100_000);
    s.camera(sr(3, 100_000 - CAMERA_BEHIND_MAX_MS - 1000, 9000), 100_010);
    expect(s.clock.lookup(0)).toEqual({ at: 100_000, by: 'arrival' });
    expect(s.clock.rejectedOffset).toBeLessThan(-CAMERA_BEHIND_MAX_MS);
  });

  it('a camera time believed but further than CAMERA_BEHIND_NOTICE_MS before the arrival is kept for a notice (its latency counts it: a clock not synchronised shows so); a nearer one is not', () => {
    const near = session();
    near.camera(rtp(2, 9000), 100_000);
    near.camera(sr(3, 100_000 - CAMERA_BEHIND_NOTICE_MS + 200, 9000), 100_010);
    const n = near.clock.lookup(0)!;
    expect(n.by).toBe('camera');
    expect(n.at).toBeCloseTo(100_000 - CAMERA_BEHIND_NOTICE_MS + 200, 3);
    expect(near.clock.believedBehind).toBeUndefined();
    // A clock 3 s slow: every frame 3 s (and the network's 40 ms) behind its arrival, 10 fps.
    const far = session();
    far.camera(rtp(2, 9000, 0), 100_040);
    far.camera(sr(3, 100_000 - 3000, 9000), 100_050);
    const f = far.clock.lookup(0)!;
    expect(f.by).toBe('camera');
    expect(f.at).toBeCloseTo(97_000, 3);
    expect(far.clock.believedBehind).toBeUndefined(); // one frame is no evidence (a stall delays a few)
    for (let k = 1; k <= 50; k++) {
      far.camera(rtp(2, 9000 + k * 9000, k), 100_040 + k * 100);
      expect(far.clock.lookup(us(k * 9000))!.by).toBe('camera');
      // Said once frames have arrived for CAMERA_BEHIND_SUSTAINED_MS all so far behind: the least of them.
      if (k * 100 < CAMERA_BEHIND_SUSTAINED_MS) expect(far.clock.believedBehind).toBeUndefined();
    }
    expect(far.clock.believedBehind).toBeCloseTo(-3040, 6);
    expect(far.clock.rejectedOffset).toBeUndefined();
  });

  it('one network stall of over a second (the frames sent during it arrive together) is no camera clock behind: no notice', () => {
    // A synchronised camera (its frames arrive 40 ms after capture), 10 fps; for 1.5 s nothing
    // comes, then the 15 frames held up arrive at once, and the frames after them on time.
    const s = session();
    const T = 100_000;
    s.camera(rtp(2, 9000, 0), T + 40);
    s.camera(sr(3, T, 9000), T + 50);
    const arrival = (k: number) => (k >= 10 && k < 25 ? T + 25 * 100 + 40 : T + k * 100 + 40);
    const behind: number[] = [];
    for (let k = 0; k < 120; k++) {
      if (k > 0) s.camera(rtp(2, 9000 + k * 9000, k), arrival(k));
      const r = s.clock.lookup(us(k * 9000))!;
      expect(r.by).toBe('camera');
      behind.push(arrival(k) - r.at);
    }
    expect(Math.max(...behind)).toBeGreaterThan(1400); // the first frame held up: 1.54 s behind
    expect(s.clock.believedBehind).toBeUndefined(); // before: -1540, and the notice of a camera clock off
  });

  it("a camera clock that jumps back between two sender reports (within CAMERA_BEHIND_MAX_MS) is not believed after it: frames are stamped with their arrival, not 5 s early", () => {
    const s = session();
    const T = 1_800_000_000_000;
    // 10 fps, each frame arriving 20 ms after the camera's time for it; a report every second.
    const at = (k: number) => T + k * 100 + 20;
    const stamps: { k: number; at: number; by: string }[] = [];
    for (let k = 0; k < 30; k++) {
      if (k % 10 === 0) s.camera(sr(3, T + k * 100 - (k >= 20 ? 5000 : 0), 9000 + k * 9000), at(k));
      s.camera(rtp(2, 9000 + k * 9000), at(k));
      const r = s.clock.lookup(us(k * 9000))!; // ffmpeg prints each frame as it comes
      stamps.push({ k, at: Math.round(r.at), by: r.by });
    }
    // Reports at 0 and 1 s agree: the camera's time, 20 ms before the arrival.
    for (const { k, at: t, by } of stamps.slice(0, 20)) expect({ k, t, by }).toEqual({ k, t: T + k * 100, by: 'camera' });
    // The report at 2 s puts the clock 5 s back: those frames were not produced 5 s before they came.
    for (const { k, at: t, by } of stamps.slice(20)) expect({ k, t, by }).toEqual({ k, t: at(k), by: 'arrival' });
    expect(s.clock.clockJump).toBeCloseTo(-5000, 3);
  });

  it('an RTP clock that does not run at the SDP\'s rate (its reports disagree by more than drift) is not believed; reports that agree to a few ms are', () => {
    const s = session();
    const T = 1_800_000_000_000;
    // Timestamps at 30 kHz under a 90 kHz SDP: a frame 0.9 s after a report would be put 0.6 s early.
    for (let k = 0; k < 30; k++) {
      if (k % 10 === 0) s.camera(sr(3, T + k * 100 + (k === 10 ? 3 : 0), 9000 + k * 3000), T + k * 100 + 20);
      s.camera(rtp(2, 9000 + k * 3000), T + k * 100 + 20);
    }
    expect(s.clock.lookup(us(29 * 3000))).toEqual({ at: T + 2920, by: 'arrival' });
    expect(s.clock.clockJump).toBeCloseTo(1003 - 1000 / 3, 0);
    const ok = session();
    for (let k = 0; k < 30; k++) {
      if (k % 10 === 0) ok.camera(sr(3, T + k * 100 + (k === 10 ? 3 : 0), 9000 + k * 9000), T + k * 100 + 20);
      ok.camera(rtp(2, 9000 + k * 9000), T + k * 100 + 20);
    }
    expect(ok.clock.lookup(us(29 * 9000))).toEqual({ at: T + 2900, by: 'camera' });
    expect(ok.clock.clockJump).toBeUndefined();
  });

  it('a 1 fps camera whose reports carry its last frame\'s RTP time (up to a frame interval off): believed; a 5 s jump of its clock still is not', () => {
    const T = 1_800_000_000_000;
    const run = (jumpAt: number) => {
      const s = session();
      // Frame k at T + k s; a report 0.1 s or 0.9 s after a frame, with that frame's RTP time.
      for (let k = 0; k < 8; k++) {
        s.camera(rtp(2, 9000 + k * 90_000), T + k * 1000 + 20);
        const late = k % 2 ? 900 : 100;
        s.camera(sr(3, T + k * 1000 + late - (k >= jumpAt ? 5000 : 0), 9000 + k * 90_000), T + k * 1000 + late + 5);
      }
      return s.clock.clockJump;
    };
    expect(run(Infinity)).toBeUndefined(); // reports 0.8 s apart in their error: within 0.5 s + a frame interval
    expect(run(4)).toBeCloseTo(-5000 - 800, 0);
  });

  it('a 25 fps camera that lost 4 s of frames once: its frame interval is still 40 ms, so a 3 s step of its clock is still not believed', () => {
    const T = 1_800_000_000_000;
    const run = (jump: boolean) => {
      const s = session();
      // Frame k at T + 40k ms; frames 100 to 199 (4 s) lost; a report every second, the last one 3 s back.
      for (let k = 0; k < 400; k++) {
        if (k % 25 === 0) s.camera(sr(3, T + k * 40 - (jump && k >= 350 ? 3000 : 0), 9000 + k * 3600), T + k * 40 + 5);
        if (k < 100 || k >= 200) s.camera(rtp(2, 9000 + k * 3600), T + k * 40 + 20);
      }
      return s.clock.clockJump;
    };
    expect(run(false)).toBeUndefined();
    expect(run(true)).toBeCloseTo(-3000, 0);
  });

  it("the system clock stepped since argus started: the camera's NTP time is compared on argus's clock, which the arrivals are on", () => {
    for (const step of [5000, -5000]) {
      // Both clocks stand still: the report is made at the instant the frame arrives. (Read a
      // moment apart, a busy machine put more than the frame's 20 ms between the two reads: the
      // frame seemed produced after it came, and its time was not believed.)
      const perf = vi.spyOn(performance, 'now').mockReturnValue(performance.now());
      const spy = vi.spyOn(Date, 'now').mockReturnValue(Date.now() + step);
      try {
        const s = session();
        const T = now(); // argus's clock
        // A camera synchronised to the (stepped) system time: each frame produced 20 ms before it came.
        s.camera(rtp(2, 9000), T);
        s.camera(sr(3, Date.now() - 20, 9000), T);
        const r = s.clock.lookup(0)!;
        expect(r.by).toBe('camera');
        expect(r.at).toBeCloseTo(T - 20, -1);
      } finally {
        spy.mockRestore();
        perf.mockRestore();
      }
    }
  });

  it("the system clock stepped between two sender reports (an NTP step putting it right): the camera's clock did not move, its reports agree, and its time is believed after the step", () => {
    for (const step of [5000, -5000]) {
      const s = session();
      const T = now(); // argus's clock: the system's before the step
      // A camera on the right time, which the system's is `step` away from until it is stepped
      // after the first report. 10 fps, a report every second, each frame 20 ms on its way.
      const wall = Date.now.bind(Date);
      let spy: { mockRestore(): void } | undefined;
      const stamps: { k: number; at: number; by: string }[] = [];
      try {
        for (let k = 0; k < 30; k++) {
          if (k === 5) spy = vi.spyOn(Date, 'now').mockImplementation(() => wall() + step);
          if (k % 10 === 0) s.camera(sr(3, T + step + k * 100, 9000 + k * 9000), T + k * 100 + 20);
          s.camera(rtp(2, 9000 + k * 9000), T + k * 100 + 20);
          const r = s.clock.lookup(us(k * 9000))!;
          stamps.push({ k, at: r.at, by: r.by });
        }
      } finally {
        spy?.mockRestore();
      }
      expect(s.clock.clockJump).toBeUndefined();
      // After the step the camera's time is argus's: 20 ms before each arrival.
      // (Within the few ms `now` and the system clock are read apart.)
      for (const x of stamps.slice(10)) expect({ k: x.k, by: x.by, near: Math.abs(x.at - (T + x.k * 100)) < 5 }).toEqual({ k: x.k, by: 'camera', near: true });
    }
  });

  it('a camera that sets up two streams (frames cannot be told apart by timestamp) is not paired', () => {
    const s = session();
    s.clock.request('SETUP rtsp://10.0.0.9/live/trackID=2 RTSP/1.0\r\nCSeq: 9');
    s.clock.response('RTSP/1.0 200 OK\r\nCSeq: 9\r\nTransport: RTP/AVP/TCP;interleaved=4-5', Buffer.alloc(0));
    s.camera(rtp(2, 9000), 5);
    expect(s.clock.lookup(0)).toBeUndefined();
    expect(s.clock.unpairable).toMatch(/more than one stream/);
  });
});


describe('RtpClock counts as ffmpeg 5.1 does where cameras differ (review findings)', () => {
  it('a first timestamp of 0 (no RTP-Info): ffmpeg counts it twice and its decoder then shifts the frames\' times, so the relay gives up', () => {
    const s = session();
    s.camera(rtp(2, 0), 1);
    s.camera(rtp(2, 9000), 2);
    expect(s.clock.failure()).toMatch(/first RTP timestamp is 0/);
    const t = session({ rtpInfo: 'url=rtsp://10.0.0.9/live/trackID=1;seq=7;rtptime=4000000000' });
    t.camera(rtp(2, 0), 1);
    expect(t.clock.failure()).toBeUndefined();
  });

  it('no RTP-Info, a sender report before the first packet: its RTP time is the base, as for ffmpeg', () => {
    const s = session();
    s.camera(sr(3, Date.now(), 5000), 1);
    s.camera(rtp(2, 9500), 2);
    expect(s.clock.lookup(us(4500))!.at).toBeLessThanOrEqual(2);
  });

  it('a jump back of more than 60 s: found modulo 2^32, as libavformat\'s wrap correction counts it', () => {
    const s = session();
    s.camera(rtp(2, 500_000_000), 1);
    s.camera(rtp(2, 400_000_000), 2);
    expect(s.clock.lookup(us(2 ** 32 - 100_000_000))!.at).toBe(2);
  });

  it('a new SSRC (an encoder restarted) drops the old sender report until its own comes', () => {
    const s = session();
    const T = Date.now();
    s.camera(rtp(2, 1000, 0, 1), T);
    s.camera(sr(3, T - 10, 1000, 1), T);
    expect(s.clock.lookup(0)!.by).toBe('camera');
    s.camera(rtp(2, 901000, 1, 2), T + 100);
    expect(s.clock.lookup(us(900_000))!.by).toBe('arrival');
    s.camera(rtp(2, 910000, 2, 2), T + 200);
    s.camera(sr(3, T + 190, 910000, 2), T + 200);
    expect(s.clock.lookup(us(909_000))!.by).toBe('camera');
  });

  it('timestamps that do not advance (access units, each ended by its marker bit, with one timestamp): the relay gives up; one unit sent slowly is not that', () => {
    const marked = (ts: number) => {
      const b = rtp(2, ts);
      b[5] |= 0x80; // the marker bit: the last packet of its access unit
      return b;
    };
    const slow = session();
    for (let t = 0; t <= 5000; t += 100) slow.camera(rtp(2, 1000), t);
    slow.camera(marked(1000), 5100);
    expect(slow.clock.failure()).toBeUndefined();
    const s = session();
    s.camera(marked(1000), 0);
    s.camera(marked(1000), 100);
    expect(s.clock.failure()).toBeUndefined();
    s.camera(marked(1000), 200);
    expect(s.clock.failure()).toMatch(/do not advance/);
  });

  it('a second frame printed with the timestamp of a unit already used is not stamped from it', () => {
    const s = session();
    s.camera(rtp(2, 1000), 1);
    expect(s.clock.lookup(0)!.at).toBe(1);
    expect(s.clock.lookup(0)).toBeUndefined();
  });

  it('a camera that repeats a timestamp: the latest access unit with it, not the first', () => {
    const s = session();
    s.camera(rtp(2, 1000), 1);
    s.camera(rtp(2, 10000), 2);
    s.camera(rtp(2, 1000), 3);
    expect(s.clock.lookup(0)!.at).toBe(3);
  });

  it('LF-only line ends (which ffmpeg takes) are read; a redirect leaves the clock as it is (the relay follows it, and the next connection gets its own clock)', () => {
    const clock = new RtpClock();
    const r = new InterleavedReader((h, b) => clock.response(h, b), () => {});
    clock.request('DESCRIBE rtsp://cam/x RTSP/1.0');
    r.push(Buffer.from('RTSP/1.0 302 Moved\nCSeq: 1\nLocation: rtsp://other/x\n\n'));
    expect(r.broken).toBe(false);
    expect(clock.failure()).toBeUndefined();
  });

  it('Range as ffmpeg reads it: `npt=` exactly, [HH:]MM:SS, fractions cut to microseconds', () => {
    expect(nptStart('npt = 5-')).toBeUndefined();
    expect(nptStart('npt=00:05.5-')).toBe(5_500_000);
    expect(nptStart('npt=1.0000009-')).toBe(1_000_000);
    expect(nptStart('npt=01:00:00-')).toBe(3_600_000_000);
  });

  it('frame times that name no access unit, MISS_LIMIT in a row: the relay is given up', () => {
    const s = session();
    s.camera(rtp(2, 1000), 1);
    for (let k = 0; k < MISS_LIMIT - 1; k++) s.clock.lookup(1e9 + k);
    expect(s.clock.failure()).toBeUndefined();
    s.clock.lookup(2e9);
    expect(s.clock.failure()).toMatch(/in a row/);
  });
});

describe('UnitEnds: each H.264/H.265 access unit ended for ffmpeg as soon as its last packet is in', () => {
  /** Units of two packets each (the second marked), `step` ticks apart from ts 1000; what the relay sent after each unit's marked packet. */
  function units(sess: ReturnType<typeof session>, n: number, step: (k: number) => number = () => 3000, channel = 2, nal = SLICE.H264) {
    const sent: (Buffer | undefined)[] = [];
    let ts = 1000;
    for (let k = 0; k < n; k++) {
      if (k) ts += step(k);
      expect(sess.camera(rtp(channel, ts, 2 * k), 1_796_000_000_000 + 100 * k)).toBeUndefined();
      const m = marked(channel, ts, 2 * k + 1, 0x1234, 20, nal);
      const after = sess.camera(m, 1_796_000_000_000 + 100 * k + 1);
      if (after) expect(after).toEqual([{ at: m.length, bytes: after[0].bytes }]);
      sent.push(after?.[0].bytes);
    }
    return sent;
  }

  it(`after ${UNIT_END_TRUST} units ended by their marker, a delimiter after each marked packet: the next unit's timestamp as the spacing predicts, the packet's sequence number and SSRC, no marker`, () => {
    const sent = units(session({ ends: true }), 8);
    expect(sent.slice(0, UNIT_END_TRUST).every((b) => b === undefined)).toBe(true);
    for (let k = UNIT_END_TRUST; k < 8; k++) {
      const b = sent[k]!;
      expect([...b.subarray(0, 6)]).toEqual([0x24, 2, 0, 14, 0x80, 96]);
      expect(b.readUInt16BE(6)).toBe(2 * k + 1);
      expect(b.readUInt32BE(8)).toBe(1000 + 3000 * (k + 1));
      expect(b.readUInt32BE(12)).toBe(0x1234);
      expect([...b.subarray(16)]).toEqual([0x09, 0xf0]); // H.264 AUD, any picture type
    }
  });

  it('H.265 gets its own delimiter; other encodings, channels and payload types none', () => {
    const h265 = units(session({ ends: true, sdp: SDP.replace('H264/90000', 'H265/90000') }), 6, undefined, 2, SLICE.H265);
    expect([...h265[5]!.subarray(16)]).toEqual([0x46, 0x01, 0x50]); // type 35, temporal id 0, I/P/B slices
    // With decoding order numbers in its aggregates and fragments (sprop-max-don-diff > 0), none: the relay does not read them.
    for (const fmtp of ['sprop-max-don-diff=2', 'profile-id=1; sprop-depack-buf-nalus=1']) {
      const don = SDP.replace('H264/90000', 'H265/90000').replace('a=control:trackID=1', `a=fmtp:96 ${fmtp}\r\na=control:trackID=1`);
      expect(units(session({ ends: true, sdp: don }), 6, undefined, 2, SLICE.H265).every((b) => b === undefined)).toBe(true);
    }
    const noDon = SDP.replace('H264/90000', 'H265/90000').replace('a=control:trackID=1', 'a=fmtp:96 sprop-max-don-diff=0; sprop-depack-buf-nalus=0\r\na=control:trackID=1');
    expect(units(session({ ends: true, sdp: noDon }), 6, undefined, 2, SLICE.H265)[5]).toBeDefined();
    expect(units(session({ ends: true, sdp: SDP.replace('H264/90000', 'JPEG/90000') }), 6).every((b) => b === undefined)).toBe(true);
    expect(units(session({ ends: true }), 6, undefined, 4).every((b) => b === undefined)).toBe(true);
    const otherPt = session({ ends: true, sdp: SDP.replace('RTP/AVP 96', 'RTP/AVP 97').replace('rtpmap:96', 'rtpmap:97') });
    expect(units(otherPt, 6).every((b) => b === undefined)).toBe(true);
    // The relay of a source without low-latency decoding has none (RtspTap endUnits: false).
    expect(units(session(), 6).every((b) => b === undefined)).toBe(true);
  });

  it('never again after a marked packet followed by one with its timestamp (marks inside a unit) or an earlier one (B-frames); a pause does not make the guess; a slow camera\'s guesses are at most 200 ms ahead', () => {
    const inside = session({ ends: true });
    expect(units(inside, 5)[4]).toBeDefined();
    // The unit goes on after its "last" packet with another slice.
    const rest = rtp(2, 1000 + 3000 * 4, 99);
    Buffer.from(SLICE.H264).copy(rest, 16);
    inside.camera(rest, 1_796_000_001_000);
    // The camera goes on at its spacing: the next unit's own key is the delimiter's guess (16000, counted from 1000).
    expect(inside.camera(marked(2, 1000 + 3000 * 5, 100), 1_796_000_001_100)).toBeUndefined();
    // The frame the delimiter began is the cut unit's rest: found by no unit; the next unit's frame by its own key.
    expect(inside.clock.lookup(us(15000))).toBeUndefined();
    expect(inside.clock.lookup(us(15000))).toEqual({ at: 1_796_000_001_100, by: 'arrival' });
    expect(units(inside, 5, () => 3000).every((b) => b === undefined)).toBe(true);
    // Said (ffmpeg-source gives a notice of it): each frame is a frame period later from here on.
    expect(inside.clock.unitEndsStopped).toBe('marks');
    // The rest of a cut unit as packets after its "last": filler alone makes no frame, and the
    // delimiter begins the next unit's frame (with its pts: the guess, 18000 ticks at this 4 fps
    // camera's 22500); filler and then a slice make a frame of the rest, found by no unit.
    const restOf = (nals: number[][], step = 22_500) => {
      const sess = session({ ends: true });
      const guess = Math.min(step, 18_000);
      expect(units(sess, 5, () => step)[4]!.readUInt32BE(8)).toBe(1000 + 4 * step + guess);
      nals.forEach((nal, i) => {
        const b = rtp(2, 1000 + 4 * step, 99 + i);
        Buffer.from(nal).copy(b, 16);
        sess.camera(b, 1_796_000_001_000);
      });
      sess.camera(marked(2, 1000 + 5 * step, 110), 1_796_000_001_100);
      return [sess.clock.lookup(us(4 * step + guess)), sess.clock.lookup(us(5 * step))];
    };
    const next = { at: 1_796_000_001_100, by: 'arrival' };
    expect(restOf([[0x0c, 0xff]])).toEqual([next, undefined]);
    expect(restOf([[0x0c, 0xff], SLICE.H264])).toEqual([undefined, next]);
    // At a constant rate the guess is the next unit's own key: the rest's frame (printed first) must not take it.
    expect(restOf([[0x0c, 0xff], SLICE.H264], 3000)).toEqual([undefined, next]);
    const reordered = session({ ends: true });
    expect(units(reordered, 8, (k) => (k === 5 ? -1500 : 3000)).slice(5).every((b) => b === undefined)).toBe(true);
    expect(reordered.clock.unitEndsStopped).toBe('reordered');
    // The delimiter sent before the B-frame began its frame: found by the delimiter's pts.
    expect(reordered.clock.lookup(us(15000))).toEqual({ at: 1_796_000_000_500, by: 'arrival' });
    const gap = session({ ends: true });
    const sent = units(gap, 8, (k) => (k === 5 ? 90_001 : 3000));
    // After the pause the camera goes on at its spacing: the smaller of the last two is the guess.
    expect(sent[5]!.readUInt32BE(8)).toBe(1000 + 3000 * 4 + 90_001 + 3000);
    expect(sent[6]!.readUInt32BE(8)).toBe(1000 + 3000 * 5 + 90_001 + 3000);
    // A camera at 1 fps: guesses 200 ms after each unit (at most), by which the clock finds the next.
    const slow = session({ ends: true });
    const slowSent = units(slow, 8, () => 90_000);
    expect(slowSent[4]!.readUInt32BE(8)).toBe(1000 + 4 * 90_000 + 18_000);
    expect(slow.clock.lookup(us(4 * 90_000 + 18_000))).toEqual({ at: 1_796_000_000_500, by: 'arrival' });
  });

  it(`a camera whose clock jumps back (more than ${UNIT_JUMP_BACK_MS / 1000} s: not B-frames): ended again after ${UNIT_END_TRUST} units on its new timeline, not never again on the connection`, () => {
    // Before: turned off as for B-frames, every frame after the jump waited a frame period in
    // ffmpeg (measured through the relay: 100 ms at 10 fps, 2 ms before the jump) until the camera reconnected.
    const HOUR = 3600 * 90_000;
    const step = (k: number) => (k === 1 ? 2 * HOUR : k === 6 ? -HOUR : 3000);
    const ts = [1000];
    for (let k = 1; k < 12; k++) ts.push(ts[k - 1] + step(k));
    const jumped = session({ ends: true });
    const sent = units(jumped, 12, step);
    expect(jumped.clock.unitEndsStopped).toBeUndefined();
    expect(sent[5]).toBeDefined();
    expect(sent.slice(6, 6 + UNIT_END_TRUST).every((b) => b === undefined)).toBe(true);
    // The guesses are on the new timeline (not held after the last one before the jump).
    for (let k = 6 + UNIT_END_TRUST; k < 12; k++) expect(sent[k]?.readUInt32BE(8)).toBe(ts[k] + 3000);
    // A step back within it is B-frames (or a glitch): never again on that connection, as before.
    const reordered = units(session({ ends: true }), 12, (k) => (k === 6 ? -(UNIT_JUMP_BACK_MS / 1000) * 90_000 + 3000 : 3000));
    expect(reordered.slice(6).every((b) => b === undefined)).toBe(true);
  });

  it('only after a packet that ends a slice: not after parameter sets, SEI, an aggregate or a fragment that goes on; FU-A and FU end fragments do; CSRC and header extensions are skipped', () => {
    const after = (nal: number[], encoding = 'H264', header?: (b: Buffer) => Buffer) => {
      const sess = session({ ends: true, sdp: SDP.replace('H264/90000', `${encoding}/90000`) });
      units(sess, 4, undefined, 2, encoding === 'H264' ? SLICE.H264 : SLICE.H265);
      let m = marked(2, 1000 + 3000 * 4, 50, 0x1234, 20, nal);
      if (header) m = header(m);
      return sess.camera(m, 1_796_000_001_000)?.[0].bytes;
    };
    expect(after([0x65, 0x88])).toBeDefined(); // IDR slice
    expect(after([0x67, 0x42])).toBeUndefined(); // SPS
    expect(after([0x06, 0x05])).toBeUndefined(); // SEI
    expect(after([0x18, 0x00, 0x10, 0x67])).toBeUndefined(); // STAP-A of parameter sets
    expect(after([0x18, 0x00, 0x10, 0x41])).toBeDefined(); // STAP-A of slices
    expect(after([0x0c, 0xff])).toBeDefined(); // filler after the slices
    expect(after([0x7c, 0x4c])).toBeDefined(); // FU-A, end of filler
    expect(after([0x18, 0x00, 0x02, 0x09, 0xf0, 0x00, 0x10, 0x41])).toBeDefined(); // STAP-A: a delimiter, then a slice
    expect(after([0x18, 0x00, 0x02, 0x09, 0xf0, 0x00, 0x10, 0x67])).toBeUndefined(); // STAP-A: a delimiter, then an SPS
    // A padded STAP-A of an SPS and a PPS, kept whole: its padding (00 00 03) is no NAL unit of type 3.
    const padded = (b: Buffer) => {
      const rtpPart = Buffer.concat([b.subarray(4, 16), Buffer.from([0x18, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce, 0, 0, 3])]);
      rtpPart[0] |= 0x20;
      return Buffer.concat([Buffer.from([0x24, b[1], 0, rtpPart.length]), rtpPart]);
    };
    expect(after([0x41], 'H264', padded)).toBeUndefined();
    expect(after([0x7c, 0x45])).toBeDefined(); // FU-A, end of an IDR slice
    expect(after([0x7c, 0x05])).toBeUndefined(); // FU-A, a fragment that goes on
    expect(after([0x7c, 0x47])).toBeUndefined(); // FU-A, end of an SPS
    expect(after([0x26, 0x01], 'H265')).toBeDefined(); // IDR_W_RADL
    expect(after([0x40, 0x01], 'H265')).toBeUndefined(); // VPS
    expect(after([0x60, 0x01, 0x00, 0x10, 0x02, 0x01], 'H265')).toBeDefined(); // AP of slices
    expect(after([0x60, 0x01, 0x00, 0x10, 0x40, 0x01], 'H265')).toBeUndefined(); // AP of parameter sets
    expect(after([0x50, 0x01], 'H265')).toBeDefined(); // suffix SEI after the slices
    expect(after([0x62, 0x01, 0x53], 'H265')).toBeDefined(); // FU, end of an IDR_W_RADL
    expect(after([0x62, 0x01, 0x13], 'H265')).toBeUndefined(); // FU, a fragment that goes on
    // Two CSRCs and a one-word header extension before the payload.
    const withExtras = (b: Buffer) => {
      const rtpPart = Buffer.concat([b.subarray(4, 16), Buffer.alloc(8), Buffer.from([0xbe, 0xde, 0, 1, 0, 0, 0, 0]), b.subarray(16)]);
      rtpPart[0] = 0x80 | 0x10 | 2;
      return Buffer.concat([Buffer.from([0x24, b[1], rtpPart.length >> 8, rtpPart.length & 0xff]), rtpPart]);
    };
    expect(after([0x41, 0x9a], 'H264', withExtras)).toBeDefined();
    expect(after([0x67, 0x42], 'H264', withExtras)).toBeUndefined();
  });

  it('a camera that skipped a frame costs one guess, not two; two frames printed with one pts (a frame that came early) are each found, in order (review findings)', () => {
    const t0 = 1_796_000_000_000;
    const feed = (tss: number[]) => {
      const sess = session({ ends: true });
      const sent = tss.map((ts, k) => {
        sess.camera(rtp(2, ts, 2 * k), t0 + 100 * k);
        return sess.camera(marked(2, ts, 2 * k + 1), t0 + 100 * k + 1)?.[0].bytes.readUInt32BE(8);
      });
      // ffmpeg prints each frame with its delimiter's pts, counted from the first timestamp.
      return { sent, at: (ticks: number) => sess.clock.lookup(us(ticks - tss[0]))?.at };
    };
    // 9000 apart from 1000, the unit at 55000 skipped: only the unit after the gap is guessed wrong.
    const skipped = feed([0, 1, 2, 3, 4, 5, 7, 8, 9].map((k) => 1000 + 9000 * k));
    expect(skipped.sent.slice(5)).toEqual([55000, 73000, 82000, 91000]);
    expect(skipped.at(55000)).toBeCloseTo(t0 + 600, 6); // the unit at 64000
    expect(skipped.at(73000)).toBeCloseTo(t0 + 700, 6);
    // One unit half a spacing early: the guess for the next would be 55000 again, and guesses
    // only go forward (55001), so frames never go back in pts; each is found by its own guess.
    const early = feed([1000, 10000, 19000, 28000, 37000, 46000, 50500, 55000, 64000]);
    // (half a step forward at least: 55000 + 4500 / 2)
    expect(early.sent.slice(5)).toEqual([55000, 57250, 59500, 68500]);
    expect(early.at(55000)).toBeCloseTo(t0 + 600, 6); // the unit at 50500
    expect(early.at(57250)).toBeCloseTo(t0 + 700, 6); // the unit at 55000
    expect(early.at(59500)).toBeCloseTo(t0 + 800, 6); // the unit at 64000
    // A frame ffmpeg never printed (the fps sampling dropped it): its unit, older than the last
    // one found, does not take a later frame with its pts.
    const dropped = feed([1000, 10000, 19000, 28000, 37000, 46000, 50500, 55000, 64000]);
    expect(dropped.at(57250)).toBeCloseTo(t0 + 700, 6);
    expect(dropped.at(55000)).toBeUndefined();
    // A camera whose rate rises from 1 to 10 fps: the first guess overshoots by a slow period,
    // and the guesses after it stay at least half a step apart (the fps sampling keeps frames
    // by pts: frames a tick apart would all fall in one slot), until they meet the camera's.
    const rise = feed([0, 1, 2, 3, 4, 5].map((k) => 1000 + 90_000 * k).concat(Array.from({ length: 24 }, (_, k) => 451_000 + 9000 * (k + 1))));
    const guesses = rise.sent.slice(5) as number[];
    for (let k = 1; k < guesses.length; k++) expect(guesses[k] - guesses[k - 1]).toBeGreaterThanOrEqual(4500);
    expect(guesses.at(-1)).toBe(451_000 + 9000 * 24 + 9000); // caught up: the camera's own spacing again
  });

  it('units kept under a wrong guess are bounded, as the units are (a camera whose every guess is wrong, for hours)', () => {
    const sess = session({ ends: true });
    // Spacings alternating 3000 and 3300: the smaller of the last two is wrong for every other unit.
    let ts = 1000;
    for (let k = 0; k < 3000; k++) {
      ts += k % 2 ? 3300 : 3000;
      sess.camera(marked(2, ts, k), 1_796_000_000_000 + 100 * k);
    }
    const clock = sess.clock as unknown as { guessed: Map<number, unknown[]>; units: Map<number, unknown> };
    expect(clock.guessed.size).toBeGreaterThan(100);
    expect(clock.guessed.size).toBeLessThanOrEqual(512);
    expect(clock.units.size).toBeLessThanOrEqual(512);
  });

  it('the frame that starts with a delimiter has its pts: the clock finds the next unit by it, when the spacing changed too', () => {
    const sess = session({ ends: true });
    const t0 = 1_796_000_000_000;
    sess.camera(sr(3, t0 - 500, 1000), t0 - 400);
    // 1000, 4000, 7000, 10000, then 12000: the delimiter after 10000 said 13000.
    const sent = units(sess, 5, (k) => (k === 4 ? 2000 : 3000));
    expect(sent[3]!.readUInt32BE(8)).toBe(13000);
    // ffmpeg counts from the first packet (1000): the fifth frame has the delimiter's pts.
    const r = sess.clock.lookup(us(13000 - 1000))!;
    expect(r).toEqual({ at: t0 - 500 + (11000 / 90000) * 1000, by: 'camera' });
    // and the units before it their own
    expect(sess.clock.lookup(us(9000 - 0))!.at).toBeCloseTo(t0 - 500 + 100, 6);
  });
});

describe('InterleavedReader', () => {
  it('reads the same messages and packets whatever the reads\' boundaries', () => {
    const bytes = Buffer.concat([
      reply(2, 'Content-Type: application/sdp\r\n', SDP),
      rtp(0, 77, 1, 1, 1400),
      Buffer.from('\r\n'),
      sr(1, 1_796_000_000_500, 77),
      reply(5, 'Session: 1\r\n'),
      rtp(0, 78, 2, 1, 3),
    ]);
    const read = (chunks: Buffer[]) => {
      const got: string[] = [];
      const r = new InterleavedReader(
        (h, b) => got.push(`msg ${h.split('\r\n')[1]} ${b.length}`),
        (ch, p, len) => {
          got.push(`pkt ${ch} ${len} ${p.length >= 8 ? p.readUInt32BE(4) : '-'}`);
        },
      );
      for (const c of chunks) r.push(c);
      expect(r.broken).toBe(false);
      return got;
    };
    const whole = read([bytes]);
    expect(whole).toEqual(['msg CSeq: 2 ' + Buffer.byteLength(SDP), 'pkt 0 1412 77', 'pkt 1 36 4660', 'msg CSeq: 5 0', 'pkt 0 15 78']);
    for (let size = 1; size < 40; size += 3) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      expect(read(chunks)).toEqual(whole);
    }
  });

  it('bytes the packet callback returns go right after the packet, whatever the reads\' boundaries', () => {
    const bytes = Buffer.concat([reply(2, 'Content-Type: application/sdp\r\n', SDP), rtp(0, 1, 1, 1, 700), sr(1, 1_796_000_000_500, 1), rtp(0, 2, 2, 1, 0), rtp(0, 3, 3, 1, 30)]);
    const expected = Buffer.concat([reply(2, 'Content-Type: application/sdp\r\n', SDP), rtp(0, 1, 1, 1, 700), Buffer.from('<1>'), sr(1, 1_796_000_000_500, 1), rtp(0, 2, 2, 1, 0), Buffer.from('<2>'), rtp(0, 3, 3, 1, 30), Buffer.from('<3>')]);
    for (let size = 1; size <= bytes.length; size += size < 40 ? 1 : 97) {
      const r = new InterleavedReader(
        () => {},
        (ch, p) => (ch === 0 ? Buffer.from(`<${p.readUInt32BE(4)}>`) : undefined),
      );
      const out: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) {
        const chunk = bytes.subarray(i, i + size);
        let done = 0;
        for (const { at, bytes: b } of r.push(chunk) ?? []) {
          out.push(chunk.subarray(done, at), b);
          done = at;
        }
        out.push(chunk.subarray(done));
      }
      expect(Buffer.concat(out).equals(expected)).toBe(true);
    }
  });

  it('gives up on bytes that are not RTSP (the relay goes on without it)', () => {
    const r = new InterleavedReader(() => {}, () => {});
    r.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n'));
    expect(r.broken).toBe(true);
    const big = new InterleavedReader(() => {}, () => {});
    big.push(Buffer.from('RTSP/1.0 200 OK\r\n' + 'X: y\r\n'.repeat(20_000)));
    expect(big.broken).toBe(true);
  });
});

describe('which sources are relayed, and how', () => {
  it('relays RTSP and RTSPS over TCP only, unless turned off', () => {
    const base = { kind: 'rtsp', url: 'rtsp://cam/live' };
    expect(tapsCameraClock(base)).toBe(true);
    expect(tapsCameraClock({ ...base, rtspTransport: 'udp' })).toBe(false);
    expect(tapsCameraClock({ ...base, url: 'rtsps://cam/live' })).toBe(true);
    expect(tapsCameraClock({ ...base, cameraClock: false })).toBe(false);
    expect(tapsCameraClock({ ...base, inputArgs: ['-use_wallclock_as_timestamps', '0'] })).toBe(false);
    expect(tapsCameraClock({ kind: 'http', url: 'http://cam/live' })).toBe(false);
    // Without the clock, a relay that only passes the bytes on can still carry it (credentials, certificate).
    expect(relaysRtsp({ ...base, cameraClock: false } as typeof base)).toBe(true);
    expect(relaysRtsp({ ...base, inputArgs: ['-use_wallclock_as_timestamps', '1'] })).toBe(true);
    // Over UDP too (the media go beside it), but not through an HTTP tunnel, nor as a listener.
    expect(relaysRtsp({ ...base, inputArgs: ['-rtsp_transport', 'udp'] })).toBe(true);
    expect(relaysRtsp({ ...base, rtspTransport: 'udp' })).toBe(true);
    expect(relaysRtsp({ ...base, rtspTransport: 'udp_multicast' })).toBe(true);
    expect(relaysRtsp({ ...base, rtspTransport: 'http' })).toBe(false);
    expect(relaysRtsp({ ...base, inputArgs: ['-rtsp_transport', 'https'] })).toBe(false);
    expect(relaysRtsp({ ...base, inputArgs: ['-rtsp_flags', 'listen'] })).toBe(false);
    expect(tapsCameraClock({ ...base, inputArgs: ['-rtsp_transport', 'tcp'] })).toBe(false);
    expect(relaysRtsp({ kind: 'http', url: 'http://cam/live' })).toBe(false);
  });

  it('a camera address Node refuses outright (port 99999): that connection is closed and the reason kept for the error, nothing thrown out of the relay (it stopped the process)', async () => {
    for (const url of ['rtsp://admin:pw@127.0.0.1:99999/x', 'rtsps://admin:pw@127.0.0.1:99999/x']) {
      const tap = new RtspTap(url);
      const relay = new URL((await tap.listen()).replace(/^rtsp:/, 'http:'));
      const closed = await new Promise<boolean>((resolve) => {
        const s = connect(Number(relay.port), '127.0.0.1');
        s.on('error', () => resolve(true));
        s.on('close', () => resolve(true));
      });
      expect(closed).toBe(true);
      expect(tap.upstreamError).toMatch(/^127\.0\.0\.1:99999: .*65536/);
      tap.close();
    }
  });

  it("ffmpeg's log names the camera, not the relay: its address, and for an RTSPS camera its scheme", async () => {
    for (const [url, named] of [
      ['rtsps://u:p@cam.local:7441/x', 'rtsps://u:p@cam.local:7441/x'],
      ['rtsp://u:p@cam.local/x', 'rtsp://u:p@cam.local/x'],
    ]) {
      const tap = new RtspTap(url);
      const relay = await tap.listen();
      expect(tap.unrelay(`${relay}: Invalid data found when processing input`)).toBe(`${named}: Invalid data found when processing input`);
      tap.close();
    }
  });

  it('points ffmpeg at the relay, keeping the path and query, the user and password replaced by a placeholder (the last @ before the path ends the user part)', () => {
    expect(relayUrl('rtsp://admin:p@ss@10.0.0.9:8554/live?ch=1', 4000)).toBe('rtsp://argus:relay@127.0.0.1:4000/live?ch=1');
    expect(relayUrl('rtsp://cam.local/live', 4000)).toBe('rtsp://127.0.0.1:4000/live');
    expect(relayUrl('rtsp://[fe80::1]:554/x', 4000)).toBe('rtsp://127.0.0.1:4000/x');
    // RTSPS: the relay ends the camera's TLS; ffmpeg speaks plain RTSP to it on 127.0.0.1.
    expect(relayUrl('rtsps://admin:pw@10.0.0.9:7441/abc?enableSrtp', 4000)).toBe('rtsp://argus:relay@127.0.0.1:4000/abc?enableSrtp');
  });

  it('a relayed source: RTP timestamps kept (no wall clock), the video stream alone, the relay opened', () => {
    const out = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'center' as const, padValue: 114 };
    const input = { url: 'rtsp://cam/live', kind: 'rtsp' as const, rate: 'native' as const, loop: false };
    const plain = buildFfmpegArgs(input, out);
    expect(plain).toContain('-use_wallclock_as_timestamps');
    expect(plain).not.toContain('-allowed_media_types');
    const relayed = buildFfmpegArgs({ ...input, relay: 'rtsp://127.0.0.1:4000/live' }, out);
    expect(relayed).not.toContain('-use_wallclock_as_timestamps');
    expect(relayed[relayed.indexOf('-allowed_media_types') + 1]).toBe('video');
    expect(relayed[relayed.indexOf('-i') + 1]).toBe('rtsp://127.0.0.1:4000/live');
  });

  it('reads the SDP\'s first video stream: payload type, encoding, clock rate', () => {
    expect(videoStream(SDP)).toEqual({ pt: 96, encoding: 'H264', clockRate: 90000 });
    expect(videoStream('v=0\r\nm=video 0 RTP/AVP 98\r\na=rtpmap:98 h265/90000\r\n')).toEqual({ pt: 98, encoding: 'H265', clockRate: 90000 });
    expect(videoStream('v=0\r\nm=audio 0 RTP/AVP 0\r\n')).toBeUndefined();
  });

  it('reads the clock rate of the SDP\'s first video stream', () => {
    expect(videoStream(SDP)?.clockRate).toBe(90000);
    expect(videoStream('v=0\r\nm=video 0 RTP/AVP 26\r\n')?.clockRate).toBe(90000);
    expect(videoStream('v=0\r\nm=video 0 RTP/AVP 98\r\na=rtpmap:98 VP8/45000\r\n')?.clockRate).toBe(45000);
  });
});

describe('RtspTap: the relay', () => {
  it("connections are decided in the order they came, whatever order their owner checks answer in: a later one cannot take the relay's one place from the first", async () => {
    const { createServer } = await import('node:net');
    const { RtspTap } = await import('../../src/sources/rtsp-tap.js');
    // A camera that answers each connection with its own number.
    let n = 0;
    const camera = createServer((s) => void s.end(`camera connection ${++n}\r\n`));
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    // The first connection's check answers 100 ms late, the second's at once.
    let checks = 0;
    const tap = new RtspTap(`rtsp://127.0.0.1:${port}/live`, { peerCheck: () => (checks++ === 0 ? new Promise((r) => setTimeout(() => r('own'), 100)) : Promise.resolve('own')) });
    const url = await tap.listen();
    const relayPort = Number(/:(\d+)\/live$/.exec(url)![1]);
    const read = (c: ReturnType<typeof connect>) =>
      new Promise<string>((r) => {
        let text = '';
        c.on('data', (d: Buffer) => (text += d.toString()));
        c.on('error', () => {});
        c.on('close', () => r(text));
      });
    const first = connect(relayPort, '127.0.0.1');
    await new Promise<void>((r) => first.on('connect', r));
    const second = connect(relayPort, '127.0.0.1');
    const [a, b] = await Promise.all([read(first), read(second)]);
    expect(a).toBe('camera connection 1\r\n');
    expect(b).toBe('');
    expect(n).toBe(1);
    tap.close();
    camera.close();
  });

  it('passes bytes unchanged both ways, reads the session on the way, and takes one connection at a time', async () => {
    const { createServer, connect } = await import('node:net');
    const { RtspTap } = await import('../../src/sources/rtsp-tap.js');
    const { randomBytes } = await import('node:crypto');
    // A "camera": answers a SETUP, then sends 2 MB of RTP packets and a sender report.
    const sent: Buffer[] = [];
    const received: Buffer[] = [];
    let report: Buffer = Buffer.alloc(0);
    // The camera ends its stream only once the second connection was refused: a camera that ended
    // at once (2 MB fit in the loopback's socket buffers) closed the first connection before the
    // second's owner check answered on a loaded machine, and the relay then took the second, as it
    // takes ffmpeg's reconnection (the test hung, waiting for that one to close).
    let refused!: () => void;
    const secondRefused = new Promise<void>((r) => (refused = r));
    const camera = createServer((s) => {
      s.on('data', (d: Buffer) => {
        received.push(d);
        if (!d.toString('latin1').startsWith('SETUP')) return;
        s.write(reply(3, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n'));
        for (let k = 0; k < 100; k++) {
          const p = rtp(0, 1000 + 9000 * k, k, 0x1234, 20_000);
          randomBytes(20_000).copy(p, 16);
          sent.push(p);
          s.write(p);
        }
        void secondRefused.then(() => {
          // Its clock puts the last unit 2 s before now (it reaches argus after now).
          report = sr(1, Date.now() - 9900 - 2000, 1000);
          s.end(report);
        });
      });
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const tap = new RtspTap(`rtsp://u:p@127.0.0.1:${port}/live`);
    const url = await tap.listen();
    const relayPort = Number(/:(\d+)\/live$/.exec(url)![1]);
    expect(url).toBe(`rtsp://argus:relay@127.0.0.1:${relayPort}/live`);
    const client = connect(relayPort, '127.0.0.1');
    const got: Buffer[] = [];
    // A slow reader: the relay must hold the camera back, not buffer without bound.
    client.pause();
    const ended = new Promise<void>((r) => client.on('end', r));
    client.on('data', (d: Buffer) => got.push(d));
    await new Promise<void>((r) => client.on('connect', r));
    const request = Buffer.from('SETUP rtsp://127.0.0.1/live/trackID=1 RTSP/1.0\r\nCSeq: 3\r\n\r\n');
    client.write(request);
    // A second connection while the first is open is closed at once.
    const second = connect(relayPort, '127.0.0.1');
    second.on('error', () => {});
    await new Promise<void>((r) => second.on('close', () => r()));
    refused();
    setTimeout(() => client.resume(), 200);
    await ended;
    expect(Buffer.concat(received).equals(request)).toBe(true);
    expect(Buffer.concat(got).equals(Buffer.concat([reply(3, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n'), ...sent, report]))).toBe(true);
    expect(tap.clock.lookup(us(9000 * 99))!.by).toBe('camera');
    client.destroy();
    tap.close();
    camera.close();
  });

  it("a secret in the camera's query: the camera gets the real value in each request, ffmpeg only the placeholder, also where the camera echoes it (Content-Base, the SDP's control, RTP-Info), and the clock pairs RTP-Info with the SETUP as ffmpeg does", async () => {
    const { createServer, connect } = await import('node:net');
    const secret = 'Zx9/Tok';
    const cameraUrl = (port: number, rest = '', token = secret) => `rtsp://127.0.0.1:${port}/live?channel=1&token=${token}${rest}`;
    const requests: string[] = [];
    let port = 0;
    const camera = createServer((s) => {
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        for (let end = text.indexOf('\r\n\r\n'); end >= 0; end = text.indexOf('\r\n\r\n')) {
          const head = text.slice(0, end);
          text = text.slice(end + 4);
          requests.push(head.split('\r\n')[0]);
          const method = head.split(' ')[0];
          if (method === 'DESCRIBE') s.write(reply(2, `Content-Type: application/sdp\r\nContent-Base: ${cameraUrl(port, '/')}\r\n`, SDP.replace('a=control:trackID=1', `a=control:${cameraUrl(port, '/trackID=1')}`)));
          if (method === 'SETUP') s.write(reply(3, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 1\r\n'));
          if (method === 'PLAY') {
            s.write(reply(4, `Session: 1\r\nRTP-Info: url=${cameraUrl(port, '/trackID=1')};seq=7;rtptime=1000\r\n`));
            s.write(rtp(0, 10_000));
          }
        }
      });
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    port = (camera.address() as { port: number }).port;
    const tap = new RtspTap(cameraUrl(port), { endUnits: false });
    const url = await tap.listen();
    expect(url).toMatch(/^rtsp:\/\/127\.0\.0\.1:\d+\/live\?channel=1&token=argus-relay$/);
    const client = connect(Number(/:(\d+)\/live/.exec(url)![1]), '127.0.0.1');
    let got = '';
    client.on('data', (d: Buffer) => (got += d.toString('latin1')));
    await new Promise<void>((r) => client.on('connect', r));
    // Until the relay's answer holds `what`: ends at the bytes that complete it (it polled 200
    // times 10 ms, then went on without them, and the next step failed on the missing answer on
    // a machine busy enough; the bound only ends a hang, naming what never came).
    const until = (what: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!what.test(got)) return;
          clearTimeout(hang);
          client.off('data', check);
          resolve();
        };
        const hang = setTimeout(() => (client.off('data', check), reject(new Error(`never got ${what} from the relay; got ${JSON.stringify(got)}`))), 60_000);
        client.on('data', check);
        check();
      });
    client.write(request('DESCRIBE', url, 2));
    await until(/v=0[\s\S]*trackID=1\r\n/);
    // ffmpeg sets up the control the SDP names (the camera's own address here), as it got it.
    const control = /a=control:(\S+)/.exec(got.slice(got.indexOf('v=0')).split('m=video')[1])![1];
    expect(control).toBe(cameraUrl(port, '/trackID=1', 'argus-relay'));
    client.write(request('SETUP', control, 3));
    await until(/CSeq: 3/);
    client.write(request('PLAY', /Content-Base: (\S+)/.exec(got)![1], 4));
    await until(/RTP-Info[^]*\$/);
    client.destroy();
    tap.close();
    camera.close();
    expect(got).not.toContain(secret);
    expect(got).toContain(`Content-Base: ${cameraUrl(port, '/', 'argus-relay')}\r\n`);
    expect(got).toContain(`RTP-Info: url=${cameraUrl(port, '/trackID=1', 'argus-relay')};seq=7;rtptime=1000`);
    // The SDP's length is the length of what ffmpeg got.
    const body = got.slice(got.indexOf('v=0'), got.indexOf('RTSP/1.0 200 OK', got.indexOf('v=0')));
    expect(Number(/Content-Length: (\d+)/.exec(got)![1])).toBe(Buffer.byteLength(body, 'latin1'));
    expect(requests.map((r) => r.split(' ')[0])).toEqual(['DESCRIBE', 'SETUP', 'PLAY']);
    for (const r of requests) expect(r).toContain(`token=${secret}`);
    expect(requests.join('\n')).not.toContain('argus-relay');
    // RTP-Info's rtptime is the base (ffmpeg matched its url with its SETUP's): pts = 10000 − 1000.
    expect(tap.clock.lookup(us(9000))?.by).toBe('arrival');
  });

  it('an H.264 camera: its bytes reach ffmpeg in order, each access unit followed by a delimiter once the marker bit has proved true; none with endUnits: false', async () => {
    const { createServer, connect } = await import('node:net');
    const { RtspTap } = await import('../../src/sources/rtsp-tap.js');
    // A "camera": DESCRIBE (H.264) and SETUP replies, then 60 units of three 1 kB packets, the last marked.
    const describe = reply(2, 'Content-Type: application/sdp\r\n', SDP);
    const setup = reply(3, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n');
    const unitsOf = (k: number) => [0, 1, 2].map((i) => (i === 2 ? marked : rtp)(0, 1000 + 3000 * k, 3 * k + i, 0x1234, 1000 - 12));
    // (The client sends SETUP once the camera has answered DESCRIBE, as ffmpeg sends it after
    // DESCRIBE's reply: it waited 100 ms, and on a loaded machine the relay's door took longer,
    // both came in one chunk, and the camera, reading a request a chunk, never answered SETUP:
    // the test hung. The paused client reads nothing, so the camera says when.)
    let described!: () => void;
    let describedNow = new Promise<void>((r) => (described = r));
    const camera = createServer((s) => {
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        for (let end = text.indexOf('\r\n\r\n'); end >= 0; end = text.indexOf('\r\n\r\n')) {
          const method = text.slice(0, text.indexOf(' '));
          text = text.slice(end + 4);
          if (method === 'DESCRIBE') s.write(describe, () => described());
          if (method !== 'SETUP') continue;
          s.write(setup);
          for (let k = 0; k < 60; k++) for (const p of unitsOf(k)) s.write(p);
          s.end();
        }
      });
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const through = async (endUnits: boolean) => {
      const tap = new RtspTap(`rtsp://127.0.0.1:${port}/live`, { endUnits });
      const relayPort = Number(/:(\d+)\/live$/.exec(await tap.listen())![1]);
      const client = connect(relayPort, '127.0.0.1');
      const got: Buffer[] = [];
      client.pause(); // a slow reader: backpressure with the added packets too
      const ended = new Promise<void>((r) => client.on('end', r));
      client.on('data', (d: Buffer) => got.push(d));
      await new Promise<void>((r) => client.on('connect', r));
      client.write(request('DESCRIBE', 'rtsp://127.0.0.1/live', 2));
      await describedNow;
      describedNow = new Promise<void>((r) => (described = r));
      client.write(request('SETUP', 'rtsp://127.0.0.1/live/trackID=1', 3));
      setTimeout(() => client.resume(), 200);
      await ended;
      client.destroy();
      tap.close();
      return Buffer.concat(got);
    };
    const expected: Buffer[] = [describe, setup];
    for (let k = 0; k < 60; k++) {
      const ps = unitsOf(k);
      expected.push(...ps);
      if (k >= UNIT_END_TRUST) expected.push(Buffer.concat([Buffer.from([0x24, 0, 0, 14, 0x80, 96]), ps[2].subarray(6, 8), Buffer.from([0, 0, 0, 0]), Buffer.from([0, 0, 0x12, 0x34, 0x09, 0xf0])]));
      if (k >= UNIT_END_TRUST) expected[expected.length - 1].writeUInt32BE(1000 + 3000 * (k + 1), 8);
    }
    expect((await through(true)).equals(Buffer.concat(expected))).toBe(true);
    expect((await through(false)).equals(Buffer.concat([describe, setup, ...Array.from({ length: 60 }, (_, k) => unitsOf(k)).flat()]))).toBe(true);
    camera.close();
  });
});
