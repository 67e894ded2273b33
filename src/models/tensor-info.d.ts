/** Types of tensor-info.js (plain JavaScript, shared with the inference worker thread). */
import type { InferenceSession } from 'onnxruntime-node';

/** One model input or output as ONNX Runtime describes it (`session.inputMetadata`, `outputMetadata`). */
export interface TensorInfo {
  name: string;
  /** Numbers, or strings (or −1) for dynamic dims; empty for a non-tensor value. */
  dims: readonly (number | string)[];
  /** Element type as onnxruntime-node names it: 'float32', 'float16', 'int32', 'int64', …; 'unknown' for a non-tensor value. */
  type: string;
}

/** A session's inputs and outputs, in the session's order. */
export function sessionTensors(session: Pick<InferenceSession, 'inputMetadata' | 'outputMetadata'>): { inputs: TensorInfo[]; outputs: TensorInfo[] };
