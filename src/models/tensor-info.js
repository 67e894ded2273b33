// Plain JavaScript (types in tensor-info.d.ts) so that the inference worker thread, which loads
// without a TypeScript loader, describes a session's tensors with the same code as the main
// thread (inline sessions, `argus models inspect`).

/** One input or output as ONNX Runtime's metadata describes it; non-tensor values get no dims. */
function describe(m) {
  return m.isTensor ? { name: m.name, dims: [...m.shape], type: String(m.type) } : { name: m.name, dims: [], type: 'unknown' };
}

/**
 * A session's inputs and outputs (name, dims, element type), in the session's order.
 * @param {{ inputMetadata: readonly object[], outputMetadata: readonly object[] }} session
 */
export function sessionTensors(session) {
  return { inputs: session.inputMetadata.map(describe), outputs: session.outputMetadata.map(describe) };
}
