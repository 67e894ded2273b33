// One ONNX Runtime session on its own thread (see worker-pool.ts: WorkerPool). Plain JavaScript,
// so it loads in a worker without a TypeScript loader.
//
// onnxruntime-node's run() is synchronous on the calling thread (the promise only defers it to
// setImmediate), so on the main thread it would stop ffmpeg reads, Kafka, WebSocket and
// /metrics for the whole inference. Here it blocks only this thread.
//
// workerData: { modelPath, attempts: [{ provider, config }], options, logLevel }   attempts in
//   order, as providers.ts's attemptList makes them; the first that opens is kept
// → { type: 'ready', provider, failed, inputs, outputs } | { type: 'fatal', message }
// ← { id, name, type, data, dims, outputNames }   data: float32 values in a typed array (shared
//   memory: copied here, because onnxruntime-node refuses SharedArrayBuffer-backed tensors), or
//   an array of them (a batch's images: concatenated here, zero-padded up to dims); narrowed
//   to fp16 here as it is copied when type is float16
// → { id, outputs: [{ type, data }] } (output buffers transferred; fp16 widened to float32 here)
//   | { id, error }
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import { float16ToFloat32, float32ToFloat16 } from '../models/fp16.js';
import { sessionTensors } from '../models/tensor-info.js';
import { openFirstWorking } from './provider-fallback.js';

ort.env.logLevel = workerData.logLevel;

/** Worker-local copies of the shared inputs, one per (type, length), reused. */
const local = new Map();
function localBuffer(Type, length) {
  const key = `${Type.name}:${length}`;
  let a = local.get(key);
  if (!a) local.set(key, (a = new Type(length)));
  return a;
}
function localCopy(data, dims, type) {
  if (type !== 'float16' && !Array.isArray(data) && !(data.buffer instanceof SharedArrayBuffer)) return data;
  const a = localBuffer(type === 'float16' ? Uint16Array : Float32Array, dims.reduce((x, y) => x * y, 1));
  let at = 0;
  for (const part of Array.isArray(data) ? data : [data]) {
    if (type === 'float16') float32ToFloat16(part, a.subarray(at, at + part.length));
    else a.set(part, at);
    at += part.length;
  }
  a.fill(0, at);
  return a;
}

try {
  const { session, provider, failed } = await openFirstWorking(workerData.attempts, (executionProviders) =>
    ort.InferenceSession.create(workerData.modelPath, { ...workerData.options, executionProviders }),
  );
  parentPort.on('message', async (msg) => {
    if (msg === 'exit') process.exit(70); // tests: a worker that dies between runs
    if (msg?.stall) return void Atomics.wait(msg.stall, 0, 0); // tests: this thread blocks until the gate opens
    if (msg === 'release') {
      await session.release().catch(() => {});
      parentPort.close();
      return;
    }
    try {
      const data = localCopy(msg.data, msg.dims, msg.type);
      const out = await session.run({ [msg.name]: new ort.Tensor(msg.type, data, msg.dims) }, msg.outputNames);
      const outputs = [];
      const transfer = [];
      for (const n of msg.outputNames) {
        let d = out[n].data;
        let type = out[n].type;
        if (type === 'float16') {
          d = float16ToFloat32(d);
          type = 'float32';
        } else if (d.byteOffset !== 0 || d.buffer.byteLength !== d.byteLength || transfer.includes(d.buffer)) {
          d = d.slice(); // transfer whole, unshared buffers: copy a view into a larger one
        }
        transfer.push(d.buffer);
        outputs.push({ type, data: d });
      }
      parentPort.postMessage({ id: msg.id, outputs }, transfer);
    } catch (e) {
      parentPort.postMessage({ id: msg.id, error: String(e?.message ?? e) });
    }
  });
  parentPort.postMessage({ type: 'ready', provider, failed, ...sessionTensors(session) });
} catch (e) {
  parentPort.postMessage({ type: 'fatal', message: String(e?.message ?? e) });
}
