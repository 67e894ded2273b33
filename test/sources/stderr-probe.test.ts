import { describe, expect, it } from 'vitest';
import { colourOf, exactRate, FrameTimes, outputRate, parseVideoStreamLine, StderrProbe } from '../../src/sources/stderr-probe.js';

describe('parseVideoStreamLine', () => {
  it.each([
    ['mp4 h264', '    Stream #0:0(eng): Video: h264 (Main) (avc1 / 0x31637661), yuv420p(tv, smpte170m), 768x432, 187 kb/s, 10 fps, 10 tbr, 200k tbn, 20 tbc (default)', { width: 768, height: 432, fps: 10, tbr: 10, pixFmt: 'yuv420p', pixDetails: 'tv, smpte170m' }],
    ['fractional fps', '    Stream #0:0: Video: h264 (High), yuv420p(progressive), 640x360 [SAR 1:1 DAR 16:9], 29.83 fps, 29.83 tbr, 90k tbn', { width: 640, height: 360, fps: 29.83, tbr: 29.83, pixFmt: 'yuv420p', pixDetails: 'progressive' }],
    ['rtsp with tbr only', '    Stream #0:0: Video: h264 (Constrained Baseline), yuv420p(progressive), 1920x1080, 30 tbr, 90k tbn, 180k tbc', { width: 1920, height: 1080, fps: 30, tbr: 30, pixFmt: 'yuv420p', pixDetails: 'progressive' }],
    ['gif', '    Stream #0:0: Video: gif, bgra, 480x270, 15 fps, 15 tbr, 100 tbn, 100 tbc', { width: 480, height: 270, fps: 15, tbr: 15, pixFmt: 'bgra', pixDetails: '' }],
    // A variable-rate recording: the average (fps) below the rate its timestamps fit (tbr)
    ['variable rate', '  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(progressive), 320x240 [SAR 1:1 DAR 4:3], 47 kb/s, 22.22 fps, 30 tbr, 15360 tbn (default)', { width: 320, height: 240, fps: 22.22, tbr: 30, pixFmt: 'yuv420p', pixDetails: 'progressive' }],
    // ffmpeg -loglevel verbose puts the reference count before the pixel format
    ['verbose output stream', '  Stream #0:0(eng): Video: rawvideo, 1 reference frame (I420 / 0x30323449), yuvj420p(pc, bt470bg/unknown/unknown, progressive), 640x360 (0x0) [SAR 1:1 DAR 16:9], q=2-31, 82483 kb/s, 29.83 fps, 29.83 tbn (default)', { width: 640, height: 360, fps: 29.83, pixFmt: 'yuvj420p', pixDetails: 'pc, bt470bg/unknown/unknown, progressive' }],
  ])('%s', (_n, line, want) => {
    expect(parseVideoStreamLine(line)).toEqual(want);
  });

  it('outputRate: the rate of ffmpeg\'s constant-rate output, as av_guess_frame_rate picks it: the tbr, the average where the tbr is implausible', () => {
    expect(outputRate({ width: 1, height: 1, fps: 22.22, tbr: 30 })).toBe(30); // variable rate: frames repeated up to 30
    expect(outputRate({ width: 1, height: 1, fps: 25, tbr: 25 })).toBe(25);
    expect(outputRate({ width: 1, height: 1, fps: 29.97, tbr: 1000 })).toBe(29.97); // a 1k tbr (some MKVs, screen recorders)
    expect(outputRate({ width: 1, height: 1, fps: 25, tbr: 50, pixFmt: 'yuv420p', pixDetails: 'tv, bt709, top first' })).toBe(25); // 1080i: the tbr is the field rate
    expect(outputRate({ width: 1, height: 1, fps: 25, tbr: 50, pixFmt: 'yuv420p', pixDetails: 'bottom coded first (swapped)' })).toBe(25);
    expect(outputRate({ width: 1, height: 1, fps: 15, tbr: 30, pixFmt: 'yuv420p', pixDetails: 'tv, bt709, progressive' })).toBe(30); // a phone's file at half its rate: ffmpeg keeps the tbr
    expect(outputRate({ width: 1, height: 1, fps: 29.97 })).toBe(29.97);
    expect(outputRate({ width: 1, height: 1, tbr: 25 })).toBe(25);
    expect(outputRate({ width: 1, height: 1 })).toBeUndefined();
    expect(outputRate(undefined)).toBeUndefined();
  });

  it('rates ffmpeg prints rounded (23.98, 29.97, 59.94) are read as the exact N·1000/1001; others as printed', () => {
    expect(parseVideoStreamLine('  Stream #0:0: Video: h264 (High), yuv420p(progressive), 1920x1080, 23.98 fps, 23.98 tbr, 24k tbn')).toMatchObject({ fps: 24000 / 1001, tbr: 24000 / 1001 });
    expect(exactRate(29.97)).toBe(30000 / 1001);
    expect(exactRate(59.94)).toBe(60000 / 1001);
    expect(exactRate(14.99)).toBe(15000 / 1001);
    expect(exactRate(11.99)).toBe(12000 / 1001);
    expect(exactRate(29.83)).toBe(29.83);
    expect(exactRate(25)).toBe(25);
    expect(exactRate(30)).toBe(30);
  });

  it('the colour of a stream: its colour space picks the matrix (BT.601 for the rest), "pc" or a yuvj format is full range', () => {
    expect(colourOf('yuv420p', 'tv, bt709, progressive')).toEqual({ matrix: 'bt709', fullRange: false });
    expect(colourOf('yuv420p', 'tv, smpte170m')).toEqual({ matrix: 'bt601', fullRange: false });
    expect(colourOf('yuv420p', 'bt2020nc/bt2020/smpte2084')).toEqual({ matrix: 'bt2020', fullRange: false });
    expect(colourOf('yuv420p', 'pc, fcc/unknown/unknown')).toEqual({ matrix: 'fcc', fullRange: true });
    expect(colourOf('yuvj420p', 'bt470bg/unknown/unknown')).toEqual({ matrix: 'bt601', fullRange: true });
    expect(colourOf('yuv420p', 'progressive, left')).toEqual({ matrix: 'bt601', fullRange: false });
    expect(colourOf('yuv420p', 'tv, constructor')).toEqual({ matrix: 'bt601', fullRange: false }); // not an Object key
    expect(colourOf('yuv420p')).toEqual({ matrix: 'bt601', fullRange: false });
  });

  it('ignores audio streams and other lines', () => {
    expect(parseVideoStreamLine('    Stream #0:1(und): Audio: aac (LC), 48000 Hz, stereo, fltp, 128 kb/s')).toBeUndefined();
    expect(parseVideoStreamLine('  Duration: 00:02:19.40, start: 0.000000, bitrate: 188 kb/s')).toBeUndefined();
  });
});

/** A probe whose scaler has reported 640x360, and the sizes it reports a change to after that. */
function scaledProbe() {
  const p = new StderrProbe();
  p.push('[Parsed_scale_0 @ 0x55d0] w:640 h:360 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2\n');
  const resized: string[] = [];
  p.onResize = (w, h) => resized.push(`${w}x${h}`);
  return { p, resized };
}

describe('StderrProbe', () => {
  it('reads the input stream (not the output one) from a log split at odd places', () => {
    const log = [
      "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x.mp4':\n  Duration: 00:00:40.00\n    Stream #0:0: Vid",
      'eo: h264 (High), yuv420p, 640x360, 29.83 fps, 29.83 tbr\nStream mapping:\n',
      "Output #0, rawvideo, to 'pipe:1':\n    Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 416x416, 29.83 fps\n",
    ];
    const p = new StderrProbe();
    const found = log.map((c) => p.push(c));
    expect(found[0]).toBeUndefined();
    expect(found[1]).toEqual({ width: 640, height: 360, fps: 29.83, tbr: 29.83, format: 'mov,mp4,m4a,3gp,3g2,mj2', pixFmt: 'yuv420p', pixDetails: '' });
    expect(found[2]).toBeUndefined();
    expect(p.info).toEqual({ width: 640, height: 360, fps: 29.83, tbr: 29.83, format: 'mov,mp4,m4a,3gp,3g2,mj2', pixFmt: 'yuv420p', pixDetails: '' });
    expect(p.output).toEqual({ width: 416, height: 416, fps: 29.83, pixFmt: 'bgr24', pixDetails: '' });
  });

  it.each([
    ['ffmpeg 5.1', '[Parsed_scale_0 @ 0x561c67f57d80] w:432 h:768 fmt:yuv420p sar:0/1 -> w:416 h:234 fmt:bgr24 sar:0/1 flags:0x0'],
    ['ffmpeg 4.x', '[Parsed_scale_1 @ 0x55d0] w:432 h:768 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2'],
    ['ffmpeg 7.1 (colour space and range)', '[Parsed_scale_0 @ 0x5d7a] w:432 h:768 fmt:yuv420p csp:bt470bg range:tv sar:1/1 -> w:416 h:234 fmt:bgr24 csp:gbr range:pc sar:1/1 flags:0x00000004'],
  ])('the size the scaler gets, as %s logs it; a later different size is a resize', (_v, line) => {
    const p = new StderrProbe();
    const resized: string[] = [];
    p.onResize = (w, h) => resized.push(`${w}x${h}`);
    p.push(`${line}\n`);
    expect(p.scaledFrom).toEqual({ width: 432, height: 768 });
    expect(resized).toEqual([]); // the first report is the start, not a change
    p.push(`${line.replace('w:432 h:768', 'w:640 h:360')}\n`);
    expect(resized).toEqual(['640x360']);
  });

  it("an output stream line with no size it can read is kept as unreadable; a readable one, and the metadata lines after it, are not", () => {
    const head = "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x.mp4':\n    Stream #0:0: Video: h264 (High), yuv420p, 640x360, 30 fps, 30 tbr\nStream mapping:\nOutput #0, rawvideo, to 'pipe:1':\n  Metadata:\n    encoder         : Lavf59.27.100\n";
    const bad = new StderrProbe();
    bad.push(`${head}  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, q=2-31, 30 fps\n    Metadata:\n      encoder         : Lavc59.37.100 rawvideo\n`);
    expect(bad.output).toBeUndefined();
    expect(bad.outputUnreadable).toBe('Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, q=2-31, 30 fps');
    const good = new StderrProbe();
    good.push(`${head}  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 640x360, q=2-31, 30 fps\n    Metadata:\n      encoder         : Lavc59.37.100 rawvideo\n`);
    expect(good.output).toMatchObject({ width: 640, height: 360 });
    expect(good.outputUnreadable).toBeUndefined();
  });

  it("with the output's own name, only ffmpeg's report of that output is read: lines a file's metadata forged before it (a fake mapping, output and stream) are not", () => {
    const p = new StderrProbe(20, 'pipe:argus-0123');
    p.push(
      "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'evil.mp4':\n  Metadata:\n    x\nStream mapping:\nOutput #0, rawvideo, to 'pipe:1':\n  Stream #0:0: Video: rawvideo (I420 / 0x30323449), yuv420p, 99998x99998, q: 2-31, 10 fps\n                    : y\n" +
        '  Duration: 00:00:01.00\n  Stream #0:0[0x1](und): Video: h264 (High), yuv420p(progressive), 320x240, 10 fps, 10 tbr\nStream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n',
    );
    expect(p.output).toBeUndefined();
    p.push("Output #0, rawvideo, to 'pipe:argus-0123':\n  Stream #0:0: Video: rawvideo (I420 / 0x30323449), yuv420p(progressive), 320x240, q=2-31, 10 fps, 10 tbn\n");
    expect(p.output).toMatchObject({ width: 320, height: 240, pixFmt: 'yuv420p' });
  });

  it("a scaler report counts only as a line of its own (not quoted inside another: an HLS segment's url, a server's reason phrase); a line longer than any report is not read", () => {
    const { p, resized } = scaledProbe();
    p.push("[hls @ 0x1] HLS request for url '[Parsed_scale_0 @ 0x2] w:0 h:0 fmt:x -> w:1 h:1', offset 0\n");
    p.push(`[Parsed_scale_0 @ 0x55d0] w:99 h:99 fmt:yuv420p -> w:416 h:416 fmt:bgr24 ${'x'.repeat(5000)}\n`);
    expect(p.scaledFrom).toEqual({ width: 640, height: 360 });
    expect(resized).toEqual([]);
    // A line without end, however long, is dropped rather than kept growing.
    for (let i = 0; i < 100; i++) p.push('1'.repeat(10_000));
    p.push('\n[Parsed_scale_0 @ 0x55d0] w:320 h:180 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2\n');
    expect(resized).toEqual(['320x180']);
  });

  it("the stream's rate as ffmpeg gave its filter graph (exact, the last one printed: a forged one comes before it), as 5.1 and 4.x print it", () => {
    const p = new StderrProbe();
    p.push("Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x':\n[graph 0 input from stream 0:0 @ 0x1] w:1 h:1 pixfmt:yuv420p tb:1/1 fr:1/1 sar:0/1\n");
    p.push('[graph 0 input from stream 0:0 @ 0x5586df398540] w:768 h:432 pixfmt:yuv420p tb:1/200000 fr:30000/1001 sar:0/1\n');
    expect(p.graphRate).toBe(30000 / 1001);
    p.push('[graph 0 input from stream 0:0 @ 0x15de70c0] w:768 h:432 pixfmt:yuv420p tb:1/200000 fr:10/1 sar:0/1 sws_param:flags=2\n');
    expect(p.graphRate).toBe(10);
    p.push('[graph 0 input from stream 0:0 @ 0x15de70c0] w:768 h:432 pixfmt:yuv420p tb:1/90000 fr:0/1 sar:0/1\n'); // a rate ffmpeg cannot guess: it writes 25 fps
    expect(p.graphRate).toBe(25);
    p.push('[graph 0 input from stream 0:0 @ 0x5d7a] w:768 h:432 pixfmt:yuv420p csp:bt709 range:tv tb:1/15360 fr:24000/1001 sar:1/1\n'); // 7.1's fields
    expect(p.graphRate).toBe(24000 / 1001);
    // An ffmpeg that prints no such line: none (the input's report is used instead).
    expect(new StderrProbe().graphRate).toBeUndefined();
  });

  it("the input's first video stream is read from its report only when the report's stream lines are ffmpeg's (each index once, in order); else from what ffmpeg gave its filter graph", () => {
    const graph = '[graph 0 input from stream 0:0 @ 0x560cbda3c100] w:640 h:360 pixfmt:yuv420p tb:1/1000 fr:10/1 sar:1/1\n';
    const end = "Output #0, rawvideo, to 'pipe:argus-0123':\n";
    const read = (log: string) => {
      const p = new StderrProbe(20, 'pipe:argus-0123');
      let opened = 0;
      p.onInputOpened = () => opened++;
      const found = p.push(log);
      expect(found).toBe(p.info); // returned once, when the input's report has ended
      expect(opened).toBe(1);
      return p.info;
    };
    // As ffmpeg 5.1 logged an FLV stream over TCP whose onMetaData has a key with line breaks
    // (an RTMP camera's metadata can): its stream line comes before the real one.
    const flv =
      "Input #0, flv, from 'tcp://127.0.0.1:19555':\n  Metadata:\n    evil\n  Stream #0:0: Video: h264 (High), yuv420p(progressive), 640x360, 0.001 fps, 0.001 tbr, 1k tbn\nx: 1\n    encoder         : Lavf59.27.100\n" +
      '  Duration: 00:00:00.00, start: 0.200000, bitrate: N/A\n  Stream #0:0: Video: h264 (High), 1 reference frame, yuv420p(progressive, left), 640x360 (640x368) [SAR 1:1 DAR 16:9], 10 fps, 10 tbr, 1k tbn\n' +
      'Stream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n';
    expect(read(flv + graph + end)).toEqual({ width: 640, height: 360, pixFmt: 'yuv420p', pixDetails: '', fps: 10, tbr: 10, format: 'flv' });
    // Without a graph line (an ffmpeg that prints none): nothing rather than the forged line.
    expect(read(flv + end)).toBeUndefined();
    // An audio stream first, a video line forged in its metadata: the index repeats.
    const audioFirst = (forged: string) =>
      "Input #0, flv, from 'x':\n  Duration: 00:00:10.00\n  Stream #0:0: Audio: aac (LC), 48000 Hz, stereo, fltp\n    Metadata:\n" + forged +
      '  Stream #0:1: Video: h264 (High), yuv420p(progressive), 640x360, 22.22 fps, 30 tbr, 1k tbn\n' + graph + end;
    expect(read(audioFirst('  Stream #0:1: Video: h264, yuv420p, 640x360, 0.001 fps\n'))?.fps).toBe(10);
    expect(read(audioFirst('  Stream #0:7: Video: h264, yuv420p, 640x360, 0.001 fps\n'))?.fps).toBe(10); // an index no stream has
    // ffmpeg's own report: its average rate (22.22, not the graph's 10) and details are kept.
    expect(read(audioFirst('    title           : t\n'))).toEqual({ width: 640, height: 360, fps: 22.22, tbr: 30, pixFmt: 'yuv420p', pixDetails: 'progressive', format: 'flv' });
    // A second `Input #0` line (a key's, after the real one; an RTSP server's SDP, before it): the
    // report is not used, nor either format name; the first line opens the input.
    expect(read(audioFirst("    x\nInput #0, rtsp, from 'y':\n"))).toEqual({ width: 640, height: 360, pixFmt: 'yuv420p', pixDetails: '', fps: 10, tbr: 10 });
    // The first video stream at index 10 or more: the stream mapping's line (`Stream #0:11 -> #0:0`) is not a stream's.
    const audio = [...Array(11).keys()].map((i) => `  Stream #0:${i}: Audio: aac (LC), 48000 Hz, stereo, fltp\n`).join('');
    expect(read(`Input #0, matroska,webm, from 'x':\n${audio}  Stream #0:11: Video: h264 (High), yuv420p(progressive), 640x360, 22.22 fps, 30 tbr, 1k tbn\nStream mapping:\n  Stream #0:11 -> #0:0 (h264 (native) -> rawvideo (native))\n${graph}${end}`)?.fps).toBe(22.22);
    // A stream's language tag, printed as it is inside its own line: a forged rate in the same line,
    // or a line break that puts a stream line of its own before the rest.
    const video = (lang: string) => `Input #0, matroska,webm, from 'x':\n  Stream #0:0(${lang}): Video: h264 (High), yuv420p(progressive), 640x360, 22.22 fps, 30 tbr, 1k tbn\n${graph}${end}`;
    expect(read(video('eng'))?.fps).toBe(22.22);
    expect(read(video('x): Video: h264, yuv420p, 640x360, 0.001 fps, 0.001 tbr, 1k tbn, ('))?.fps).toBe(10);
    expect(read(video('x\n  Stream #0:0: Video: h264, yuv420p, 640x360, 0.001 fps\ny'))?.fps).toBe(10);
    // …or a tag so long that the stream's own line is not read, after a line forged before it.
    expect(read(`Input #0, flv, from 'x':\n  Metadata:\n    k\n  Stream #0:0: Video: h264, yuv420p, 640x360, 0.001 fps\n${video('a'.repeat(5000)).slice(video('').indexOf('\n') + 1)}`)?.fps).toBe(10);
    // A carriage return in a stream's tag: its own line is not read, so neither is the report
    // (as ffmpeg 5.1 logged an MKV whose audio stream's metadata key forged the video stream's line).
    const cr = "Input #0, matroska,webm, from 'x':\n  Stream #0:0: Audio: aac (LC), 48000 Hz, stereo, fltp\n    Metadata:\n      k\n  Stream #0:1: Video: h264, yuv420p, 99x99, 0.001 fps, 0.001 tbr\n: v\n  Stream #0:1(e\rn): Video: h264 (High), yuv420p(progressive), 640x360, 25 fps, 25 tbr, 1k tbn\n";
    expect(read(cr + graph + end)?.fps).toBe(10);
    // A stream in two programs is listed twice by ffmpeg itself: not used either (ffmpeg's guess instead).
    expect(read("Input #0, mpegts, from 'x':\n  Program 1\n    Stream #0:0[0x100]: Video: h264, yuv420p, 640x360, 22.22 fps\n  Program 2\n    Stream #0:0[0x100]: Video: h264, yuv420p, 640x360, 22.22 fps\n" + graph + end)?.fps).toBe(10);
    // Lines forged after every stream's own (in the last stream's metadata) come after the first video stream's.
    expect(read(audioFirst('').replace(graph, '    Metadata:\n  Stream #0:2: Video: h264, yuv420p, 99x99, 0.001 fps\n' + graph))?.fps).toBe(22.22);
  });

  it("a line is what ends in a line break: a carriage return inside one (a server's HTTP reason phrase) does not start a line, and the rest of an over-long line is not one either", () => {
    const { p, resized } = scaledProbe();
    // As an HLS server answering a segment with `404 x\r[Parsed_scale_0 …]` was logged.
    p.push('[hls @ 0x1] HTTP error 404 x\r[Parsed_scale_0 @ 0x1] w:320 h:180 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2\n');
    // A line that runs past 4 KiB in one chunk and ends, where its writer chose, in the next.
    p.push(`[x] ${'a'.repeat(5000)}`);
    p.push('[Parsed_scale_0 @ 0x1] w:320 h:180 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2\n');
    expect(resized).toEqual([]);
    // ffmpeg's own lines (a `\r\n` end included, split between two chunks) are read as before.
    p.push('[Parsed_scale_0 @ 0x55d0] w:320 h:180 fmt:yuv420p -> w:416 h:234 fmt:bgr24 flags:0x2\r');
    p.push('\n');
    expect(resized).toEqual(['320x180']);
    // A line not read still goes in the error report, its carriage returns as spaces.
    expect(p.tailText()).toContain('[hls @ 0x1] HTTP error 404 x [Parsed_scale_0 @ 0x1]');
  });

  it("a stream's size is not read from its codec's four characters (` 1x1`, an MPEG-TS registration descriptor's)", () => {
    expect(parseVideoStreamLine('  Stream #0:0[0x100]: Video: h264 (High) ( 1x1 / 0x31783120), yuv420p(progressive), 640x360, 25 fps, 25 tbr, 90k tbn')).toMatchObject({ width: 640, height: 360 });
  });

  it('keeps the last lines for error reports', () => {
    const p = new StderrProbe(2);
    p.push('one\ntwo\nthree\nfour');
    expect(p.tailText()).toBe('two\nthree\nfour');
  });

  it("a relayed camera's stream that ends after a delimiter: ffmpeg's lines about the delimiter alone are not kept, the cause is; the same lines otherwise are", () => {
    const end = [
      '[rtsp @ 0x1] CSeq 7 expected, 0 received.',
      '[NULL @ 0x2] missing picture in access unit with size 6',
      '[h264 @ 0x3] no frame!',
      'Error while decoding stream #0:0: Invalid data found when processing input',
      '',
    ].join('\n');
    const delimited = new StderrProbe(3);
    delimited.delimited = true;
    delimited.push(end);
    expect(delimited.tailText()).toBe('[rtsp @ 0x1] CSeq 7 expected, 0 received.');
    const plain = new StderrProbe(3);
    plain.push(end);
    expect(plain.tailText()).toContain('no frame!');
    // A decoding error, or a "no frame!", not after a delimiter alone is kept.
    const real = new StderrProbe(4);
    real.delimited = true;
    real.push('[h264 @ 0x3] error while decoding MB 3 4\nError while decoding stream #0:0: Invalid data found when processing input\n[h264 @ 0x3] no frame!\n');
    expect(real.tailText()).toContain('Error while decoding stream #0:0');
    expect(real.tailText()).toContain('no frame!');
  });
});

describe('FrameTimes (the metadata filter\'s reports, confirmed by the run\'s key)', () => {
  it('a time counts when the line of the run\'s key follows it: other lines between (another key, other filters\' lines) neither confirm nor drop it', () => {
    const t = new FrameTimes('argus_00ff');
    expect(t.read('[Parsed_metadata_2 @ 0x1] frame:0    pts:1000 pts_time:0.001')).toBeNull();
    expect(t.waiting).toBe(true);
    expect(t.read('[Parsed_metadata_2 @ 0x1] argus=1')).toBeNull(); // another run's key (forged)
    expect(t.read('[h264 @ 0x2] Reinit context')).toBeUndefined();
    expect(t.read('[Parsed_metadata_2 @ 0x1] argus_00ff=1')).toBe(1000);
    expect(t.waiting).toBe(false);
    expect(t.read('[Parsed_metadata_2 @ 0x1] argus_00ff=1')).toBeNull(); // a key line without a time before it
    expect(t.read('[Parsed_metadata_2 @ 0x1] frame:1    pts:NOPTS pts_time:NOPTS')).toBeNull();
    expect(t.read('[Parsed_metadata_2 @ 0x1] argus_00ff=1')).toBeNaN(); // a frame without a time still counts
    // A time line from elsewhere (a forged one does not know the filter's address) is confirmed by no key line of the filter's.
    expect(t.read('[Parsed_metadata_2 @ 0xbad] frame:5    pts:9 pts_time:0')).toBeNull();
    expect(t.read('[Parsed_metadata_2 @ 0x1] argus_00ff=1')).toBeNull();
  });
});

describe('StderrProbe: per-frame times and the opened input', () => {
  it('reports each frame time the metadata filter prints (µs, in order), keeps those lines out of the error tail, and tells when the input was opened', () => {
    const probe = new StderrProbe();
    const times: number[] = [];
    let opened = 0;
    probe.onFrameTime = (us) => times.push(us);
    probe.onInputOpened = () => opened++;
    probe.push("Input #0, rtsp, from 'rtsp://cam/s':\n  Stream #0:0: Video: h264 (High), yuv420p(progressive), 1920x1080, 30 fps, 30 tbr\n");
    probe.push('[Parsed_metadata_7 @ 0x55d0c0ffee00] frame:0    pts:1764608000123456 pts_time:1.76461e+09\n[Parsed_metadata_7 @ 0x55d0c0ffee00] argus=1\n[Parsed_metadata_7 @ 0x55d0');
    probe.push('c0ffee00] frame:1    pts:1764608000156789 pts_time:1.76461e+09\n');
    expect(times).toEqual([1764608000123456]); // a time counts once its key line confirms it
    probe.push('[Parsed_metadata_7 @ 0x55d0c0ffee00] argus=1\n');
    expect(opened).toBe(1);
    expect(times).toEqual([1764608000123456, 1764608000156789]);
    expect(probe.tailText()).not.toContain('Parsed_metadata');
    expect(probe.info).toBeUndefined(); // the input's report has not ended
    probe.push("Output #0, rawvideo, to 'pipe:1':\n");
    expect(probe.info).toMatchObject({ width: 1920, height: 1080, fps: 30 });
  });
});

describe("StderrProbe: the constant-rate output's duplicated and dropped frames", () => {
  it('counts each duplicate and drop after the output report, in the forms of ffmpeg 4.x to 7.x, a repeated line as many times', () => {
    const p = new StderrProbe(20, 'pipe:argus-x');
    const adjusts: number[] = [];
    p.onOutputAdjust = (n) => adjusts.push(n);
    p.push("Input #0, mpegts, from 'x':\n  Stream #0:0: Video: h264, yuv420p, 640x360, 10 fps, 10 tbr\n*** 9 dup!\n"); // a file's text, before the output's report
    p.push("Output #0, rawvideo, to 'pipe:argus-x':\n  Stream #0:0: Video: rawvideo, bgr24, 416x416, 10 fps\n");
    p.push('*** 1 dup!\n    Last message repeated 2 times\n*** dropping frame 7 from stream 0 at ts 6\n*** drop!\n');
    p.push('[vost#0:0/rawvideo @ 0x5f3a2c0] *** 3 dup!\n[vost#0:0/rawvideo @ 0x5f3a2c0] *** dropping frame 9 at ts 8\n');
    p.push('[h264 @ 0x1] something else\n    Last message repeated 4 times\n'); // not a duplicate's repeat
    p.push('*** 12 dups of nothing\n');
    expect(adjusts).toEqual([1, 2, -1, -1, 3, -1]);
    expect(p.tailText()).not.toMatch(/\*\*\* [13] dup!|dropping/);
  });
});

describe('StderrProbe: a VP9 or AV1 stream of unknown size (its size comes with its key frame)', () => {
  // ffmpeg 5.1's own lines (-loglevel verbose), measured: a VP9 camera over RTP (no size in an SDP)
  // joined between key frames, and a raw AV1 (OBU) stream read with -f obu joined so.
  const reports = {
    vp9: "[sdp @ 0x1] RTP/VP9 support is still experimental\n[sdp @ 0x1] Could not find codec parameters for stream 0 (Video: vp9 (Profile 1), 1 reference frame, none): unspecified size\nInput #0, sdp, from 'vp9.sdp':\n  Duration: N/A, start: 0.000000, bitrate: N/A\n  Stream #0:0: Video: vp9 (Profile 1), 1 reference frame, none, 25 fps, 25 tbr, 90k tbn\n",
    // (Its bitstream filter's lines first: frame OBUs read, their sequence header still to come.)
    av1: "[libdav1d @ 0x2] libdav1d 1.0.0\n[av1_frame_merge @ 0x3] No sequence header available: unable to decode frame header.\n[av1_frame_merge @ 0x3] Failed to read unit 0 (type 6).\n[av1_frame_merge @ 0x3] Failed to read packet.\n[obu @ 0x1] av1_frame_merge filter failed to send output packet\n[libdav1d @ 0x2] No sequence header available\n[obu @ 0x1] Could not find codec parameters for stream 0 (Video: av1 (libdav1d), 1 reference frame, none): unspecified size\nInput #0, obu, from 'tcp://cam:9000':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: av1, 1 reference frame, none, 25 tbr, 1200k tbn\n",
  };
  for (const [codec, report] of Object.entries(reports)) {
    it(`${codec}: counts as a stream sized by its key frame (contact), not as one with a size`, () => {
      const probe = new StderrProbe();
      probe.push(report);
      expect(probe.inputVideo).toBe(false);
      expect(probe.inputVideoSizedByKeyFrame).toBe(true);
    });
  }
  it('through a raw demuxer, a real stream joined mid-GOP is contact at the report (ffmpeg 5.1\'s lines, measured: MPEG-2 with -f mpegvideo, MPEG-4 Part 2 with -f m4v, H.264, H.265), and no HTML page', () => {
    // (-f mpegvideo and -f m4v counted only once a frame was decoded, and one that ended first was "an HTML page?")
    const head = (fmt: string, codec: string, stream: string) =>
      `[${fmt} @ 0x1] Could not find codec parameters for stream 0 (Video: ${codec}): unspecified size\nConsider increasing the value for the 'analyzeduration' (0) and 'probesize' (5000000) options\nInput #0, ${fmt}, from 'http://cam/video':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: ${stream}, 25 tbr, 1200k tbn\nStream mapping:\n`;
    for (const [format, lines] of [
      ['mpegvideo', '[mpeg1video @ 0x2] Invalid frame dimensions 0x0.\n    Last message repeated 34 times\n' + head('mpegvideo', 'mpeg1video, none(tv, progressive)', 'mpeg1video, none(tv, progressive), 12.50 fps')],
      ['m4v', '[mpeg4 @ 0x2] time_increment_bits 0 is invalid in relation to the current bitstream, this is likely caused by a missing VOL header\n[mpeg4 @ 0x2] time_increment_bits set to 4 bits, based on bitstream analysis\n' + head('m4v', 'mpeg4, yuv420p', 'mpeg4, yuv420p, 25 fps')],
      ['h264', '[h264 @ 0x2] non-existing PPS 0 referenced\n    Last message repeated 2 times\n[h264 @ 0x2] decode_slice_header error\n[h264 @ 0x2] no frame!\n' + head('h264', 'h264, none', 'h264, none')],
      ['hevc', '[hevc @ 0x2] PPS id out of range: 0\n    Last message repeated 9 times\n[hevc @ 0x2] Error parsing NAL unit #0.\n' + head('hevc', 'hevc, none', 'hevc, none')],
    ] as const) {
      const probe = new StderrProbe();
      probe.push(lines);
      expect([format, probe.inputVideoSizedByKeyFrame, probe.rawStreamUnread]).toEqual([format, true, undefined]);
    }
  });
  it('not through a raw demuxer (-f obu, -f h264) that read no unit of its codec: an HTML login page (ffmpeg 5.1\'s lines, measured); it is once a frame is decoded (the output\'s line)', () => {
    for (const [format, lines] of [
      ['obu', "[libdav1d @ 0x2] libdav1d 1.0.0\n[AV1 Annex B/low overhead OBU demuxer @ 0x4] Failed to read obu\n[libdav1d @ 0x2] No sequence header available\n[obu @ 0x1] Could not find codec parameters for stream 0 (Video: av1 (libdav1d), 1 reference frame, none): unspecified size\nInput #0, obu, from 'http://cam/login':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: av1, 1 reference frame, none, 25 tbr, 1200k tbn\n"],
      ['h264', "[h264 @ 0x1] missing picture in access unit with size 196\n[extract_extradata @ 0x2] No start code is found.\nhttp://cam/login: could not find codec parameters\nInput #0, h264, from 'http://cam/login':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: h264, 1 reference frame, none, 1200k tbn\nStream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n"],
    ] as const) {
      const probe = new StderrProbe();
      probe.push(lines);
      expect([format, probe.inputVideoSizedByKeyFrame, probe.rawStreamUnread]).toEqual([format, false, format]);
      probe.push("Output #0, rawvideo, to 'pipe:1':\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, 10 fps, 10 tbn\n");
      expect([format, probe.inputVideoSizedByKeyFrame, probe.rawStreamUnread]).toEqual([format, true, undefined]);
    }
  });
  // VP8: ffmpeg 5.1's RTP reader drops all until a key frame, whose report is sized; this line
  // (measured) comes only from an ffmpeg stopped before it, no contact.
  it('not VP8, a codec of a like name (vp6, av1x) nor MJPEG of unknown size', () => {
    for (const line of ['Video: vp8, 1 reference frame, yuv420p, 90k tbr, 90k tbn', 'Video: vp6f, none, 25 tbr', 'Video: av1x, none, 25 tbr', 'Video: mjpeg, 1 reference frame, none(bt470bg/unknown/unknown, center), 25 tbr']) {
      const probe = new StderrProbe();
      probe.push(`Input #0, rtsp, from 'rtsp://cam/s':\n  Stream #0:0: ${line}\n`);
      expect([line, probe.inputVideoSizedByKeyFrame]).toEqual([line, false]);
    }
  });
});
