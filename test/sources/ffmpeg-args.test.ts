import { describe, expect, it } from 'vitest';
import { boundedSize, buildFfmpegArgs, ffmpegInput, frameBytes, isStillImage, readsOnce, reportsFrameTimes, sampleFilter, sourceKind, type FfmpegInputSpec } from '../../src/sources/ffmpeg-args.js';

const out = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };

describe('sourceKind', () => {
  it.each([
    ['rtsp://cam/stream', 'rtsp'],
    ['RTSPS://cam/stream', 'rtsp'],
    ['http://host/video.mjpg', 'http'],
    ['https://host/v.mp4', 'http'],
    ['/dev/video0', 'v4l2'],
    ['v4l2:///dev/video2', 'v4l2'],
    ['udp://239.0.0.1:1234', 'stream'],
    ['srt://enc:9000?mode=caller', 'stream'],
    ['rtmp://host/live/key', 'stream'],
    ['RTMPS://host/live/key', 'stream'],
    ['tcp://enc:2000', 'stream'],
    ['/data/clip.mp4', 'file'],
    ['file:///data/clip.mp4', 'file'],
  ])('%s → %s', (url, kind) => expect(sourceKind(url)).toBe(kind));
});

describe('readsOnce', () => {
  it('a URL ffmpeg listens on: tcp:// with listen, srt:// with mode=listener; not HTTP, RTSP or RTMP, which ffmpeg opens as a client whatever their query says', () => {
    for (const url of ['tcp://0.0.0.0:21000?listen', 'tcp://0.0.0.0:21000?listen=1', 'tcp://0.0.0.0:21000?timeout=5&listen=2', 'srt://0.0.0.0:21001?mode=listener', 'SRT://0.0.0.0:21001?latency=200&mode=listener']) expect(readsOnce(url), url).toBe(true);
    // (Real ffmpeg: `http://127.0.0.1:21012/?listen=1` and `rtsp://127.0.0.1:21010/live?listen` are "Connection refused": clients.)
    for (const url of ['http://cam/?listen=1', 'rtsp://cam/live?listen', 'rtmp://cam/app?listen', 'tcp://cam:21000', 'tcp://cam:21000?listen=0', 'srt://cam:21001?mode=caller', 'udp://0.0.0.0:21002', '/dev/video0']) expect(readsOnce(url), url).toBe(false);
  });
});

describe('buildFfmpegArgs', () => {
  it('native-rate looped file: -stream_loop before -i; no -re (argus paces the frames itself)', () => {
    const a = buildFfmpegArgs({ url: 'file:///x.mp4', kind: 'file', rate: 'native', loop: true }, out);
    expect(a).not.toContain('-re');
    expect(a.slice(a.indexOf('-stream_loop'), a.indexOf('-stream_loop') + 2)).toEqual(['-stream_loop', '-1']);
    expect(a[a.indexOf('-i') + 1]).toBe('file:/x.mp4');
  });

  it("a still image argus decoded: one raw RGB frame on stdin (looped by the loop filter: a pipe cannot be read again); a URL's picture is ffmpeg's, its density no pixel shape", () => {
    for (const loop of [false, true]) {
      const a = buildFfmpegArgs({ url: '/x.png', kind: 'file', rate: 'native', loop, still: { width: 640, height: 427 } }, { ...out, frame: 'source' });
      expect(a.slice(a.indexOf('-i') - 8, a.indexOf('-i') + 2)).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-video_size', '640x427', '-framerate', '25', '-i', 'pipe:0']);
      expect(a).not.toContain('-stream_loop');
      expect(a[a.indexOf('-vf') + 1].startsWith('loop=loop=-1:size=1,')).toBe(loop);
    }
    const url = buildFfmpegArgs({ url: 'http://cam/snapshot.jpg', kind: 'http', rate: 'native', loop: false }, { ...out, frame: 'source' });
    expect(url[url.indexOf('-vf') + 1]).toMatch(/^setsar=1,scale=/);
    const video = buildFfmpegArgs({ url: 'http://cam/live.ts', kind: 'http', rate: 'native', loop: false }, { ...out, frame: 'source' });
    expect(video[video.indexOf('-vf') + 1]).toMatch(/^scale=/);
  });

  it("a file reaches ffmpeg through its file protocol by name: a path that reads like one of ffmpeg's protocols is only a file's name", () => {
    const i = (url: string) => {
      const a = buildFfmpegArgs({ url, kind: 'file', rate: 'fast', loop: false }, out);
      return a[a.indexOf('-i') + 1];
    };
    expect(i('/data/clip.mp4')).toBe('file:/data/clip.mp4');
    expect(i('/base/concat:/a.mp4|/b.mp4')).toBe('file:/base/concat:/a.mp4|/b.mp4');
    expect(i('file://tcp://0.0.0.0:9?listen=1')).toBe('file:tcp://0.0.0.0:9?listen=1');
    expect(i('relative/clip.mp4')).toBe('file:relative/clip.mp4');
    // The same rule for argus detect / preview (videoFrames): a URL as it is, a path by name.
    expect(['http://cam/a.ts', 'cam-1:2.mp4', 'file:///data/a.mp4'].map(ffmpegInput)).toEqual(['http://cam/a.ts', 'file:cam-1:2.mp4', 'file:/data/a.mp4']);
  });

  it('a resumed file: -ss before -i; with a margin, the seek is earlier and the filter trims the rest first', () => {
    const a = buildFfmpegArgs({ url: '/x.mp4', kind: 'file', rate: 'native', loop: false, seek: 12.35 }, out);
    expect(a.slice(a.indexOf('-ss'), a.indexOf('-ss') + 2)).toEqual(['-ss', '12.350000']);
    expect(a.indexOf('-ss')).toBeLessThan(a.indexOf('-i'));
    expect(a[a.indexOf('-vf') + 1]).not.toContain('trim');
    const b = buildFfmpegArgs({ url: '/x.ts', kind: 'file', rate: 'native', loop: false, seek: 12.35, seekMargin: 3, fps: 5 }, out);
    expect(b.slice(b.indexOf('-ss'), b.indexOf('-ss') + 2)).toEqual(['-ss', '9.350000']);
    expect(b[b.indexOf('-vf') + 1].startsWith('trim=start=3.000000,fps=5,')).toBe(true);
    expect(buildFfmpegArgs({ url: 'rtsp://h/s', kind: 'rtsp', rate: 'native', loop: false, seek: 5 }, out)).not.toContain('-ss');
  });

  it('fast file: no -re', () => {
    expect(buildFfmpegArgs({ url: '/x.mp4', kind: 'file', rate: 'fast', loop: false }, out)).not.toContain('-re');
  });

  it('rtsp uses TCP transport by default and passes extra input args before -i', () => {
    const a = buildFfmpegArgs({ url: 'rtsp://h/s', kind: 'rtsp', rate: 'native', loop: false, inputArgs: ['-hwaccel', 'cuda'] }, out);
    expect(a.join(' ')).toContain('-rtsp_transport tcp');
    expect(a.indexOf('-hwaccel')).toBeLessThan(a.indexOf('-i'));
  });

  it('v4l2 devices use the v4l2 demuxer', () => {
    const a = buildFfmpegArgs({ url: 'v4l2:///dev/video0', kind: 'v4l2', rate: 'native', loop: false }, out);
    expect(a.join(' ')).toContain('-f v4l2 -max_pixels 67108864 -i /dev/video0');
  });

  it('every input decodes at most 8192x8192 pictures (a still image: sharp\'s 16383x16383): -max_pixels before -i, ahead of the user\'s own input arguments (which may set it)', () => {
    const still = buildFfmpegArgs({ url: '/photos/IMG_0001.JPG', kind: 'file', rate: 'native', loop: false }, out);
    expect(still[still.indexOf('-max_pixels') + 1]).toBe(String(16383 * 16383));
    for (const kind of ['file', 'rtsp', 'http', 'stream', 'v4l2'] as const) {
      const a = buildFfmpegArgs({ url: kind === 'file' ? '/x.mp4' : 'rtsp://h/x', kind, rate: 'native', loop: false, inputArgs: ['-max_pixels', '1000'] }, out);
      const at = a.indexOf('-max_pixels');
      expect(a[at + 1], kind).toBe(String(8192 * 8192));
      expect(at, kind).toBeLessThan(a.lastIndexOf('-max_pixels'));
      expect(a.lastIndexOf('-max_pixels'), kind).toBeLessThan(a.indexOf('-i'));
    }
  });

  it('scales keeping aspect, pads with the model pad value and writes raw frames to stdout', () => {
    const a = buildFfmpegArgs({ url: '/x.mp4', kind: 'file', rate: 'fast', loop: false, fps: 15 }, { ...out, pixelFormat: 'rgb24', align: 'center' });
    const vf = a[a.indexOf('-vf') + 1];
    expect(vf.startsWith('fps=15,scale=')).toBe(true);
    expect(vf).toContain('format=rgb24');
    expect(vf).toContain('pad=416:416:floor((416-iw)/2):floor((416-ih)/2):color=0x727272');
    expect(a.slice(-15)).toEqual(['-pix_fmt', 'rgb24', '-flush_packets', '1', '-threads', '1', '-map_metadata', '-1', '-map_metadata:s', '-1', '-map_chapters', '-1', '-f', 'rawvideo', 'pipe:1']);
  });

  it('a live source with fps keeps at most one frame of each 1/fps interval (select), never the fps filter, which counts from 0 against wall-clock timestamps', () => {
    const a = buildFfmpegArgs({ url: 'rtsp://cam/x', kind: 'rtsp', rate: 'native', loop: false, fps: 2 }, out);
    const vf = a[a.indexOf('-vf') + 1];
    expect(vf).not.toMatch(/(^|,)fps=/);
    expect(vf.startsWith(`${sampleFilter(2)},`)).toBe(true);
    expect(a).toContain('-use_wallclock_as_timestamps');
  });

  it('decoding: one decoder thread by default (an input option, before -i); 0 leaves it to ffmpeg; more than one uses slice threads unless low latency is off', () => {
    const opt = (a: string[], k: string) => (a.indexOf(k) >= 0 && a.indexOf(k) < a.indexOf('-i') ? a[a.indexOf(k) + 1] : undefined);
    const base = { url: '/x.mp4', kind: 'file' as const, rate: 'fast' as const, loop: false };
    expect(opt(buildFfmpegArgs(base, out), '-threads')).toBe('1');
    // (0: no decoder -threads before -i; the one after -i is the output's, always 1.)
    expect(opt(buildFfmpegArgs({ ...base, decode: { lowLatency: true, threads: 0 } }, out), '-threads')).toBeUndefined();
    const outThreads = (a: string[]) => a[a.lastIndexOf('-threads') + 1] === '1' && a.lastIndexOf('-threads') > a.indexOf('-i');
    expect(outThreads(buildFfmpegArgs({ ...base, decode: { lowLatency: true, threads: 0 } }, out))).toBe(true);
    const four = buildFfmpegArgs({ ...base, decode: { lowLatency: true, threads: 4 } }, out);
    expect([opt(four, '-threads'), opt(four, '-thread_type')]).toEqual(['4', 'slice']);
    expect(buildFfmpegArgs({ ...base, decode: { lowLatency: false, threads: 4 } }, out)).not.toContain('-thread_type');
    expect(buildFfmpegArgs({ ...base, decode: { lowLatency: false, threads: 1 } }, out)).not.toContain('-flush_packets');
  });

  it('low latency on network inputs: a short probe (HTTP: not ffmpeg\'s 5 s default), without dropping what the probe read; off restores the defaults', () => {
    const http = { url: 'http://cam/feed.ts', kind: 'http' as const, rate: 'native' as const, loop: false };
    const a = buildFfmpegArgs(http, out).join(' ');
    expect(a).not.toContain('nobuffer');
    expect(a).toContain('-probesize 1000000 -analyzeduration 200000');
    const off = buildFfmpegArgs({ ...http, decode: { lowLatency: false, threads: 1 } }, out).join(' ');
    expect(off).not.toContain('-analyzeduration');
    expect(buildFfmpegArgs({ ...http, kind: 'rtsp', url: 'rtsp://h/s' }, out).join(' ')).toContain('-analyzeduration 200000 -fpsprobesize 2');
    expect(buildFfmpegArgs({ ...http, kind: 'rtsp', url: 'rtsp://h/s', decode: { lowLatency: false, threads: 1 } }, out)).not.toContain('-fpsprobesize');
    expect(buildFfmpegArgs({ ...http, kind: 'stream', url: 'udp://239.0.0.1:1234' }, out).join(' ')).toContain('-probesize 1000000 -analyzeduration 200000');
  });

  it('live sources stamp packets with the wall clock and report each output frame\'s time, one output frame per filtered frame; files do not', () => {
    for (const kind of ['rtsp', 'http', 'stream', 'v4l2'] as const) {
      const input = { url: kind === 'v4l2' ? '/dev/video0' : `${kind}://h/s`, kind, rate: 'native' as const, loop: false };
      expect(reportsFrameTimes(input)).toBe(true);
      const a = buildFfmpegArgs(input, out);
      expect(a.indexOf('-use_wallclock_as_timestamps')).toBeLessThan(a.indexOf('-i'));
      expect(a.join(' ')).toContain('-copyts -vsync passthrough');
      expect(a[a.indexOf('-vf') + 1].endsWith(',settb=AVTB,metadata=mode=add:key=argus:value=1,metadata=mode=print:key=argus')).toBe(true);
    }
    for (const rate of ['native', 'fast'] as const) {
      const input = { url: '/x.mp4', kind: 'file' as const, rate, loop: false };
      expect(reportsFrameTimes(input)).toBe(false);
      // Letterboxed or at the source's size: each frame on the log (a resolution change placed
      // at its frame), the file's own timestamps and constant-rate output kept.
      for (const frame of ['letterbox', 'source', 'source-yuv'] as const) {
        const a = buildFfmpegArgs(input, { ...out, frame }, 'f00d');
        expect(a[a.indexOf('-vf') + 1].endsWith(',settb=AVTB,metadata=mode=add:key=argus_f00d:value=1,metadata=mode=print:key=argus_f00d')).toBe(true);
        expect(a.join(' ')).not.toContain('wallclock');
        expect(a.join(' ')).not.toContain('-copyts');
        expect(a.join(' ')).not.toContain('-vsync');
      }
    }
  });
});

describe('frames at the source size, packed or 4:2:0', () => {
  it('packed: the bound, then the model’s pixel format; 4:2:0: the bound, then yuv420p or yuvj420p as ffmpeg decoded it, no -pix_fmt', () => {
    const file = { url: '/x.mp4', kind: 'file' as const, rate: 'fast' as const, loop: false };
    const packed = buildFfmpegArgs(file, { ...out, frame: 'source' });
    expect(packed[packed.indexOf('-vf') + 1]).toMatch(/^scale=w='if\(gt\(round\(iw\*max\(1\\,if\(between\(sar.*.*,format=bgr24,settb=AVTB,metadata=mode=add:key=argus:value=1,metadata=mode=print:key=argus$/);
    // Each picture at its own size: never scaled to the first (a resolution change ends the run).
    expect(packed.slice(packed.indexOf('-autoscale'), packed.indexOf('-autoscale') + 2)).toEqual(['-autoscale', '0']);
    expect(buildFfmpegArgs(file, out)).not.toContain('-autoscale');
    expect(packed.slice(packed.indexOf('-pix_fmt'), packed.indexOf('-pix_fmt') + 2)).toEqual(['-pix_fmt', 'bgr24']);
    const yuv = buildFfmpegArgs(file, { ...out, frame: 'source-yuv' });
    expect(yuv[yuv.indexOf('-vf') + 1]).toMatch(/^scale=w='if\(gt\(round\(iw\*max\(1\\,if\(between\(sar.*.*,format=pix_fmts=yuv420p\|yuvj420p,settb=AVTB,metadata=mode=add:key=argus:value=1,metadata=mode=print:key=argus$/);
    expect(yuv).toContain('-autoscale');
    expect(yuv).not.toContain('-pix_fmt');
    expect(frameBytes({ ...out, frame: 'source' }, 851, 479)).toBe(851 * 479 * 3);
    expect(frameBytes({ ...out, frame: 'source-yuv' }, 851, 478)).toBe(851 * 478 + 2 * 426 * 239);
    expect(frameBytes({ ...out, frame: 'source-yuv' }, 1920, 1080)).toBe(1920 * 1080 * 1.5);
    expect(frameBytes(out, 1920, 1080)).toBe(416 * 416 * 3);
  });
});

describe('boundedSize (source-size frames)', () => {
  it('keeps pictures of up to 4K UHD\'s pixel count, portrait or landscape, and reduces larger ones keeping the aspect', () => {
    expect(boundedSize(3840, 2160)).toEqual({ width: 3840, height: 2160 });
    expect(boundedSize(2160, 3840)).toEqual({ width: 2160, height: 3840 }); // a portrait 4K phone video
    expect(boundedSize(4096, 2304)).toEqual({ width: 3840, height: 2160 });
    expect(boundedSize(4000, 3000)).toEqual({ width: 3324, height: 2494 }); // what ffmpeg's filter makes of it
    expect(boundedSize(16384, 16384)).toEqual({ width: 2880, height: 2880 });
  });
});

describe('plausibleArrival (live frames’ produced stamp)', () => {
  it('takes a reported arrival before the delivery and within a minute of it; not 0 (the first frame of an RTSP session), not a time after delivery', async () => {
    const { plausibleArrival } = await import('../../src/sources/ffmpeg-source.js');
    const captured = 1_796_164_366_336;
    expect(plausibleArrival(captured - 40, captured)).toBe(true);
    expect(plausibleArrival(captured, captured)).toBe(true);
    expect(plausibleArrival(0, captured)).toBe(false);
    expect(plausibleArrival(captured - 61_000, captured)).toBe(false);
    expect(plausibleArrival(captured + 1, captured)).toBe(false);
  });
});

describe('isStillImage', () => {
  it.each([
    ['a photo', '/data/photo.JPG', true],
    ["a file name with '?' in it (a path has no query)", '/data/real?.png', true],
    ["a file name with '#' in it (a path has no fragment)", 'photo#1.jpg', true],
    ['a URL with a query after the image', 'http://cam/snap.jpg?size=large', true],
    ['a URL whose query only looks like an image', 'http://cam/stream?name=x.jpg', false],
    ['a video', '/data/clip.mp4', false],
    ['a GIF (an animation: frames)', '/data/a.gif', false],
  ])('%s: %s → %s', (_n, url, still) => {
    expect(isStillImage(url)).toBe(still);
  });
});

describe('deinterlacing (decode.deinterlace)', () => {
  const vf = (input: Partial<FfmpegInputSpec>, frame?: 'letterbox' | 'source' | 'source-yuv') => {
    const a = buildFfmpegArgs({ url: '/cam.mp4', kind: 'file', rate: 'native', loop: false, ...input }, { ...out, frame });
    return a[a.indexOf('-vf') + 1];
  };
  const decode = (deinterlace: 'auto' | 'on' | 'off') => ({ lowLatency: true, threads: 1, deinterlace });
  const frames = ['letterbox', 'source', 'source-yuv'] as const;

  it.each(frames)('auto (the default), a stream not reported interlaced: no deinterlacer, so a progressive source gets no delay and no cost (%s)', (frame) => {
    for (const input of [{}, { decode: decode('auto') }, { decode: decode('auto'), interlaced: false }, { kind: 'rtsp' as const, url: 'rtsp://cam/1', fps: 5 }]) {
      expect(vf(input, frame)).not.toMatch(/bwdif|yadif/);
    }
  });

  it.each(frames)('auto, a stream reported interlaced: bwdif on the frames flagged interlaced, one frame out per frame in, first in the graph (before the fps filter and any scaling) (%s)', (frame) => {
    for (const input of [{ interlaced: true }, { interlaced: true, decode: decode('auto'), fps: 5 }, { interlaced: true, kind: 'rtsp' as const, url: 'rtsp://cam/1', fps: 5 }]) {
      expect(vf(input, frame)).toMatch(/^bwdif=mode=send_frame:parity=auto:deint=interlaced,/);
    }
  });

  it.each(frames)('on: every frame deinterlaced, reported interlaced or not; off: never (%s)', (frame) => {
    for (const interlaced of [false, true]) {
      expect(vf({ interlaced, decode: decode('on') }, frame)).toMatch(/^bwdif=mode=send_frame:parity=auto:deint=all,/);
      expect(vf({ interlaced, decode: decode('off') }, frame)).not.toContain('bwdif');
    }
  });

  it('a seek margin is trimmed after the deinterlacer (it sees every field in order); a still image is never deinterlaced', () => {
    expect(vf({ interlaced: true, seek: 10, seekMargin: 2 })).toMatch(/^bwdif=[^,]+,trim=start=2\.000000,/);
    expect(vf({ url: '/x.png', still: { width: 64, height: 48 }, decode: decode('on') }, 'source')).not.toContain('bwdif');
    expect(vf({ url: 'http://cam/snapshot.jpg', kind: 'http', decode: decode('on') }, 'source')).not.toContain('bwdif');
  });
});
