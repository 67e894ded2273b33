import type sharpType from 'sharp';

export type Sharp = typeof sharpType;

let loading: Promise<Sharp> | undefined;

/**
 * sharp (libvips), loaded on first use: it costs ~19 MB of memory, which a pipeline that
 * never makes a JPEG (no rules with snapshots, no live frames) does not pay. `run` loads it at
 * start when the pipeline will need it, so the first alert's snapshot does not wait for it.
 */
export function loadSharp(): Promise<Sharp> {
  loading ??= import('sharp').then((m) => m.default);
  return loading;
}
