#!/usr/bin/env bash
# Makes the YOLOX-Nano variants (dynamic batch, fp16, INT8) into the cache with a private
# Python environment from PyPI (onnx, onnxruntime's quantisation tools, onnxconverter-common).
# Usage: scripts/derive-models.sh SRC_MODEL OUT_DIR FFMPEG VIDEO...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${ARGUS_PYENV:-${ARGUS_CACHE:-$HOME/.cache/argus}/pyenv}"
py="${PYTHON:-python3}"
# One maker at a time (test files run two at once); the lock stays with the exec'd Python until it ends.
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then exec 9>"$venv.lock" && flock 9; fi
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import onnx, onnxruntime, onnxconverter_common, numpy' 2>/dev/null; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check onnx==1.23.2 onnxruntime==1.32.0 onnxconverter-common==1.16.0 numpy==2.4.6 >&2
fi
exec "$venv/bin/python" "$here/derive-models.py" "$@"
