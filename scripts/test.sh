#!/usr/bin/env bash
# The project's test command (README: `npm ci && npm test`; .ci/run runs exactly that).
# Points the asset mirror at ../shared, runs every test file with vitest, and ends with one
# plain line "N passed, N failed". Exit status is vitest's.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${ARGUS_MIRROR:-}" ] && [ -d ../shared ]; then
  ARGUS_MIRROR="$(cd ../shared && pwd)"
fi
export ARGUS_MIRROR="${ARGUS_MIRROR:-}"
export ARGUS_CACHE="${ARGUS_CACHE:-$PWD/.cache/argus}"
mkdir -p .test-results
rm -f .test-results/vitest.json

npx vitest run "$@"
rc=$?
node scripts/test-summary.mjs .test-results/vitest.json || rc=1
exit $rc
