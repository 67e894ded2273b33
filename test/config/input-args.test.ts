import { describe, expect, it } from 'vitest';
import { parseCamera } from '../../src/cluster/view.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
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
    [['-hwaccel', 'vaapi', '-hwaccel_device', '/dev/dri/renderD128', '-hwaccel_output_format', 'vaapi']],
    [['-c:v', 'h264_cuvid']],
    [['-f', 'v4l2', '-input_format', 'mjpeg', '-video_size', '1280x720', '-framerate', '30']],
    [['-timeout', '5000000', '-fflags', '+genpts', '-reorder_queue_size', '-1']],
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
    expect(refusal(['-hwaccel', 'cuda', 'out.mp4'])).toContain('sources[0].inputArgs[2]: "out.mp4" is not an option');
    expect(refusal(['-y', 'out.mp4'])).toContain('sources[0].inputArgs[0]: "-y" is not an ffmpeg input option argus passes on. Allowed, each followed by its value: -hwaccel,');
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

  it('lavfi, whose filters read and write files, is not an input format; a last option without its value is refused', () => {
    expect(refusal(['-f', 'lavfi'])).toContain('sources[0].inputArgs[1]: input format "lavfi" is not one argus passes on');
    expect(refusal(['-hwaccel', 'cuda', '-timeout'])).toContain('sources[0].inputArgs[2]: "-timeout" needs a value after it');
  });

  it("a worker refuses the same from the cluster's cameras topic: anyone who can write the topic must not write files on the workers", () => {
    const r = parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', inputArgs: ['-i', 'data:,x', '-y', '/tmp/x'] }), {});
    expect(r.definition).toBeUndefined();
    expect(r.error).toContain('inputArgs');
    expect(r.error).toContain('"-i" is not passed on');
    expect(parseCamera('cam', JSON.stringify({ id: 'cam', uri: 'rtsp://cam.local/s', inputArgs: ['-hwaccel', 'cuda'] }), {}).definition?.source.inputArgs).toEqual(['-hwaccel', 'cuda']);
  });
});
