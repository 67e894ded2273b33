import { existsSync, statSync } from 'node:fs';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { loadSharp } from '../core/sharp.js';
import { boundedSize, hasScheme, isStillImage } from './ffmpeg-args.js';

/** A still image as argus reads it: packed RGB, upright, at most MAX_SOURCE_PIXELS. */
export interface StillPicture {
  data: Buffer;
  width: number;
  height: number;
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
 */
export async function decodeStill(path: string): Promise<StillPicture> {
  if (!existsSync(path)) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `image: file not found: ${path}`);
  // A FIFO (or a device) named like a picture: libvips waited on it until Ctrl-C.
  if (!statSync(path).isFile()) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `image: ${path} is not a regular file (a named pipe or a device): give the picture as a file`);
  const sharp = await loadSharp();
  try {
    let img = sharp(path, { ignoreIcc: true }).rotate();
    // The pipeline's bound on source-size frames (sources/ffmpeg-args.ts), so pixels agree with a video's.
    const meta = await img.metadata();
    const upright = (meta.orientation ?? 1) >= 5 ? { w: meta.height ?? 0, h: meta.width ?? 0 } : { w: meta.width ?? 0, h: meta.height ?? 0 };
    const bound = boundedSize(upright.w, upright.h);
    if (bound.width !== upright.w) img = img.resize(bound.width, bound.height, { fit: 'fill' });
    const { data, info } = await img.removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels, expected 3`);
    return { data, width: info.width, height: info.height };
  } catch (e) {
    // The file is there but is no picture sharp reads (or not yet a whole one: a snapshot being
    // written in place): VAP_ERR_SOURCE_PROBE, as for a file ffmpeg cannot read. A source fails
    // for good on it at its first start, and is tried again after it has had frames
    // (supervised-source), as it was while ffmpeg decoded stills.
    throw new ArgusError(ErrorCodes.SOURCE_PROBE, `image ${path}: cannot be decoded: ${(e as Error).message}`, { cause: e });
  }
}
