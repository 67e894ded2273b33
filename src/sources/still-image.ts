import { stat } from 'node:fs/promises';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { notAnInput } from '../core/files.js';
import { loadSharp } from '../core/sharp.js';
import { boundedSize, hasScheme, isStillImage } from './ffmpeg-args.js';

/** A still image as argus reads it: packed RGB, upright, at most MAX_SOURCE_PIXELS. */
export interface StillPicture {
  data: Buffer;
  width: number;
  height: number;
}

/**
 * A still image decoded for a source, kept across its runs (ffmpeg-source's SourceMemo): a
 * looped still is run again at each loop, one frame a run, and is decoded again only when its
 * file has changed (`file`: the file's identity, size and times when it was decoded).
 */
export interface KeptStill {
  file: string;
  picture: StillPicture;
}

/**
 * The path of a still image argus decodes itself (`decodeStill`), or undefined: a local file (a
 * path or a file:// URL) named like a picture. A URL's picture (an HTTP camera's snapshot) is
 * ffmpeg's to fetch and decode.
 */
export function stillImagePath(url: string): string | undefined {
  if (/^file:\/\//i.test(url)) url = url.slice('file://'.length);
  else if (hasScheme(url)) return undefined;
  return isStillImage(url) ? url : undefined;
}

/**
 * A still image as packed RGB at full resolution, turned upright by its EXIF orientation (as
 * OpenCV's imread does, and image viewers); grey and palette images are expanded to three
 * channels, alpha dropped. An embedded colour profile is ignored, as imread ignores it (the
 * model was trained on imread's pixels: converting an Adobe RGB photo to sRGB moves values by
 * up to 90 levels). Pictures of more pixels than MAX_SOURCE_PIXELS are reduced to it, as a
 * video's are.
 *
 * The one decoder of still images: `argus detect`, `argus preview` and a pipeline's source (fed
 * to ffmpeg as raw frames, see ffmpeg-args `FfmpegInputSpec.still`) all see these pixels. ffmpeg
 * 5.1, which decoded them for preview and run, left a PNG, WebP, TIFF or AVIF on its side where
 * its EXIF orientation says to turn it, decoded a JPEG-compressed TIFF (libvips' default) to a
 * flat green picture without a word, and converted CMYK JPEGs otherwise.
 *
 * `kept`: where a source keeps its still between runs (see KeptStill); the picture is then
 * shared by its runs, never written to.
 */
export async function decodeStill(path: string, kept?: { still?: KeptStill }): Promise<StillPicture> {
  let st;
  try {
    st = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ArgusError(ErrorCodes.SOURCE_OPEN, code === 'ENOENT' || code === 'ENOTDIR' ? `image: file not found: ${path}` : `image: ${path} cannot be read (${code ?? (e as Error).message})`, { cause: e });
  }
  const problem = notAnInput(st);
  if (problem) throw new ArgusError(problem.code, `image: ${path} ${problem.why}`);
  // A FIFO (or a device) named like a picture: libvips waited on it until Ctrl-C.
  if (!st.isFile()) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `image: ${path} is not a regular file (a named pipe or a device): give the picture as a file`);
  // The same file as the source's last run decoded: its picture again. A looped still was
  // decoded at every loop, that is at every frame (a 12 MP photo: half a core of argus's own
  // process, 200 MB more memory, and half the frame rate of ffmpeg decoding it); a file written
  // anew (a camera's uploaded snapshot) has another size or time, and is decoded. (One written
  // twice within the file system's time step at the same size would be missed till its next write.)
  const file = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  if (kept?.still?.file === file) return kept.still.picture;
  let picture: StillPicture;
  try {
    const sharp = await loadSharp();
    let img = sharp(path, { ignoreIcc: true }).rotate();
    // The pipeline's bound on source-size frames (sources/ffmpeg-args.ts), so pixels agree with a video's.
    const meta = await img.metadata();
    const upright = (meta.orientation ?? 1) >= 5 ? { w: meta.height ?? 0, h: meta.width ?? 0 } : { w: meta.width ?? 0, h: meta.height ?? 0 };
    const bound = boundedSize(upright.w, upright.h);
    if (bound.width !== upright.w) img = img.resize(bound.width, bound.height, { fit: 'fill' });
    const { data, info } = await img.removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels, expected 3`);
    picture = { data, width: info.width, height: info.height };
  } catch (e) {
    // The file is there but is no picture sharp reads (or not yet a whole one: a snapshot being
    // written in place): VAP_ERR_SOURCE_PROBE, as for a file ffmpeg cannot read. A source fails
    // for good on it at its first start, and is tried again after it has had frames
    // (supervised-source), as it was while ffmpeg decoded stills.
    throw new ArgusError(ErrorCodes.SOURCE_PROBE, `image ${path}: cannot be decoded: ${(e as Error).message}`, { cause: e });
  }
  if (kept) kept.still = { file, picture };
  return picture;
}
