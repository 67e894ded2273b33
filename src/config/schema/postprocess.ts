import { z } from 'zod';
import { finite } from './common.js';

export const PostprocessSchema = z
  .object({
    /** Minimum detection score (objectness × class score for YOLOX). Default 0.3. */
    scoreThreshold: finite().min(0).max(1).default(0.3),
    /** IoU above which NMS suppresses a box of the same class. Default 0.45. */
    iouThreshold: finite().min(0).max(1).default(0.45),
    /**
     * Best candidates kept before NMS. Default 30 000 (Ultralytics' max_nms; YOLOX's reference
     * keeps all): NMS costs candidates × kept, and kept is at most maxDetections, so all 3549
     * anchors of a 416 model take about 1 ms. A cut to 300 lost people in a crowd (60 people, 50
     * of them with 6 overlapping candidates: 50 detections).
     */
    preNmsTopK: finite().int().min(1).default(30_000),
    /**
     * Detections kept per frame. Default 100, at most 300 (Ultralytics' max_det): the tracker
     * matches every detection with every track on the thread all sources share, measured at
     * 3 ms a frame for 300 objects and 94 ms (326 ms at worst) for 1000.
     */
    maxDetections: finite().int().min(1).max(300).default(100),
    /** NMS across classes. Default false. */
    classAgnostic: z.boolean().default(false),
  })
  .strict();

export type PostprocessConfig = z.infer<typeof PostprocessSchema>;
