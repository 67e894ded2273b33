/**
 * Decoder families, as written in manifests (`decoder.type`), in `model.family` and after
 * `argus models inspect --family`. The config schema, the decoder registry and the CLI take
 * the list from here.
 */
export const FAMILIES = ['yolox', 'yolov8', 'yolov5', 'end2end', 'end2end-split'] as const;

/** One decoder family. */
export type Family = (typeof FAMILIES)[number];
