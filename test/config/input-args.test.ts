import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { parseCamera } from '../../src/cluster/view.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { BOUNDED_OPTIONS, ffmpegNumber, FLAG_OPTIONS, FORMATS, VALUE_OPTIONS } from '../../src/config/schema/input-args.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { buildFfmpegArgs } from '../../src/sources/ffmpeg-args.js';

const yaml = (inputArgs: string[]) => `sources:\n  - id: cam\n    uri: rtsp://cam.local/s\n    inputArgs: ${JSON.stringify(inputArgs)}\n`;
const parse = (inputArgs: string[]) => parseConfigText(yaml(inputArgs), PipelineSchema, 'p.yaml', {});
const refusal = (inputArgs: string[]): string => {
  try {
    parse(inputArgs);
  } catch (e) {
    expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
    return (e as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(inputArgs)}`);
};

describe('inputArgs: ffmpeg input options only, each with its value', () => {
  it.each([
    [['-hwaccel', 'cuda']],
    [['-hwaccel', 'vaapi', '-hwaccel_device', '/dev/dri/renderD128']],
    [['-c:v', 'h264_cuvid', '-gpu', '0', '-surfaces', '8', '-noautorotate']],
    [['-f', 'v4l2', '-input_format', 'mjpeg', '-video_size', '1280x720', '-framerate', '30']],
    [['-rw_timeout', '5000000', '-fflags', '+genpts', '-reorder_queue_size', '-1', '-rtsp_flags', 'prefer_tcp']],
    [[]],
  ])('%j is accepted and reaches ffmpeg before -i as written', (args) => {
    const source = parse(args).sources[0];
    expect(source.inputArgs).toEqual(args);
    const argv = buildFfmpegArgs({ url: source.uri, kind: 'rtsp', rate: 'native', loop: false, inputArgs: source.inputArgs }, { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114 });
    const i = argv.indexOf('-i');
    expect(argv.slice(i - args.length, i)).toEqual(args);
  });

  it('an output file (the words after an option that takes none) is refused at the first word that is not an allowed option', () => {
    // As written, ffmpeg would open a second input and write /tmp/pwned.png before argus's own -i.
    const msg = refusal(['-f', 'mjpeg', '-i', 'x.mjpeg', '-frames:v', '1', '-y', '/tmp/pwned.png']);
    expect(msg).toContain('sources[0].inputArgs[2]: "-i" is not passed on: a source has one input, its `uri`');
    // A word that is not an option's is not repeated: it may be a value, a secret (README, "Pipelines").
    expect(refusal(['-hwaccel', 'cuda', 'out.mp4'])).toContain('sources[0].inputArgs[2]: not an option name ("-name"; each option is a word of its own');
    expect(refusal(['-y', 'out.mp4'])).toContain('sources[0].inputArgs[0]: "-y" is not an ffmpeg input option argus passes on. Allowed: -hwaccel -hwaccel_device');
  });

  it('options that write files or that argus sets itself are refused, with the field to use where there is one', () => {
    expect(refusal(['-dump_attachment:t', 'x.bin'])).toContain('inputArgs[0]: "-dump_attachment:t" is not an ffmpeg input option');
    expect(refusal(['-report', '1'])).toContain('inputArgs[0]: "-report"');
    expect(refusal(['-loglevel', 'quiet'])).toContain("inputArgs[0]: \"-loglevel\" is not passed on: argus reads ffmpeg's log for the stream's size and rate");
    expect(refusal(['-threads', '4'])).toContain('"-threads" is not passed on: use `decode.threads`');
    expect(refusal(['-rtsp_transport', 'udp'])).toContain('use `rtspTransport`');
    expect(refusal(['-stream_loop', '-1'])).toContain('use `loop: true`');
    // A stream specifier only where a decoder is named.
    expect(refusal(['-hwaccel:v', 'cuda'])).toContain('inputArgs[0]: "-hwaccel:v"');
  });

  it('numbers written bare in YAML are values as ffmpeg reads them', () => {
    const cfg = parseConfigText('sources:\n  - id: cam\n    uri: /dev/video0\n    inputArgs: [-framerate, 30, -reorder_queue_size, -1, -probesize, 1e6]\n', PipelineSchema, 'p.yaml', {});
    expect(cfg.sources[0].inputArgs).toEqual(['-framerate', '30', '-reorder_queue_size', '-1', '-probesize', '1000000']);
  });

  it('what a cameras-topic writer could turn against a worker, or what breaks argus, is refused with the reason', () => {
    // listen by name, in a combination, by its value (2), or within all / max.
    for (const flags of ['listen', 'filter_src+listen', '2', 'all', 'max', '0x2']) expect(refusal(['-rtsp_flags', flags])).toContain('inputArgs[1]: -rtsp_flags: not passed on');
    expect(parse(['-rtsp_flags', 'prefer_tcp+filter_src']).sources[0].inputArgs).toEqual(['-rtsp_flags', 'prefer_tcp+filter_src']);
    expect(refusal(['-cert_file', '/etc/argus/client.pem'])).toContain('inputArgs[0]: "-cert_file" is not an ffmpeg input option');
    expect(refusal(['-hwaccel', 'cuda', '-hwaccel_output_format', 'cuda'])).toContain('inputArgs[2]: "-hwaccel_output_format"');
    expect(refusal(['-r', '30'])).toContain('"-r" is not passed on: use `fps`');
    expect(refusal(['-timeout', '5000000'])).toContain('"-timeout" is not passed on: argus\'s watchdog restarts a silent source');
    expect(refusal(['-noautorotate:v'])).toContain('inputArgs[0]: "-noautorotate:v"');
  });

  it('options that fill memory before a frame is read are bounded: numbers as ffmpeg reads them, up to a cap; what argus cannot evaluate is refused', () => {
    expect([ffmpegNumber('5000000'), ffmpegNumber('5M'), ffmpegNumber('64Ki'), ffmpegNumber('1e6'), ffmpegNumber('1kB'), ffmpegNumber('-1'), ffmpegNumber('2.5k')]).toEqual([5e6, 5e6, 65536, 1e6, 8000, -1, 2500]);
    expect([ffmpegNumber('2*1e9'), ffmpegNumber('0x10'), ffmpegNumber(''), ffmpegNumber('5 M')]).toEqual([undefined, undefined, undefined, undefined]);
    expect(parse(['-probesize', '50M', '-thread_queue_size', '1024', '-reorder_queue_size', '-1', '-rtbufsize', '100M']).sources[0].inputArgs).toEqual(['-probesize', '50M', '-thread_queue_size', '1024', '-reorder_queue_size', '-1', '-rtbufsize', '100M']);
    expect(refusal(['-probesize', '10G'])).toContain('sources[0].inputArgs[1]: -probesize 10G is above the 100000000 bytes argus passes on');
    expect(refusal(['-hwaccel', 'cuda', '-thread_queue_size', '100000'])).toContain('inputArgs[3]: -thread_queue_size 100000 is above the 1024 packets');
    expect(refusal(['-rtbufsize', '1Gi'])).toContain('-rtbufsize 1Gi is above');
    expect(refusal(['-reorder_queue_size', '1e9'])).toContain('-reorder_queue_size 1e9 is above the 10000 packets');
    expect(refusal(['-probesize', '2*1e9'])).toContain('inputArgs[1]: -probesize: not a whole number argus can bound');
    expect(refusal(['-thread_queue_size', '1.5'])).toContain('-thread_queue_size 1.5: not a whole number');
    expect(refusal(['-probesize', '-1'])).toContain('-probesize -1 is below 32, the least ffmpeg takes');
    expect(refusal(['-hwaccel', 'cuda', '-extra_hw_frames', '100000'])).toContain('inputArgs[3]: -extra_hw_frames 100000 is above the 64 frames');
    expect(refusal(['-c:v', 'h264_cuvid', '-surfaces', '1K'])).toContain('-surfaces 1K is above the 64 surfaces');
    // ffmpeg's least values are taken (and ffmpeg starts with them).
    expect(parse(['-probesize', '32', '-extra_hw_frames', '-1', '-surfaces', '0', '-rtbufsize', '0']).sources[0].inputArgs).toHaveLength(8);
    expect([ffmpegNumber('1K'), ffmpegNumber('1T'), ffmpegNumber('1MiB'), ffmpegNumber('0100'), ffmpegNumber('1E3')]).toEqual([1000, 1e12, 8 * 1024 ** 2, 100, undefined]);
    // Every bounded option is one argus passes on; ffmpeg's default probesize (5 MB) is within its bound.
    for (const name of Object.keys(BOUNDED_OPTIONS)) expect(VALUE_OPTIONS.has(name)).toBe(true);
    expect(BOUNDED_OPTIONS.probesize.max).toBeGreaterThan(5_000_000);
  });

  it('lavfi, whose filters read and write files, is not an input format; a last option without its value is refused', () => {
    expect(refusal(['-f', 'lavfi'])).toContain('sources[0].inputArgs[1]: the input format of -f is not one argus passes on; allowed: mjpeg');
    expect(refusal(['-hwaccel', 'cuda', '-rw_timeout'])).toContain('sources[0].inputArgs[2]: "-rw_timeout" needs a value after it');
    expect(refusal(['-f', 'sdp'])).toContain('the input format of -f is not one');
  });

  it("a worker refuses the same from the cluster's cameras topic: anyone who can write the topic must not write files on the workers", () => {
    const r = parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', inputArgs: ['-i', 'data:,x', '-y', '/tmp/x'] }), {});
    expect(r.definition).toBeUndefined();
    expect(r.error).toContain('inputArgs');
    expect(r.error).toContain('"-i" is not passed on');
    expect(parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', inputArgs: ['-hwaccel', 'cuda'] }), {}).definition?.source.inputArgs).toEqual(['-hwaccel', 'cuda']);
  });
});

describe('inputArgs against the ffmpeg argus runs (`ffmpeg -h full`)', () => {
  const help = execFileSync(resolveFfmpegSync().path, ['-hide_banner', '-h', 'full'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  // ffmpeg's own options start a line ("-hwaccel hwaccel name  use HW …"); AVOptions of demuxers,
  // protocols and decoders are indented, with their type ("  -rw_timeout <int64> …").
  const own = (name: string) => new RegExp(`^-${name}( |$)`, 'm').test(help);
  const av = (name: string) => new RegExp(`^ +-${name} +<(\\w+)>`, 'm').exec(help)?.[1];

  it('every option passed on is known to this ffmpeg, and none of its yes/no options (which take no value: the next word would be an output file) is passed on as one taking a value', () => {
    // Builds without NVIDIA's decoders or QSV, and ffmpeg before 4.4 (the bundled 2018 build),
    // lack these; Debian 12's 5.1 has them all.
    const buildOrVersion = new Set(['gpu', 'surfaces', 'resize', 'crop', 'deint', 'qsv_device', 'reconnect_on_network_error', 'reconnect_on_http_error']);
    const unknown = [...VALUE_OPTIONS].filter((o) => !own(o) && av(o) === undefined && !buildOrVersion.has(o));
    expect(unknown).toEqual([]);
    // ffmpeg's yes/no options are the ones that take no value: none of those is passed on as one.
    const bools = ['autorotate', 'stdin', 'y', 'n', 'shortest', 'copyts'];
    for (const b of bools) expect(own(b), b).toBe(true);
    expect([...VALUE_OPTIONS].filter((o) => bools.includes(o))).toEqual([]);
    for (const f of FLAG_OPTIONS) expect(own(f.replace(/^no/, '')), f).toBe(true);
  });

  it('every input format passed on is a demuxer or device this ffmpeg knows', () => {
    const formats = execFileSync(resolveFfmpegSync().path, ['-hide_banner', '-formats'], { encoding: 'utf8' });
    const demuxers = new Set(formats.split('\n').flatMap((l) => (/^ D/.test(l) ? l.trim().split(/\s+/)[1].split(',') : [])));
    expect([...FORMATS].filter((f) => !demuxers.has(f))).toEqual([]);
  });
});
