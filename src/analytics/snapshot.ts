import type { loadSharp } from '../core/sharp.js';
import type { Frame } from '../core/frame.js';
import { yuvToPacked } from '../preprocess/letterbox.js';
import { yuvTables } from '../preprocess/yuv.js';

/**
 * A frame's picture, copied out so the frame can be released at once: the whole frame at the
 * source's size (frames argus letterboxes itself), or the scaled picture inside ffmpeg's
 * letterbox. The bytes keep the frame's channel order; libvips swaps BGR off the main thread
 * (`pictureImage`).
 */
export interface Picture {
  /** Packed 8-bit pixels, `width × height × 3`, in `order` (RGB when absent). */
  rgb: Buffer;
  order?: 'rgb' | 'bgr';
  width: number;
  height: number;
  /** Source frame size, for mapping source-pixel boxes onto the picture. */
  srcWidth: number;
  srcHeight: number;
}

/** Copies the picture out of a frame (memory copies, or a yuv420p frame's conversion; synchronous). */
export function grabPicture(frame: Frame, channelOrder: 'bgr' | 'rgb'): Picture {
  const lb = frame.letterbox;
  if (frame.layout === 'yuv420p') {
    // Converted as ffmpeg would have (the same values a BGR frame would hold), in the C kernel.
    const pixels = yuvToPacked(frame.data, lb.srcWidth, lb.srcHeight, yuvTables(frame.colour), channelOrder);
    return { rgb: pixels, order: channelOrder, width: lb.srcWidth, height: lb.srcHeight, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
  }
  if (frame.layout === 'source') {
    const n = lb.srcWidth * lb.srcHeight * 3;
    const pixels = Buffer.allocUnsafe(n);
    frame.data.copy(pixels, 0, 0, n);
    return { rgb: pixels, order: channelOrder, width: lb.srcWidth, height: lb.srcHeight, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
  }
  const w = lb.scaledWidth, h = lb.scaledHeight;
  const pixels = Buffer.allocUnsafe(w * h * 3);
  const stride = lb.dstWidth * 3;
  for (let y = 0; y < h; y++) {
    const src = (lb.padY + y) * stride + lb.padX * 3;
    frame.data.copy(pixels, y * w * 3, src, src + w * 3);
  }
  return { rgb: pixels, order: channelOrder, width: w, height: h, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
}

/** A sharp image of the picture in RGB (BGR pixels are swapped by libvips, in its thread pool). */
export function pictureImage(sharp: Awaited<ReturnType<typeof loadSharp>>, pic: Picture) {
  const img = sharp(pic.rgb, { raw: { width: pic.width, height: pic.height, channels: 3 } });
  return pic.order === 'bgr' ? img.recomb([[0, 0, 1], [0, 1, 0], [1, 0, 0]]) : img;
}
