#!/usr/bin/env bash
# A real RTSP server on 127.0.0.1 for argus's integration tests, with ffmpeg publishers that
# push video files into it. No Docker; the network is needed only once, to install it.
#
# The server is GStreamer's RTSP server (gst-rtsp-server 1.22, Debian 12 packages
# gir1.2-gst-rtsp-server-1.0 and GStreamer's base/good/bad plugins), driven by a small
# Python program, scripts/rtsp/gst_rtsp_server.py, run with the Debian /usr/bin/python3
# (python3-gi). (mediamtx cannot be fetched here: the Go module proxy refuses it.) The script
# installs the packages itself with apt-get on first use (`build` or `start`; root, or
# passwordless sudo, ~20 s), when the GStreamer check fails.
#
# How a stream gets there: each publisher is an ffmpeg that reads the file at native rate
# (-re) and sends it as MPEG-TS over UDP to 127.0.0.1:<feed port> (one port per path, recorded
# in the state dir). The server polls the state dir (every 200 ms) and serves path <path>
# while its publisher process is alive, with a shared media pipeline per path
#   udpsrc port=<feed port> ! tsdemux ! h264parse ! rtph264pay   (h265parse/rtph265pay: HEVC)
# built when the first reader comes and dropped after the last one leaves. SPS/PPS go with
# every key frame, so readers may join mid-stream (they start at the next key frame). Readers
# use RTP over TCP (interleaved, ffmpeg -rtsp_transport tcp; one that offers only UDP gets
# 461 and ffmpeg retries over TCP). A path without a live publisher answers 404; when its
# publisher exits or is replaced, the path's readers are disconnected (they see EOF).
#
# Besides the publishers' paths, the server always serves /argus-camera: a live 640x360 10 fps
# test pattern encoded as it is captured (openh264, no B-frames), whose RTCP sender reports map
# RTP time to the wall clock at capture, as an NTP-synchronised camera's do (for argus's
# `producedBy: camera` stamps; the publishers' paths map it to the time of sending instead).
#
# Usage: scripts/rtsp-server.sh <command> [args]
#   start [--republish]   install the server if needed, start it in the background (own
#                         session), wait until it answers RTSP OPTIONS, print
#                         RTSP_URL_BASE=rtsp://127.0.0.1:<port> (the only stdout line).
#                         No-op if it is already running. It serves every recorded publisher
#                         that is alive. --republish also restarts every recorded publisher
#                         that is not running (exited, or paused with pause-publisher), then
#                         waits until a frame is readable from every recorded path.
#   publish <path> <file> [--loop] [--fps N] [--transcode] [--no-wait]
#                         push <file> to rtsp://127.0.0.1:<port>/<path> with ffmpeg at native
#                         rate (-re); --loop repeats it forever. H.264/H.265 input is sent as
#                         is (-c copy) unless --fps or --transcode is given; then it is encoded
#                         with libx264 (veryfast, zerolatency, no B-frames, one key frame per
#                         second: -g = fps). Replaces a publisher already on <path> (its
#                         readers are disconnected). Waits until a client can decode a frame
#                         from the path (unless --no-wait), then prints
#                         RTSP_URL=rtsp://127.0.0.1:<port>/<path>.
#   unpublish <path>      stop that publisher (SIGTERM, SIGKILL after 10 s) and forget it.
#   pause-publisher <path>   SIGSTOP the publisher: nothing more reaches the server; the path
#                         stays served, connected readers stay connected and starve (a new
#                         reader's DESCRIBE waits for the stream, or fails after ~20 s if it
#                         has no pipeline yet). Note: on resume, ffmpeg's -re catches up, i.e.
#                         it sends the paused stretch in a burst.
#   resume-publisher <path>  SIGCONT it.
#   kill                  SIGKILL the server only (crash simulation): readers lose their
#                         connections. Publishers keep running (their UDP goes nowhere until a
#                         server is back); `start` serves them again, `start --republish` also
#                         restarts the ones that died or are paused.
#   stop                  stop all publishers and forget them, then the server (SIGTERM, SIGKILL
#                         after 10 s). Leaves no process behind.
#   status                print server and publisher states (exit 0 running, 3 not running).
#   build                 only install/check the server's packages (CI warm-up).
#   logs [path] [N]       last N (default 50) lines of the server log, or of <path>'s publisher.
#
# Environment:
#   RTSP_PORT             RTSP port on 127.0.0.1 (default 18554)
#   ARGUS_RTSP_STATE      state dir: pids, logs, publisher records (default /tmp/argus-rtsp-$RTSP_PORT)
#   ARGUS_FFMPEG          ffmpeg to publish/check with (default: the project's @ffmpeg-installer
#                         binary, else ffmpeg on PATH)
#   ARGUS_RTSP_PYTHON     Python with python3-gi (default /usr/bin/python3, Debian's)
#   RTSP_START_TIMEOUT    seconds to wait for the server (default 30)
#   RTSP_PUBLISH_TIMEOUT  seconds to wait for a publisher's first frame (default 30)
#   RTSP_READ_TIMEOUT     terminate a publisher that has been paused (SIGSTOP) for this long,
#                         e.g. 10s; its path is then no longer served (default 0 = never: a
#                         paused publisher keeps its readers connected)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RTSP_PORT="${RTSP_PORT:-18554}"
ARGUS_RTSP_PYTHON="${ARGUS_RTSP_PYTHON:-/usr/bin/python3}"
ARGUS_RTSP_STATE="${ARGUS_RTSP_STATE:-/tmp/argus-rtsp-$RTSP_PORT}"
RTSP_START_TIMEOUT="${RTSP_START_TIMEOUT:-30}"
RTSP_PUBLISH_TIMEOUT="${RTSP_PUBLISH_TIMEOUT:-30}"
RTSP_READ_TIMEOUT="${RTSP_READ_TIMEOUT:-0}"

HOST=127.0.0.1
URL_BASE="rtsp://$HOST:$RTSP_PORT"
SERVER_PY="$ROOT/scripts/rtsp/gst_rtsp_server.py"
PIDFILE="$ARGUS_RTSP_STATE/server.pid"
LOGFILE="$ARGUS_RTSP_STATE/server.log"
PUBDIR="$ARGUS_RTSP_STATE/publishers"

die() { echo "rtsp-server: $*" >&2; exit 1; }
info() { echo "rtsp-server: $*" >&2; }

if ! [[ "$RTSP_PORT" =~ ^[0-9]+$ ]] || ((RTSP_PORT < 1 || RTSP_PORT > 65535)); then
  die "bad RTSP_PORT '$RTSP_PORT'"
fi

find_ffmpeg() {
  if [[ -n "${ARGUS_FFMPEG:-}" ]]; then echo "$ARGUS_FFMPEG"; return; fi
  local bundled="$ROOT/node_modules/@ffmpeg-installer/linux-x64/ffmpeg"
  if [[ -x "$bundled" ]]; then echo "$bundled"; return; fi
  command -v ffmpeg 2>/dev/null || die "ffmpeg not found (run npm ci, or set ARGUS_FFMPEG)"
}

# ---------------------------------------------------------------------- build --

# Debian 12 packages: gst-rtsp-server with its introspection data, python3-gi, and the plugins
# the pipelines use (udpsrc, rtpbin, rtph26xpay: good; tsdemux, h26xparse: bad; app: base)
GST_PKGS=(python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good gstreamer1.0-plugins-bad)

gst_ok() { "$ARGUS_RTSP_PYTHON" "$SERVER_PY" --check >/dev/null 2>&1; }

cmd_build() {
  gst_ok && return 0
  # (a missing /usr/bin/python3 comes with python3-gi)
  if [[ ! -x "$ARGUS_RTSP_PYTHON" && "$ARGUS_RTSP_PYTHON" != /usr/bin/python3 ]]; then
    die "$ARGUS_RTSP_PYTHON not found (unset ARGUS_RTSP_PYTHON to use Debian's /usr/bin/python3)"
  fi
  command -v apt-get >/dev/null || die "GStreamer's RTSP server is missing and apt-get is not available; install: ${GST_PKGS[*]}"
  local -a sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "GStreamer's RTSP server is missing; as root, install: ${GST_PKGS[*]}"
    sudo=(sudo -n)
  fi
  # one installer at a time (parallel test runs)
  exec 7>/tmp/argus-rtsp-install.lock  # one lock for every run, whatever its TMPDIR
  flock 7
  if ! gst_ok; then
    info "installing GStreamer's RTSP server from Debian packages (once): ${GST_PKGS[*]} ..."
    local log; log="$(mktemp "${TMPDIR:-/tmp}/argus-rtsp-install.XXXXXX")"
    local t0=$SECONDS
    if ! { "${sudo[@]}" apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          --no-install-recommends -o DPkg::Lock::Timeout=300 "${GST_PKGS[@]}"; } >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      rm -f "$log"
      die "installing ${GST_PKGS[*]} failed"
    fi
    rm -f "$log"
    if ! gst_ok; then
      "$ARGUS_RTSP_PYTHON" "$SERVER_PY" --check >&2 || true
      die "GStreamer's RTSP server still does not load after installing ${GST_PKGS[*]}"
    fi
    info "installed in $((SECONDS - t0))s"
  fi
  flock -u 7
  exec 7>&-
}

# -------------------------------------------------------------------- helpers --

# pid if alive, not a zombie, and its command line contains the given marker argument
pid_alive_with() { # pidfile marker
  [[ -f "$1" ]] || return 0
  local pid; pid="$(cat "$1" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] && return 0
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$2" || return 0
  echo "$pid"
}

server_pid() { pid_alive_with "$PIDFILE" "$HOST:$RTSP_PORT"; }

port_open() { (exec 3<>"/dev/tcp/$HOST/$RTSP_PORT") 2>/dev/null; }

# the server on the port answers an RTSP OPTIONS request
rtsp_ok() {
  local line
  # shellcheck disable=SC2016
  line="$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "OPTIONS rtsp://%s:%s/ RTSP/1.0\r\nCSeq: 1\r\n\r\n" "$0" "$1" >&3
    head -n 1 <&3' "$HOST" "$RTSP_PORT" 2>/dev/null)" || return 1
  [[ "$line" == "RTSP/1.0 200"* ]]
}

signal_group() { kill "-$1" -- "-$2" 2>/dev/null || kill "-$1" "$2" 2>/dev/null || true; }

wait_dead() { # pid timeout_s
  local end=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
  return 0
}

# SIGTERM (and SIGCONT, in case it is paused), SIGKILL after 10 s
terminate() { # pid what
  signal_group TERM "$1"
  signal_group CONT "$1"
  if ! wait_dead "$1" 10; then
    info "$2 (pid $1) did not stop within 10s; sending SIGKILL"
    signal_group KILL "$1"
    wait_dead "$1" 10 || die "could not kill $2 (pid $1)"
  fi
}

log_tail() { # file [n]
  [[ -f "$1" ]] || return 0
  echo "----- last ${2:-30} lines of $1 -----" >&2
  tail -n "${2:-30}" "$1" >&2
}

valid_path() {
  if ! [[ "$1" =~ ^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$ ]] || [[ "/$1/" =~ /\.\.?/ ]]; then
    die "bad stream path '$1' (use letters, digits, . _ ~ - and / between segments)"
  fi
}

pub_key() { echo "${1//\//+}"; }
pub_url() { echo "$URL_BASE/$1"; }
# the publisher's output URL (udp://127.0.0.1:<feed port>?...), line 4 of its .feed record
feed_url() { sed -n 4p "$PUBDIR/$(pub_key "$1").feed" 2>/dev/null || true; }
pub_pid() {
  local marker; marker="$(feed_url "$1")"
  [[ -n "$marker" ]] || return 0
  pid_alive_with "$PUBDIR/$(pub_key "$1").pid" "$marker"
}
pub_paused() { # pid
  [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" == T ]]
}

# ---------------------------------------------------------------------- server --

lock_state() {
  mkdir -p "$ARGUS_RTSP_STATE" "$PUBDIR"
  exec 8>"$ARGUS_RTSP_STATE/.lock"
  flock 8
}

fail_start() {
  info "$1"
  log_tail "$LOGFILE" 40
  local pid; pid="$(server_pid)"
  [[ -n "$pid" ]] && signal_group KILL "$pid"
  rm -f "$PIDFILE"
  exit 1
}

cmd_start() {
  local republish=0 a
  for a in "$@"; do case "$a" in --republish) republish=1 ;; *) die "start: unknown option $a" ;; esac; done
  lock_state
  local pid; pid="$(server_pid)"
  if [[ -z "$pid" ]]; then
    cmd_build
    port_open && die "port $RTSP_PORT on $HOST is already in use by another process"
    [[ -f "$LOGFILE" ]] && mv -f "$LOGFILE" "$LOGFILE.1"
    local -a args=("$ARGUS_RTSP_PYTHON" "$SERVER_PY" --listen "$HOST:$RTSP_PORT"
      --state "$PUBDIR" --read-timeout "$RTSP_READ_TIMEOUT")
    printf '%q ' "${args[@]}" >"$ARGUS_RTSP_STATE/server.cmd"
    echo >>"$ARGUS_RTSP_STATE/server.cmd"
    # own session + process group; the inner shell writes its pid and execs the server
    # shellcheck disable=SC2016
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "${args[@]}" \
      </dev/null >"$LOGFILE" 2>&1 7>&- 8>&- &
    disown $! 2>/dev/null || true
    # the pid file comes from a shell that has just been forked: seconds on a loaded machine
    local until=$((SECONDS + 30))
    while [[ ! -s "$PIDFILE" ]] && ((SECONDS < until)); do sleep 0.1; done
    [[ -s "$PIDFILE" ]] || fail_start "server process did not start"
  fi
  local deadline=$((SECONDS + RTSP_START_TIMEOUT))
  until rtsp_ok; do
    [[ -n "$(server_pid)" ]] || fail_start "server exited during start-up"
    ((SECONDS < deadline)) || fail_start "server not answering on $URL_BASE after ${RTSP_START_TIMEOUT}s"
    sleep 0.1
  done
  echo "$URL_BASE" >"$ARGUS_RTSP_STATE/url"
  flock -u 8
  exec 8>&-
  if ((republish)); then republish_all; fi
  echo "RTSP_URL_BASE=$URL_BASE"
}

cmd_stop() {
  (($# == 0)) || die "stop takes no arguments"
  [[ -d "$ARGUS_RTSP_STATE" ]] || return 0
  lock_state
  local spec
  shopt -s nullglob
  for spec in "$PUBDIR"/*.spec; do stop_publisher "$(head -n 1 "$spec")" forget; done
  shopt -u nullglob
  local pid; pid="$(server_pid)"
  [[ -n "$pid" ]] && terminate "$pid" "RTSP server"
  rm -f "$PIDFILE" "$ARGUS_RTSP_STATE/url"
  return 0
}

cmd_kill() {
  (($# == 0)) || die "kill takes no arguments"
  local pid; pid="$(server_pid)"
  [[ -n "$pid" ]] || { info "server not running"; return 0; }
  signal_group KILL "$pid"
  wait_dead "$pid" 10 || die "could not kill server pid $pid"
  rm -f "$PIDFILE" "$ARGUS_RTSP_STATE/url"
}

cmd_status() {
  local pid rc=0; pid="$(server_pid)"
  if [[ -n "$pid" ]]; then
    echo "server=running pid=$pid url=$URL_BASE"
  else
    echo "server=stopped url=$URL_BASE"
    rc=3
  fi
  local spec path ppid state
  shopt -s nullglob
  for spec in "$PUBDIR"/*.spec; do
    path="$(head -n 1 "$spec")"
    ppid="$(pub_pid "$path")"
    if [[ -z "$ppid" ]]; then state=dead
    elif pub_paused "$ppid"; then state=paused
    else state=running; fi
    echo "publisher path=$path state=$state pid=${ppid:--} url=$(pub_url "$path") file=$(sed -n 2p "$spec")"
  done
  shopt -u nullglob
  return $rc
}

cmd_logs() {
  local n=50 path=""
  for a in "$@"; do if [[ "$a" =~ ^[0-9]+$ ]]; then n="$a"; else path="$a"; fi; done
  if [[ -n "$path" ]]; then
    tail -n "$n" "$PUBDIR/$(pub_key "$path").log"
  else
    tail -n "$n" "$LOGFILE"
  fi
}

# ------------------------------------------------------------------ publishers --

# spec file lines: path, file, loop (0/1), fps (empty = source rate), transcode (0/1)
write_spec() { printf '%s\n' "$@" >"$PUBDIR/$(pub_key "$1").spec"; }

# UDP port the path's publisher sends to: the one it had, else the first free one from a
# base derived from RTSP_PORT, below Linux's ephemeral range (32768+), so that no sender's
# source port can take it
feed_port() { # path
  local key; key="$(pub_key "$1")"
  local old; old="$(sed -n 2p "$PUBDIR/$key.feed" 2>/dev/null || true)"
  if [[ "$old" =~ ^[0-9]+$ ]]; then echo "$old"; return; fi
  local used p
  used="$(for f in "$PUBDIR"/*.feed; do [[ -f "$f" ]] && sed -n 2p "$f"; done)"
  for ((p = 20000 + (RTSP_PORT % 1200) * 10; p < 32768; p++)); do
    grep -qxF "$p" <<<"$used" && continue
    # shellcheck disable=SC2016
    "$ARGUS_RTSP_PYTHON" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null || continue
    echo "$p"
    return
  done
  die "publish: no free UDP port for the feed of '$1'"
}

spawn_publisher() { # path file loop fps transcode
  local path="$1" file="$2" loop="$3" fps="$4" transcode="$5"
  local ff; ff="$(find_ffmpeg)"
  local key; key="$(pub_key "$path")"
  [[ -r "$file" ]] || die "publish: cannot read '$file'"
  # (ffmpeg -i without an output exits 1: only its stream listing is wanted)
  local probe codec
  probe="$("$ff" -hide_banner -nostdin -i "$file" 2>&1 || true)"
  codec="$(sed -n 's/.*Stream #[0-9]*:[0-9]*.*: Video: \([A-Za-z0-9_]*\).*/\1/p' <<<"$probe" | head -n 1)"
  [[ -n "$codec" ]] || die "publish: no video stream found in '$file'"
  local -a a=("$ff" -hide_banner -nostdin -loglevel warning -re)
  ((loop)) && a+=(-stream_loop -1)
  a+=(-i "$file" -map 0:v:0 -an -sn -dn)
  if [[ -z "$fps" && "$transcode" == 0 && ("$codec" == h264 || "$codec" == hevc) ]]; then
    a+=(-c:v copy)
  else
    codec=h264
    local g="$fps"
    if [[ -z "$g" ]]; then
      g="$(sed -n 's/.*Video:.* \([0-9.]*\) fps.*/\1/p' <<<"$probe" | head -n 1)"
      g="$(printf '%.0f' "${g:-25}" 2>/dev/null || echo 25)"
      ((g > 0)) || g=25
    fi
    [[ -n "$fps" ]] && a+=(-r "$fps")
    a+=(-c:v libx264 -preset veryfast -tune zerolatency -pix_fmt yuv420p -bf 0
        -g "$g" -keyint_min "$g" -sc_threshold 0)
  fi
  # concurrent publishes must not pick the same port: allocate and record it under a lock
  exec 9>"$PUBDIR/.feed.lock"
  flock 9
  local port; port="$(feed_port "$path")"
  local url="udp://$HOST:$port?pkt_size=1316"
  # the server's record of the path: path, feed port, codec, the publisher's output URL
  rm -f "$PUBDIR/$key.pid"
  printf '%s\n' "$path" "$port" "$codec" "$url" >"$PUBDIR/$key.feed.tmp"
  mv -f "$PUBDIR/$key.feed.tmp" "$PUBDIR/$key.feed"
  flock -u 9
  exec 9>&-
  # MPEG-TS (the muxer turns MP4-style H.264/H.265 into Annex B); PAT/PMT every 0.1 s and no
  # output buffering, so that a pipeline that starts mid-stream syncs at once
  a+=(-f mpegts -pat_period 0.1 -flush_packets 1 "$url")
  printf '%q ' "${a[@]}" >"$PUBDIR/$key.cmd"
  echo >>"$PUBDIR/$key.cmd"
  local log="$PUBDIR/$key.log"
  [[ -f "$log" ]] && mv -f "$log" "$log.1"
  # shellcheck disable=SC2016
  setsid bash -c 'echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0"; exec "$@"' "$PUBDIR/$key.pid" "${a[@]}" \
    </dev/null >"$log" 2>&1 7>&- 8>&- 9>&- &
  disown $! 2>/dev/null || true
  # the pid file comes from a shell that has just been forked: seconds on a loaded machine
  local until=$((SECONDS + 30))
  while [[ ! -s "$PUBDIR/$key.pid" ]] && ((SECONDS < until)); do sleep 0.1; done
  [[ -s "$PUBDIR/$key.pid" ]] || die "publish: the ffmpeg publisher for '$path' did not start"
}

# wait until a client decodes one frame from the path
wait_readable() { # path
  local path="$1" ff; ff="$(find_ffmpeg)"
  local key; key="$(pub_key "$path")"
  local url; url="$(pub_url "$path")"
  local deadline=$((SECONDS + RTSP_PUBLISH_TIMEOUT)) left
  while :; do
    if [[ -z "$(pub_pid "$path")" ]]; then
      info "publish: the ffmpeg publisher for '$path' exited"
      log_tail "$PUBDIR/$key.log"
      log_tail "$LOGFILE" 10
      exit 1
    fi
    left=$((deadline - SECONDS))
    ((left > 0)) || break
    # minimal probing: the SDP's sprop-parameter-sets already give the decoder what it needs.
    # -k: a starved ffmpeg 4.1 RTSP reader does not react to SIGTERM
    if timeout -k 1 "$left" "$ff" -hide_banner -nostdin -loglevel error -probesize 32 -analyzeduration 0 \
        -rtsp_transport tcp -i "$url" -map 0:v:0 -frames:v 1 -f null - >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  info "publish: no frame readable from $url after ${RTSP_PUBLISH_TIMEOUT}s"
  log_tail "$PUBDIR/$key.log"
  log_tail "$LOGFILE" 10
  exit 1
}

stop_publisher() { # path [forget]
  local key; key="$(pub_key "$1")"
  local pid; pid="$(pub_pid "$1")"
  [[ -n "$pid" ]] && terminate "$pid" "publisher '$1'"
  rm -f "$PUBDIR/$key.pid"
  [[ "${2:-}" == forget ]] && rm -f "$PUBDIR/$key.spec" "$PUBDIR/$key.cmd" "$PUBDIR/$key.feed"
  return 0
}

cmd_publish() {
  (($# >= 2)) || die "usage: publish <path> <file> [--loop] [--fps N] [--transcode] [--no-wait]"
  local path="$1" file="$2" loop=0 fps="" transcode=0 wait=1
  shift 2
  while (($#)); do
    case "$1" in
      --loop) loop=1 ;;
      --fps) (($# >= 2)) || die "publish: --fps needs a value"; fps="$2"; shift ;;
      --fps=*) fps="${1#--fps=}" ;;
      --transcode) transcode=1 ;;
      --no-wait) wait=0 ;;
      *) die "publish: unknown option $1" ;;
    esac
    shift
  done
  valid_path "$path"
  [[ -z "$fps" || "$fps" =~ ^[0-9]+$ && "$fps" -gt 0 ]] || die "publish: --fps must be a positive integer"
  [[ -r "$file" ]] || die "publish: cannot read '$file'"
  file="$(cd "$(dirname "$file")" && pwd)/$(basename "$file")"
  [[ -n "$(server_pid)" ]] || die "publish: the RTSP server is not running on $URL_BASE (run: $0 start)"
  mkdir -p "$PUBDIR"
  stop_publisher "$path"
  write_spec "$path" "$file" "$loop" "$fps" "$transcode"
  spawn_publisher "$path" "$file" "$loop" "$fps" "$transcode"
  ((wait)) && wait_readable "$path"
  echo "RTSP_URL=$(pub_url "$path")"
}

republish_all() {
  local spec path file loop fps transcode pid
  local -a paths=()
  shopt -s nullglob
  for spec in "$PUBDIR"/*.spec; do
    { read -r path; read -r file; read -r loop; read -r fps; read -r transcode; } <"$spec" || true
    paths+=("$path")
    pid="$(pub_pid "$path")"
    if [[ -n "$pid" ]] && ! pub_paused "$pid"; then continue; fi
    stop_publisher "$path" # e.g. a paused one
    spawn_publisher "$path" "$file" "${loop:-0}" "${fps:-}" "${transcode:-0}"
    info "restarted the publisher of $(pub_url "$path")"
  done
  shopt -u nullglob
  # wait for all paths at once
  local -a waits=()
  for path in ${paths[@]+"${paths[@]}"}; do
    (wait_readable "$path" && info "republished $(pub_url "$path")") &
    waits+=($!)
  done
  local w failed=0
  for w in ${waits[@]+"${waits[@]}"}; do wait "$w" || failed=1; done
  ((failed == 0)) || exit 1
}

cmd_unpublish() {
  (($# == 1)) || die "usage: unpublish <path>"
  valid_path "$1"
  stop_publisher "$1" forget
}

cmd_signal_publisher() { # STOP|CONT path
  local path="${2:-}"
  [[ -n "$path" ]] || die "usage: pause-publisher|resume-publisher <path>"
  valid_path "$path"
  local pid; pid="$(pub_pid "$path")"
  [[ -n "$pid" ]] || die "no running publisher for '$path'"
  kill "-$1" "$pid"
}

# ------------------------------------------------------------------------ main --

cmd="${1:-}"
(($#)) && shift
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  kill) cmd_kill "$@" ;;
  status) cmd_status "$@" ;;
  build) cmd_build ;;
  logs) cmd_logs "$@" ;;
  publish) cmd_publish "$@" ;;
  unpublish) cmd_unpublish "$@" ;;
  pause-publisher) cmd_signal_publisher STOP "$@" ;;
  resume-publisher) cmd_signal_publisher CONT "$@" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
