#!/usr/bin/env python3
"""Reference detections: the official YOLOX ONNX Runtime demo's steps on a list of image files.

The steps are those of the demo's main block, demo/ONNXRuntime/onnx_inference.py upstream
(Megvii-BaseDetection/YOLOX, commit 0963be68536b928cccccda33c05f4467e9f5e972; the yolox 0.3.0
sdist does not ship the demo/ folder), one image after another on one session:
  cv2.imread(path)
  img, ratio = preproc(origin_img, input_shape)
  output = session.run(None, {input name: img[None, :, :, :]})
  predictions = demo_postprocess(output[0], input_shape)[0]
  boxes = predictions[:, :4]; scores = predictions[:, 4:5] * predictions[:, 5:]
  centre/size boxes to x1 y1 x2 y2, divided by ratio
  dets = multiclass_nms(boxes_xyxy, scores, nms_thr=0.45, score_thr=0.1)
  and vis(…, conf=score_thr) draws the rows whose score is at least --score_thr.
preproc, demo_postprocess and multiclass_nms are the official functions, unchanged, loaded by
path from the files scripts/peers/setup.sh extracts from the yolox sdist (peer.py's load_demo).

What differs from the demo's command line, set to what argus does (the caller passes argus's
values): --input-shape (the demo's default is 640,640; YOLOX-Nano is 416,416), --nms (the demo's
0.45), and --class-agnostic: multiclass_nms is class-agnostic by default and the demo calls it
so, argus's NMS is class-aware unless postprocess.classAgnostic, so class-aware unless the flag
is given. multiclass_nms runs with the demo's score_thr 0.1 (or --score when lower); the rows
kept are those with score >= --score, as vis keeps them. Per class, greedy NMS over the rows at
or above 0.1 and then that filter keeps what NMS over the rows at or above --score keeps (a
lower-scored row never suppresses a higher one).

Prints JSON on stdout:
  {"files": [{"file": PATH as given, "width": W, "height": H, "ratio": preproc's ratio,
              "detections": [{"classId": C, "score": S, "box": [x1, y1, x2, y2]}]}]}
detections in the order multiclass_nms returns them (by class, then by score).

Usage: python yolox_reference.py --demo VENV/yolox-demo --model MODEL.onnx --score 0.3 \
         [--input-shape 416,416] [--nms 0.45] [--class-agnostic] [--tensors DIR] FILE...
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np
import onnxruntime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from peer import load_demo  # noqa: E402  (the demo files, loaded without the yolox package)


def main():
    ap = argparse.ArgumentParser(description="official YOLOX ONNX Runtime demo steps on image files, JSON out")
    ap.add_argument("--demo", required=True, help="the yolox-demo folder scripts/peers/setup.sh makes")
    ap.add_argument("--model", required=True)
    ap.add_argument("--score", type=float, required=True, help="rows with a score at least this are printed (the demo's --score_thr)")
    ap.add_argument("--input-shape", help="height,width (the demo's --input_shape); default: the model's input")
    ap.add_argument("--nms", type=float, default=0.45, help="multiclass_nms's nms_thr")
    ap.add_argument("--class-agnostic", action="store_true", help="multiclass_nms class_agnostic=True (argus: postprocess.classAgnostic)")
    ap.add_argument("--tensors", help="also write each image's input tensor (preproc's output, float32 CHW) to DIR/N.f32, N its index in FILE...")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    preproc, demo_postprocess, multiclass_nms = load_demo(args.demo)
    session = onnxruntime.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    if args.input_shape:
        input_shape = tuple(map(int, args.input_shape.split(",")))
    else:
        input_shape = (int(inp.shape[2]), int(inp.shape[3]))
    nms_score_thr = min(0.1, args.score)

    out = []
    for path in args.files:
        origin_img = cv2.imread(path)
        if origin_img is None:
            print(f"yolox_reference.py: {path}: cv2.imread could not read it", file=sys.stderr)
            sys.exit(2)
        img, ratio = preproc(origin_img, input_shape)
        if args.tensors:
            img.tofile(os.path.join(args.tensors, f"{len(out)}.f32"))
        output = session.run(None, {inp.name: img[None, :, :, :]})
        predictions = demo_postprocess(output[0], input_shape)[0]

        boxes = predictions[:, :4]
        scores = predictions[:, 4:5] * predictions[:, 5:]

        boxes_xyxy = np.ones_like(boxes)
        boxes_xyxy[:, 0] = boxes[:, 0] - boxes[:, 2] / 2.0
        boxes_xyxy[:, 1] = boxes[:, 1] - boxes[:, 3] / 2.0
        boxes_xyxy[:, 2] = boxes[:, 0] + boxes[:, 2] / 2.0
        boxes_xyxy[:, 3] = boxes[:, 1] + boxes[:, 3] / 2.0
        boxes_xyxy /= ratio
        dets = multiclass_nms(boxes_xyxy, scores, nms_thr=args.nms, score_thr=nms_score_thr, class_agnostic=args.class_agnostic)

        detections = []
        if dets is not None:
            for row in dets:
                score = float(row[4])
                if score < args.score:  # vis(…, conf=score_thr) skips these
                    continue
                detections.append({"classId": int(row[5]), "score": score, "box": [float(v) for v in row[:4]]})
        out.append({"file": path, "width": int(origin_img.shape[1]), "height": int(origin_img.shape[0]), "ratio": float(ratio), "detections": detections})

    json.dump({"files": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
