import { resolve } from 'node:path';

/** ../shared beside the checkout, or $ARGUS_MIRROR: the asset mirror tests read from. */
export const MIRROR = process.env.ARGUS_MIRROR ?? resolve(__dirname, '../../../shared');
process.env.ARGUS_MIRROR = MIRROR;

export const PERSON_VIDEO = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
export const MODEL = `${MIRROR}/models/yolox_nano.onnx`;
