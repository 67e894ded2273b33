#!/usr/bin/env bash
# Makes the private Python environment of `npm run bench:peer` (scripts/peers/peer.py): ONNX
# Runtime, OpenCV and NumPy from PyPI at pinned versions, plus the official YOLOX demo code the
# peers run. Prints the environment's folder on stdout (pip's and curl's messages go to stderr).
# Usage: scripts/peers/setup.sh
#
# The YOLOX demo code: the `yolox` package on PyPI is an sdist only, whose setup.py needs torch,
# so `pip install yolox` fails. The sdist itself is fetched from PyPI, checked against its
# sha256, and only the two source files the ONNX Runtime demo uses are extracted, unchanged:
#   yolox/data/data_augment.py  (preproc: the letterbox)
#   yolox/utils/demo_utils.py   (demo_postprocess: grid decoding; multiclass_nms)
# into $venv/yolox-demo/. peer.py loads them by path, without the package's __init__ (it imports torch).
set -euo pipefail
venv="${ARGUS_PYENV_PEER:-${ARGUS_CACHE:-$HOME/.cache/argus}/pyenv-peer}"
py="${PYTHON:-python3}"
# One maker at a time: test files run two at once, and two that ask for the environment on a fresh
# machine would each remove and rebuild it under the other. The lock is held until this script ends.
mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then exec 9>"$venv.lock" && flock 9; fi
# onnxruntime at the version of the onnxruntime-node argus runs (package.json), so the peers and
# argus differ by their pipelines, not by the runtime's release.
reqs="onnxruntime==1.30.0 opencv-python-headless==4.13.0.92 numpy==2.4.6"
# A changed pin list (kept in the environment as .argus-reqs) rebuilds the environment.
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.argus-reqs" 2>/dev/null)" != "$reqs" ] || ! "$venv/bin/python" -c 'import onnxruntime, cv2, numpy' 2>/dev/null; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  # shellcheck disable=SC2086 # the pins are separate words
  "$venv/bin/pip" install -q --disable-pip-version-check $reqs >&2
  printf '%s' "$reqs" >"$venv/.argus-reqs"
fi

sdist_name="yolox-0.3.0.tar.gz"
sdist_url="https://files.pythonhosted.org/packages/f8/a1/08f57037146540133673aecca2c371064d567928beaebc69611e4c7745b0/$sdist_name"
sdist_sha256="1b8ee68846434408c40074f0806259fe3b9387181e562dbc435ea666533d8d08"
members=(yolox/data/data_augment.py yolox/utils/demo_utils.py)
demo="$venv/yolox-demo"
sdist="$venv/$sdist_name"
verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sdist_sha256" ]; }
missing=0
for m in "${members[@]}"; do [ -f "$demo/$m" ] || missing=1; done
if [ "$missing" = 1 ]; then
  # The sdist is kept in the environment: a rebuilt environment fetches it again.
  if ! verified "$sdist"; then
    curl -fsSL --retry 3 -o "$sdist.part" "$sdist_url"
    if ! verified "$sdist.part"; then
      echo "scripts/peers/setup.sh: $sdist_name: sha256 $(sha256sum "$sdist.part" | cut -d' ' -f1) is not $sdist_sha256; refused" >&2
      rm -f "$sdist.part"
      exit 1
    fi
    mv "$sdist.part" "$sdist"
  fi
  tmp="$(mktemp -d "$venv/.yolox-demo.XXXXXX")"
  chmod 755 "$tmp"
  tar -xzf "$sdist" -C "$tmp" --strip-components=1 "${members[@]/#/yolox-0.3.0/}"
  rm -rf "$demo"
  mv "$tmp" "$demo"
fi
printf '%s\n' "$venv"
