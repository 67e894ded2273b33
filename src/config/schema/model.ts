import { z } from 'zod';
import { filePath, finite } from './common.js';
import { FAMILIES } from '../../core/families.js';
import { mention } from '../../core/redact.js';
import { repeatedLabel } from '../labels.js';

/** The largest model input side argus takes (manifests, and a model file's own metadata or input shape). */
export const MAX_MODEL_SIDE = 4096;

/** The most images one run takes: `batch.maxBatch`'s bound, and a model's fixed batch dimension's. */
export const MAX_MODEL_BATCH = 64;

const executionProvider = z.enum(['cpu', 'cuda', 'tensorrt']);

/** Decoder families a model's outputs can be read with; auto: detected from the output shapes. */
const decoderFamily = z.enum(['auto', ...FAMILIES]);

export const ModelRefSchema = z
  .object({
    /**
     * A manifest name from models/ (e.g. yolox-nano) or a path to a manifest YAML. Default:
     * yolox-nano, unless `path` is given alone: then the model describes itself (ONNX metadata
     * such as Ultralytics' names and imgsz, output shapes for the decoder).
     */
    manifest: filePath().optional(),
    /** Use this ONNX file (instead of the manifest's download). */
    path: filePath().optional(),
    /** Decoder family; default: the manifest's, else detected from the output shapes. */
    family: decoderFamily.optional(),
    /** Cross-source batching, for models with a dynamic (or fixed > 1) batch dimension. */
    batch: z
      .object({
        /** Frames per run at most; 1 turns batching off. Default 1. */
        maxBatch: finite().int().min(1).max(MAX_MODEL_BATCH).default(1),
        /** Longest a frame waits for others to join its batch, ms. Default 4. */
        maxWaitMs: finite().min(0).max(1000).default(4),
      })
      .strict()
      .default({}),
    /** TensorRT: folder for built engines, reused across runs. */
    trtEngineCacheDir: filePath().optional(),
    /** TensorRT: build fp16 engines. Default false. */
    trtFp16: z.boolean().default(false),
    /** Execution providers in order of preference; CPU is always the last resort. Default [cpu]. */
    providers: z.array(executionProvider).min(1).default(['cpu']),
    /**
     * Threads ONNX Runtime uses inside one operator, per session. Default 2, or 1 where
     * `workers` defaults to 2 (below).
     */
    intraOpThreads: finite().int().min(1).max(64).optional(),
    /**
     * Let ONNX Runtime's intra-op threads spin (busy-wait) for work between operators, for at
     * most `spinMicros` before they sleep. Spinning saves a wake-up per operator; bounded, it
     * stops soon after a run, so the cores go back to ffmpeg and the event loop between frames.
     * Default true (README, "Latency": measured on 432p and 1080p).
     */
    allowSpinning: z.boolean().default(true),
    /**
     * How long a spinning intra-op thread waits for work before it sleeps, µs (ONNX Runtime's
     * session.intra_op.spin_duration_us). Default 200: inference as fast as unbounded spinning,
     * at the CPU of none (README, "Latency").
     */
    spinMicros: finite().int().min(1).max(1_000_000).default(200),
    /**
     * Sessions, each on its own worker thread, so inference never blocks the event loop. More
     * than one runs several frames (or batches) at once: on a CPU, workers × intraOpThreads ≈
     * cores (e.g. 2 × 1 on 2 cores) gets more frames through than one session with all the
     * threads, each frame a little later. 0 runs the session on the main thread. Default 1 (with
     * 2 threads); where neither this nor `intraOpThreads` is set, the CPU is the only provider
     * and every source is a file read at `rate: fast`, 2 workers × 1 thread, which run two of a
     * file's frames at once (README, "Inference threads"). Resolved by `inferenceThreads`.
     */
    workers: finite().int().min(0).max(16).optional(),
    /**
     * How frames are fitted to the model's input. `exact` (default): as the model's reference
     * does it (its manifest's `preprocess.resize`; for YOLOX, OpenCV's INTER_LINEAR on the
     * full-size frame), so detections match the reference. `fast`: ffmpeg scales the frame
     * (anti-aliased bilinear) before argus sees it: less CPU and memory per frame (README,
     * "Pre-processing"), detections a little different from the reference.
     */
    resize: z.enum(['exact', 'fast']).default('exact'),
    /** Inference runs on a blank frame before the first real one. Default 2. */
    warmupRuns: finite().int().min(0).max(100).default(2),
    /** CUDA/TensorRT device. Default 0. */
    deviceId: finite().int().min(0).default(0),
  })
  .strict();

/** A model manifest (models/*.yaml). */
export const ModelManifestSchema = z
  .object({
    name: z.string().min(1),
    version: z.string().min(1),
    description: z.string().optional(),
    license: z.string().optional(),
    /**
     * File name in the cache and in the mirror's models/ folder: not only dots (`..` named the
     * mirror's own folder, and the error said to remove it).
     */
    file: z.string().regex(/^(?!\.+$)[A-Za-z0-9_.-]+$/, "a file name: letters, digits, dot, dash or underscore (not only dots)"),
    /** Made locally from another manifest's model by scripts/derive-models.sh (dyn: dynamic batch; fp16; int8). */
    derive: z.object({ from: z.string().min(1), variant: z.enum(['dyn', 'fp16', 'int8']) }).strict().optional(),
    /** Official download URL (absent for local-only models: then the file must be in the mirror or cache, or given as model.path). */
    url: z.string().url().optional(),
    /** Other URLs tried after `url`, each verified against the same sha256. */
    alternates: z.array(z.string().url()).default([]),
    /** Hex sha256 of the file; downloads and mirror copies that differ are refused. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    input: z.object({ name: z.string().optional(), shape: z.array(z.union([finite().int(), z.string()])).length(4) }).strict().optional(),
    output: z.object({ name: z.string().optional(), shape: z.array(z.union([finite().int(), z.string()])) }).strict().optional(),
    preprocess: z
      .object({
        /** The model's input size: at most MAX_MODEL_SIDE (a 4096² float tensor is 200 MB already). */
        width: finite().int().positive().max(MAX_MODEL_SIDE),
        height: finite().int().positive().max(MAX_MODEL_SIDE),
        letterbox: z
          .object({
            align: z.enum(['top-left', 'center']).default('top-left'),
            pad: finite().int().min(0).max(255).default(114),
            /** How the scaled size is made whole: floor (YOLOX's `int(w * r)`) or round (Ultralytics). Default round. */
            rounding: z.enum(['floor', 'round']).default('round'),
          })
          .strict()
          .default({}),
        /**
         * The resize the model was trained and is served with. `cv2-linear`: OpenCV's
         * `cv2.resize(INTER_LINEAR)` (YOLOX, YOLOv5, YOLOv8), reproduced exactly by argus on the
         * full-size frame. `swscale-bilinear`: ffmpeg's anti-aliased bilinear scale (cheaper;
         * detections differ slightly from the reference). Default cv2-linear.
         */
        resize: z.enum(['cv2-linear', 'swscale-bilinear']).default('cv2-linear'),
        channelOrder: z.enum(['bgr', 'rgb']),
        scale: finite().positive().default(1),
        mean: z.tuple([finite(), finite(), finite()]).default([0, 0, 0]),
        std: z.tuple([finite().positive(), finite().positive(), finite().positive()]).default([1, 1, 1]),
      })
      .strict(),
    decoder: z
      .object({ type: decoderFamily.default('auto'), strides: z.array(finite().int().positive()).default([8, 16, 32]) })
      .strict()
      .default({}),
    /** Class labels, each once (classes are named by label); default: the ONNX metadata's `names`. */
    labels: z
      .array(z.string().min(1))
      .min(1)
      .superRefine((labels, ctx) => {
        const r = repeatedLabel(labels);
        if (r) ctx.addIssue({ code: 'custom', path: [r.again], message: `duplicate label${mention(r.label) ? ` ${mention(r.label)}` : ''} (labels[${r.first}] too): zones, lines and rules name classes by label, so class ${r.again} would never be counted as it` });
      })
      .optional(),
  })
  .strict();

export type ModelRefConfig = z.infer<typeof ModelRefSchema>;
export type ModelManifest = z.infer<typeof ModelManifestSchema>;
export type ExecutionProviderName = z.infer<typeof executionProvider>;
