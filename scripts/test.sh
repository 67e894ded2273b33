#!/usr/bin/env bash
# The project's test command (README: `npm ci && npm test`; .ci/run runs exactly that).
# Points the asset mirror at ../shared, starts a Kafka broker, runs every test file with
# vitest, and ends with one plain line "N passed, N failed". Exit status is vitest's.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -z "${ARGUS_MIRROR:-}" ] && [ -d ../shared ]; then
  ARGUS_MIRROR="$(cd ../shared && pwd)"
fi
export ARGUS_MIRROR="${ARGUS_MIRROR:-}"
export ARGUS_CACHE="${ARGUS_CACHE:-$PWD/.cache/argus}"
mkdir -p .test-results
rm -f .test-results/vitest.json

# Debian's Chromium for the dashboard test (driven by playwright-core; never a downloaded browser).
if ! command -v chromium >/dev/null 2>&1; then
  echo "test.sh: installing Debian's chromium for the dashboard test" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >/dev/null 2>&1 \
    || echo "test.sh: could not install chromium; the dashboard test will fail" >&2
fi

# Debian's ffmpeg (security-maintained; the bundled @ffmpeg-installer build is from 2018):
# argus prefers /usr/bin/ffmpeg when it is newer (src/sources/ffmpeg-path.ts), so the tests
# run the ffmpeg a Debian host runs. ~16 MB, ~15 s here. Without it the bundled one is used.
if [ ! -x /usr/bin/ffmpeg ] && [ -z "${ARGUS_FFMPEG:-}" ]; then
  echo "test.sh: installing Debian's ffmpeg for the sources" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg; } >/dev/null 2>&1 \
    || echo "test.sh: could not install ffmpeg; the tests use the bundled one" >&2
fi

# Each broker and RTSP server of the tests keeps its state in a folder named by its port: one set
# for all of them would make the private brokers that fault tests kill the shared one. Servers
# the tests start listen on free ports (0), which an ARGUS_HTTP_PORT from the shell would override.
unset ARGUS_KAFKA_STATE ARGUS_RTSP_STATE ARGUS_HTTP_PORT

# A real Apache Kafka (KRaft) on loopback for the sink tests; fetched from Maven Central on
# first use. vitest's global setup (test/helpers/global-setup.ts) starts it, beside the derived
# models, on 19092 (or KAFKA_PORT) plus the run's port offset: the test ports of a run that
# another test run (another checkout) already uses are moved up by 10000, so that neither
# stops or kills the other's brokers and RTSP servers (test/helpers/ports.ts). It is stopped
# when the tests end, and here too in case vitest died without its teardown.
export ARGUS_TEST_KAFKA=start
# A JVM start on a busy 2-core machine can take minutes.
export KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-480}"
# Every temporary file and folder of the tests, and of the programs they start, goes under one
# folder of this run, removed when it ends: the tests' own mkdtemp folders used to stay behind
# (thousands in /tmp after a few runs).
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/argus-test.XXXXXX")"
export ARGUS_TEST_KAFKA_PORT_FILE="$run_tmp/kafka-port"
cleanup() {
  if [ -s "$ARGUS_TEST_KAFKA_PORT_FILE" ]; then
    KAFKA_PORT="$(cat "$ARGUS_TEST_KAFKA_PORT_FILE")" bash scripts/kafka-broker.sh stop >/dev/null 2>&1 || true
  fi
  rm -rf "$run_tmp"
}
trap cleanup EXIT

TMPDIR="$run_tmp" npx vitest run "$@"
rc=$?
node scripts/test-summary.mjs .test-results/vitest.json "$rc" || rc=1
exit $rc
