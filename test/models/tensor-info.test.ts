import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { sessionTensors } from '../../src/models/tensor-info.js';
import { MODEL } from '../helpers/assets.js';

describe('sessionTensors', () => {
  it("reads names, dims and element types from a real session's metadata", async () => {
    const session = await ort.InferenceSession.create(MODEL, { logSeverityLevel: 3 });
    try {
      expect(sessionTensors(session)).toEqual({
        inputs: [{ name: 'images', dims: [1, 3, 416, 416], type: 'float32' }],
        outputs: [{ name: 'output', dims: [1, 3549, 85], type: 'float32' }],
      });
    } finally {
      await session.release();
    }
  });

  it('keeps dynamic dims as ONNX Runtime gives them; a non-tensor value has no dims and type unknown', () => {
    const t = sessionTensors({
      inputMetadata: [{ name: 'x', isTensor: true, type: 'float16', shape: ['batch', 3, 640, 640] }],
      outputMetadata: [{ name: 'seq', isTensor: false }],
    } as unknown as ort.InferenceSession);
    expect(t.inputs).toEqual([{ name: 'x', dims: ['batch', 3, 640, 640], type: 'float16' }]);
    expect(t.outputs).toEqual([{ name: 'seq', dims: [], type: 'unknown' }]);
  });
});
