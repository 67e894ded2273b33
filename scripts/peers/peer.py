#!/usr/bin/env python3
"""The peers of `npm run bench:peer` (issue 13): what a Python user writes instead of argus.

Peer A: the official YOLOX ONNX Runtime demo (demo/ONNXRuntime/onnx_inference.py upstream) in a
loop over a video: cv2.VideoCapture decodes a frame, the demo's `preproc` letterboxes it, an
onnxruntime.InferenceSession runs the model, `demo_postprocess` decodes the grids and
`multiclass_nms` (nms_thr 0.45, score_thr 0.1, as the demo calls it) keeps the boxes. One thread,
each frame read only once the previous result is out.

Peer B: the same per-frame work, fed by a reader thread that decodes and keeps only the newest
frame (the pattern of Roboflow's InferencePipeline); the main loop infers on the newest one and
the frames the reader overwrote before the loop took them are counted as dropped.

--rate live plays a file the way a camera would deliver it: frame k is due at t0 + k / fps and is
not read before then (the reader sleeps until it is due, then reads it). --rate fast reads as fast
as possible. A URL is never paced here: the stream paces itself.

Writes --json OUT: one record per result (due and emitted times, epoch ms; inference ms; frames
out and dropped so far) and the process's CPU time, peak RSS and time from process start to the
first result. Prints `first-result` on stdout when the first result is out. SIGTERM ends the
loop in order (the records are still written).

Runs in the environment scripts/peers/setup.sh makes; --demo names its yolox-demo folder.
"""
import argparse
import ast
import importlib.util
import json
import os
import resource
import signal
import sys
import threading
import time
import types

import cv2
import numpy as np
import onnxruntime


def yolox_imports(path):
    """(module, [names]) of each `from yolox... import names` statement in a Python file."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    return [(node.module, [a.name for a in node.names]) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "yolox"]


def load_demo(demo_dir):
    """The official demo functions, loaded by file path from the extracted sdist sources.

    The yolox package's __init__ imports torch, so the package is never imported. data_augment.py
    runs `from yolox.utils import xyxy2cxcywh` at import (YOLOX 0.3.0); that name serves only its
    training transforms, never `preproc`. So each name a demo file imports from yolox is a stub
    that raises if called, in stub modules put in sys.modules while the file loads and removed
    after. bench-peer.ts checks, before any run, that `preproc` uses none of those names and
    that demo_utils.py imports nothing from yolox (src/bench/peer.ts, checkYoloxDemo).
    """

    def stub(name):
        def unused(*_args, **_kwargs):
            raise NotImplementedError(f"stub: yolox's {name} is not part of the demo code the peers run")

        return unused

    loaded = {}
    for key, rel in (("data_augment", "yolox/data/data_augment.py"), ("demo_utils", "yolox/utils/demo_utils.py")):
        path = os.path.join(demo_dir, rel)
        stubs = {}
        for module, names in yolox_imports(path):
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                mod = stubs.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
                mod.__path__ = []
                if i > 1:
                    setattr(stubs[".".join(parts[: i - 1])], parts[i - 1], mod)
            for name in names:
                setattr(stubs[module], name, stub(name))
        saved = {name: sys.modules.get(name) for name in stubs}
        sys.modules.update(stubs)
        try:
            spec = importlib.util.spec_from_file_location(f"yolox_demo_{key}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            loaded[key] = module
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
    return loaded["data_augment"].preproc, loaded["demo_utils"].demo_postprocess, loaded["demo_utils"].multiclass_nms


def process_start_ms():
    """Epoch ms at which this process started (the kernel's start time, /proc/self/stat, plus boot time)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
    # Field 22 of stat (index 19 after the command name) is the start time in clock ticks since boot.
    return (btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")) * 1000.0


def now_ms():
    return time.time() * 1000.0


class Detector:
    """The demo's per-image steps, on one InferenceSession with `threads` intra-op threads."""

    def __init__(self, model, threads, demo_dir):
        self.preproc, self.demo_postprocess, self.multiclass_nms = load_demo(demo_dir)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = onnxruntime.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        inp = self.session.get_inputs()[0]
        self.input_name = inp.name
        # The demo takes --input_shape (height, width); here it is read from the model (NCHW).
        self.input_shape = (int(inp.shape[2]), int(inp.shape[3]))

    def __call__(self, origin_img):
        """Detections (x1, y1, x2, y2, score, class) in source pixels, or None; and the session.run time, ms."""
        img, ratio = self.preproc(origin_img, self.input_shape)
        t = time.perf_counter()
        output = self.session.run(None, {self.input_name: img[None, :, :, :]})
        infer_ms = (time.perf_counter() - t) * 1000.0
        predictions = self.demo_postprocess(output[0], self.input_shape)[0]
        boxes = predictions[:, :4]
        scores = predictions[:, 4:5] * predictions[:, 5:]
        boxes_xyxy = np.ones_like(boxes)
        boxes_xyxy[:, 0] = boxes[:, 0] - boxes[:, 2] / 2.0
        boxes_xyxy[:, 1] = boxes[:, 1] - boxes[:, 3] / 2.0
        boxes_xyxy[:, 2] = boxes[:, 0] + boxes[:, 2] / 2.0
        boxes_xyxy[:, 3] = boxes[:, 1] + boxes[:, 3] / 2.0
        boxes_xyxy /= ratio
        dets = self.multiclass_nms(boxes_xyxy, scores, nms_thr=0.45, score_thr=0.1)
        return dets, infer_ms


class Run:
    """What one run records: a record per result, the counts, the stop flag and the time bound."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.stop = threading.Event()
        self.records = []
        self.read = 0
        self.dropped = 0
        self.t0 = None

    def result(self, k, due, dets, infer_ms, dropped):
        emitted = now_ms()
        self.records.append({"k": k, "due": due, "emitted": emitted, "inferMs": infer_ms, "out": len(self.records) + 1, "dropped": dropped, "n": 0 if dets is None else int(len(dets))})
        if len(self.records) == 1:
            print("first-result", flush=True)
        if emitted - self.t0 >= self.seconds * 1000.0:
            self.stop.set()


def paced(run, k, fps, live):
    """Waits until frame k is due (live) and returns its due time, epoch ms; None in fast mode (stamped once read)."""
    if run.t0 is None:
        run.t0 = now_ms()
    if not live:
        return None
    due = run.t0 + k * 1000.0 / fps
    delay = (due - now_ms()) / 1000.0
    if delay > 0:
        time.sleep(delay)
    return due


def read_frame(cap, run, k, fps, live):
    """Frame k when it is due (live) or at once (fast): (image, due epoch ms), or None at the end."""
    due = paced(run, k, fps, live)
    ok, img = cap.read()
    if not ok:
        return None
    return img, (now_ms() if due is None else due)


def peer_a(cap, detect, run, fps, live):
    """Read the frame (when due), run the demo's steps on it, record; then the next frame."""
    k = 0
    while not run.stop.is_set():
        got = read_frame(cap, run, k, fps, live)
        if got is None:
            break
        img, due = got
        run.read += 1
        dets, infer_ms = detect(img)
        run.result(k, due, dets, infer_ms, 0)
        k += 1


def peer_b(cap, detect, run, fps, live):
    """A reader thread keeps only the newest frame; the loop infers on whatever is newest when it is free."""
    cond = threading.Condition()
    slot = {"frame": None, "eof": False}

    def reader():
        k = 0
        try:
            while not run.stop.is_set():
                got = read_frame(cap, run, k, fps, live)
                if got is None:
                    break
                img, due = got
                with cond:
                    if slot["frame"] is not None:
                        run.dropped += 1
                    slot["frame"] = (k, due, img)
                    run.read += 1
                    cond.notify()
                k += 1
        finally:
            with cond:
                slot["eof"] = True
                cond.notify()

    thread = threading.Thread(target=reader, name="reader", daemon=True)
    thread.start()
    while not run.stop.is_set():
        with cond:
            while slot["frame"] is None and not slot["eof"] and not run.stop.is_set():
                cond.wait(0.1)
            item, slot["frame"] = slot["frame"], None
            dropped = run.dropped
        if item is None:
            break
        k, due, img = item
        dets, infer_ms = detect(img)
        run.result(k, due, dets, infer_ms, dropped)
    run.stop.set()
    thread.join(5)


def main():
    parser = argparse.ArgumentParser(description="bench:peer's Python peers: the YOLOX ONNX Runtime demo in a loop (A) or behind a newest-frame reader (B)")
    parser.add_argument("--mode", choices=["A", "B"], required=True, help="A: sequential loop; B: reader thread keeping the newest frame")
    parser.add_argument("--model", required=True, help="ONNX model file (the one argus uses)")
    parser.add_argument("--video", required=True, help="video file or URL")
    parser.add_argument("--rate", choices=["live", "fast"], default="live", help="live: frame k is read when due (t0 + k/fps); fast: as fast as possible")
    parser.add_argument("--threads", type=int, default=2, help="ONNX Runtime intra_op_num_threads")
    parser.add_argument("--seconds", type=float, default=20.0, help="stop this long after the first frame was read")
    parser.add_argument("--json", required=True, help="write the records and the process's figures here")
    parser.add_argument("--demo", default=os.path.join(sys.prefix, "yolox-demo"), help="folder of the extracted YOLOX demo sources (default: the environment's yolox-demo)")
    args = parser.parse_args()
    if args.threads < 1:
        parser.error("--threads: at least 1")
    if args.seconds <= 0:
        parser.error("--seconds: must be positive")

    is_url = "://" in args.video
    if not is_url and not os.path.isfile(args.video):
        parser.error(f"--video: no such file: {args.video}")
    if not os.path.isfile(args.model):
        parser.error(f"--model: no such file: {args.model}")
    started = process_start_ms()
    run = Run(args.seconds)
    signal.signal(signal.SIGTERM, lambda *_: run.stop.set())
    detect = Detector(args.model, args.threads, args.demo)
    cap = cv2.VideoCapture(args.video)
    if not cap.isOpened():
        parser.error(f"--video: cv2.VideoCapture cannot open {args.video}")
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    live = args.rate == "live" and not is_url
    (peer_a if args.mode == "A" else peer_b)(cap, detect, run, fps, live)
    cap.release()

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = {
        "program": f"peer{args.mode}",
        "rate": args.rate,
        "video": args.video,
        "fps": fps,
        "threads": args.threads,
        "inputShape": list(detect.input_shape),
        "processStart": started,
        "firstResultMs": run.records[0]["emitted"] - started if run.records else None,
        "framesRead": run.read,
        "framesOut": len(run.records),
        "dropped": run.dropped,
        "cpuMs": {"self": (own.ru_utime + own.ru_stime) * 1000.0, "children": (children.ru_utime + children.ru_stime) * 1000.0},
        # ru_maxrss is in KiB on Linux.
        "maxRssKb": {"self": own.ru_maxrss, "children": children.ru_maxrss},
        "versions": {"python": sys.version.split()[0], "onnxruntime": onnxruntime.__version__, "opencv": cv2.__version__, "numpy": np.__version__},
        "records": run.records,
    }
    with open(args.json, "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
