#!/usr/bin/env bash
# Single-node Apache Kafka broker (KRaft combined mode) for tests. No Docker needed:
# the broker jars come from Maven Central via `mvn` and are cached.
#
# Usage: scripts/kafka-broker.sh <command> [options]
#   start [--fresh]   prepare classpath if needed, start the broker in the background
#                     (its own session/process group), wait until it answers, then
#                     print KAFKA_BROKERS=127.0.0.1:<port>. Reuses a data dir kept by
#                     `stop --keep` / `kill` unless --fresh. No-op if already running.
#   stop [--keep]     SIGTERM the broker's process group, wait up to 30 s, then SIGKILL;
#                     removes the data dir unless --keep.
#   kill              SIGKILL the broker's process group, keep the data dir (fault tests);
#                     `start` afterwards resumes on the same data.
#   status            print running/stopped (exit 0 running, 3 not running).
#   prepare           only resolve + cache the classpath (for CI warm-up).
#   brokers           print KAFKA_BROKERS=... (no check).
#   logs [N]          tail the last N (default 50) lines of the broker log.
#
# Environment:
#   KAFKA_VERSION          Kafka release on Maven Central (default 3.9.1; 4.x works too)
#   KAFKA_PORT             client (PLAINTEXT) port on 127.0.0.1 (default 19092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port (default KAFKA_PORT+1)
#   ARGUS_KAFKA_HOME       classpath cache (default ~/.cache/argus/kafka-$KAFKA_VERSION)
#   ARGUS_KAFKA_STATE      state dir: pid, log, config, data (default /tmp/argus-kafka-$KAFKA_PORT)
#   ARGUS_KAFKA_M2         Maven local repo (default: Maven's own, ~/.m2/repository)
#   KAFKA_START_TIMEOUT    seconds to wait for readiness (default 120)
#   KAFKA_HEAP_OPTS        default "-Xms128m -Xmx512m"
#   KAFKA_JVM_OPTS         extra JVM options appended to the defaults
#   KAFKA_EXTRA_CONFIG     extra server.properties lines (newline separated), appended last
#   JAVA_HOME / MVN        java and maven to use (default: from PATH)
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-3.9.1}"
KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
ARGUS_KAFKA_HOME="${ARGUS_KAFKA_HOME:-${HOME:-/tmp}/.cache/argus/kafka-$KAFKA_VERSION}"
ARGUS_KAFKA_STATE="${ARGUS_KAFKA_STATE:-/tmp/argus-kafka-$KAFKA_PORT}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}"
MVN="${MVN:-mvn}"
if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=java; fi

HOST=127.0.0.1
BROKERS="$HOST:$KAFKA_PORT"
LIBS="$ARGUS_KAFKA_HOME/libs"
PIDFILE="$ARGUS_KAFKA_STATE/kafka.pid"
LOGFILE="$ARGUS_KAFKA_STATE/server.log"
CONF="$ARGUS_KAFKA_STATE/server.properties"
DATA="$ARGUS_KAFKA_STATE/data"

die() { echo "kafka-broker: $*" >&2; exit 1; }
info() { echo "kafka-broker: $*" >&2; }

kafka_major() { echo "${KAFKA_VERSION%%.*}"; }

# ---------------------------------------------------------------- classpath --

write_pom() {
  local logging_deps
  if (( $(kafka_major) >= 4 )); then
    # Kafka 4.x logs through log4j2
    logging_deps='
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>'
  else
    # Kafka 3.x ships reload4j (log4j 1.x API) behind slf4j 1.7
    logging_deps='
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>'
  fi
  cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>argus.test</groupId>
  <artifactId>kafka-broker-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
      <exclusions>
        <!-- zookeeper (3.x) drags logback in; exactly one slf4j binding is added below -->
        <exclusion><groupId>ch.qos.logback</groupId><artifactId>*</artifactId></exclusion>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
      </exclusions>
    </dependency>$logging_deps
  </dependencies>
</project>
EOF
}

prepare() {
  [[ -f "$ARGUS_KAFKA_HOME/.complete" ]] && return 0
  command -v "$MVN" >/dev/null 2>&1 || die "maven ('$MVN') not found; needed once to fetch Kafka $KAFKA_VERSION"
  mkdir -p "$ARGUS_KAFKA_HOME"
  # serialise concurrent preparations of the same cache
  exec 8>"$ARGUS_KAFKA_HOME/.lock"
  flock 8
  if [[ ! -f "$ARGUS_KAFKA_HOME/.complete" ]]; then
    info "fetching Kafka $KAFKA_VERSION from Maven Central into $ARGUS_KAFKA_HOME ..."
    local tmp; tmp="$(mktemp -d "$ARGUS_KAFKA_HOME/.prep.XXXXXX")"
    write_pom "$tmp/pom.xml"
    local repo_opt=()
    [[ -n "${ARGUS_KAFKA_M2:-}" ]] && repo_opt=("-Dmaven.repo.local=$ARGUS_KAFKA_M2")
    if ! "$MVN" -B -q -Dstyle.color=never ${repo_opt[@]+"${repo_opt[@]}"} -f "$tmp/pom.xml" \
        org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
      sed 's/\x1b\[[0-9;]*m//g' "$tmp/mvn.log" | grep -v '^\[ERROR\] *$' | tail -n 40 >&2
      rm -rf "$tmp"
      flock -u 8; exec 8>&-
      # leave no half-made cache dir behind
      local left=(); shopt -s nullglob dotglob; left=("$ARGUS_KAFKA_HOME"/*); shopt -u nullglob dotglob
      if ((${#left[@]} == 1)) && [[ "${left[0]##*/}" == .lock ]]; then rm -rf "$ARGUS_KAFKA_HOME"; fi
      die "maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION"
    fi
    ls "$tmp/libs"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "no kafka_2.13 jar resolved"; }
    rm -rf "$LIBS"
    mv "$tmp/libs" "$LIBS"
    mv "$tmp/pom.xml" "$ARGUS_KAFKA_HOME/pom.xml"
    rm -rf "$tmp"
    write_log_configs
    echo "$KAFKA_VERSION" >"$ARGUS_KAFKA_HOME/.complete"
  fi
  flock -u 8
  exec 8>&-
}

write_log_configs() {
  # log4j 1.x (Kafka 3.x)
  cat >"$ARGUS_KAFKA_HOME/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.kafka.log=WARN
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.apache.kafka.common.utils.AppInfoParser=WARN
EOF
  # log4j2 (Kafka 4.x)
  cat >"$ARGUS_KAFKA_HOME/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.req.name = kafka.request.logger
logger.req.level = warn
logger.sc.name = state.change.logger
logger.sc.level = warn
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = warn
logger.storlog.name = org.apache.kafka.storage.internals.log
logger.storlog.level = warn
logger.klog.name = kafka.log
logger.klog.level = warn
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = warn
EOF
}

# ------------------------------------------------------------------ process --

java_cmd() {
  # shellcheck disable=SC2206
  local heap=($KAFKA_HEAP_OPTS) extra=(${KAFKA_JVM_OPTS:-})
  printf '%s\0' "$JAVA" "${heap[@]}" \
    -XX:+UseSerialGC -XX:CICompilerCount=2 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true \
    "-Dlog4j.configuration=file:$ARGUS_KAFKA_HOME/log4j.properties" \
    "-Dlog4j2.configurationFile=$ARGUS_KAFKA_HOME/log4j2.properties" \
    "-Dargus.kafka.state=$ARGUS_KAFKA_STATE" \
    ${extra[@]+"${extra[@]}"} -cp "$LIBS/*"
}

# pid of our broker if it is alive (and really is our broker), else empty
running_pid() {
  [[ -f "$PIDFILE" ]] || return 0
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  local stat; stat="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ "$stat" == Z ]] && return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-Dargus.kafka.state=$ARGUS_KAFKA_STATE " || return 0
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# Send a Kafka ApiVersions v0 request and check the response has the correlation
# id we sent and error_code 0 -- i.e. the broker answers the Kafka protocol.
api_versions_ok() {
  local out bytes
  # shellcheck disable=SC2016
  out="$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    # size=10 | api_key=18 | api_version=0 | correlation_id=4242 | client_id=null
    printf "\000\000\000\012\000\022\000\000\000\000\020\222\377\377" >&3
    head -c 10 <&3 | od -An -tx1' "$HOST" "$KAFKA_PORT" 2>/dev/null)" || return 1
  read -r -a bytes <<<"${out//$'\n'/ }"
  out="${bytes[*]}"
  [[ "$out" =~ ^[0-9a-f]{2}\ [0-9a-f]{2}\ [0-9a-f]{2}\ [0-9a-f]{2}\ 00\ 00\ 10\ 92\ 00\ 00$ ]]
}

broker_started_logged() {
  grep -qE 'Kafka Server started|started \(kafka\.server\.KafkaRaftServer\)' "$LOGFILE" 2>/dev/null
}

random_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* && ${#id} -eq 22 ]] && { echo "$id"; return; }
  done
}

write_server_properties() {
  cat >"$CONF" <<EOF
# generated by scripts/kafka-broker.sh (Kafka $KAFKA_VERSION)
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
auto.create.topics.enable=true
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
# after a SIGKILL the old registration blocks re-registration until the session times
# out (default 9 s); keep it short so that kill + start resumes quickly
broker.session.timeout.ms=3000
broker.heartbeat.interval.ms=500
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
num.replica.fetchers=1
log.cleaner.threads=1
log.cleaner.dedupe.buffer.size=8388608
log.segment.bytes=67108864
log.retention.hours=24
EOF
  if [[ -n "${KAFKA_EXTRA_CONFIG:-}" ]]; then printf '%s\n' "$KAFKA_EXTRA_CONFIG" >>"$CONF"; fi
}

fail_start() {
  info "$1"
  if [[ -f "$LOGFILE" ]]; then
    echo "----- last 40 lines of $LOGFILE -----" >&2
    tail -n 40 "$LOGFILE" >&2
  fi
  local pid; pid="$(running_pid)"
  [[ -n "$pid" ]] && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; }
  rm -f "$PIDFILE"
  exit 1
}

cmd_start() {
  local fresh=0
  for a in "$@"; do case "$a" in --fresh) fresh=1 ;; *) die "start: unknown option $a" ;; esac; done

  local pid; pid="$(running_pid)"
  if [[ -n "$pid" ]]; then
    if api_versions_ok; then echo "KAFKA_BROKERS=$BROKERS"; return 0; fi
    info "broker pid $pid is up but not answering yet; waiting"
  else
    command -v "$JAVA" >/dev/null 2>&1 || die "java not found (need Java 17+)"
    prepare
    port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is already in use by another process"
    port_open "$KAFKA_CONTROLLER_PORT" && die "controller port $KAFKA_CONTROLLER_PORT is already in use"
    mkdir -p "$ARGUS_KAFKA_STATE"

    # a data dir kept by `stop --keep`/`kill` is reused unless it belongs to another version
    if [[ -d "$DATA" ]] && { ((fresh)) || [[ "$(cat "$ARGUS_KAFKA_STATE/version" 2>/dev/null)" != "$KAFKA_VERSION" ]] ||
                             [[ ! -f "$DATA/meta.properties" ]]; }; then
      rm -rf "$DATA"
    fi
    write_server_properties
    local -a java; mapfile -d '' java < <(java_cmd)
    if [[ ! -d "$DATA" ]]; then
      mkdir -p "$DATA"
      local cid; cid="$(random_cluster_id)"
      if ! "${java[@]}" kafka.tools.StorageTool format -t "$cid" -c "$CONF" \
            >"$ARGUS_KAFKA_STATE/format.log" 2>&1; then
        cat "$ARGUS_KAFKA_STATE/format.log" >&2
        rm -rf "$DATA"
        die "kafka-storage format failed"
      fi
      echo "$cid" >"$ARGUS_KAFKA_STATE/cluster.id"
    fi
    echo "$KAFKA_VERSION" >"$ARGUS_KAFKA_STATE/version"
    [[ -f "$LOGFILE" ]] && mv -f "$LOGFILE" "$LOGFILE.1"

    # own session + process group; the inner shell writes its pid and execs java, so the
    # pid file holds the JVM pid (== process-group id) whether or not setsid forks.
    # shellcheck disable=SC2016
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "${java[@]}" kafka.Kafka "$CONF" \
      </dev/null >"$LOGFILE" 2>&1 9>&- &
    disown $! 2>/dev/null || true
    # the pid file comes from a shell that has just been forked: seconds on a loaded machine
    local until=$((SECONDS + 30))
    while [[ ! -s "$PIDFILE" ]] && ((SECONDS < until)); do sleep 0.1; done
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ -n "$pid" ]] || fail_start "broker process did not start"
  fi

  # ready = the client listener answers a Kafka ApiVersions request, and the server logged
  # "Kafka Server started" (or, should a future release reword that line, it has kept
  # answering for ~5 s: KRaft only opens the client listener at the end of start-up)
  local deadline=$((SECONDS + KAFKA_START_TIMEOUT)) answered=0
  while ((SECONDS < deadline)); do
    [[ -n "$(running_pid)" ]] || fail_start "broker exited during start-up"
    if grep -qE 'Exiting Kafka due to fatal|Fatal error during' "$LOGFILE" 2>/dev/null; then
      fail_start "broker reported a fatal error during start-up"
    fi
    if port_open "$KAFKA_PORT" && api_versions_ok; then answered=$((answered + 1)); else answered=0; fi
    if ((answered > 0)) && { broker_started_logged || ((answered >= 20)); }; then
      echo "$BROKERS" >"$ARGUS_KAFKA_STATE/brokers"
      echo "KAFKA_BROKERS=$BROKERS"
      return 0
    fi
    sleep 0.25
  done
  fail_start "broker not ready after ${KAFKA_START_TIMEOUT}s"
}

signal_group() { kill "-$1" -- "-$2" 2>/dev/null || kill "-$1" "$2" 2>/dev/null || true; }

# dead = reaped, or a zombie whose threads have all exited (a zombie thread-group leader
# can still have live threads holding the sockets)
is_dead() {
  kill -0 "$1" 2>/dev/null || return 0
  [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" == Z ]] || return 1
  local tasks=(); shopt -s nullglob; tasks=("/proc/$1/task"/*); shopt -u nullglob
  ((${#tasks[@]} <= 1))
}

wait_gone() { # pid timeout_s
  local end=$((SECONDS + $2))
  until is_dead "$1"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
  # and the listeners are really closed
  while { port_open "$KAFKA_PORT" || port_open "$KAFKA_CONTROLLER_PORT"; } && ((SECONDS < end)); do sleep 0.1; done
  return 0
}

cmd_stop() {
  local keep=0
  for a in "$@"; do case "$a" in --keep) keep=1 ;; *) die "stop: unknown option $a" ;; esac; done
  local pid; pid="$(running_pid)"
  if [[ -n "$pid" ]]; then
    signal_group TERM "$pid"
    if ! wait_gone "$pid" 30; then
      info "broker did not stop within 30s; sending SIGKILL"
      signal_group KILL "$pid"
      wait_gone "$pid" 10 || die "could not kill broker pid $pid"
    fi
  fi
  rm -f "$PIDFILE" "$ARGUS_KAFKA_STATE/brokers"
  if ((keep == 0)) && [[ -d "$ARGUS_KAFKA_STATE" ]]; then
    rm -rf "$DATA" "$ARGUS_KAFKA_STATE/cluster.id"
  fi
  return 0
}

cmd_kill() {
  local pid; pid="$(running_pid)"
  [[ -n "$pid" ]] || { info "not running"; return 0; }
  signal_group KILL "$pid"
  wait_gone "$pid" 10 || die "could not kill broker pid $pid"
  rm -f "$PIDFILE" "$ARGUS_KAFKA_STATE/brokers"
}

cmd_status() {
  local pid; pid="$(running_pid)"
  if [[ -n "$pid" ]]; then
    if api_versions_ok; then
      echo "running pid=$pid kafka=$(cat "$ARGUS_KAFKA_STATE/version" 2>/dev/null) KAFKA_BROKERS=$BROKERS"
    else
      echo "starting pid=$pid (not answering on $BROKERS yet)"
    fi
    return 0
  fi
  if [[ -f "$DATA/meta.properties" ]]; then echo "stopped (data kept in $DATA)"; else echo "stopped"; fi
  return 3
}

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

# serialise start/stop/kill on one state dir (fd 9 is closed for the broker process)
lock_state() {
  mkdir -p "$ARGUS_KAFKA_STATE"
  exec 9>"$ARGUS_KAFKA_STATE/.lock"
  flock -w 300 9 || die "could not lock $ARGUS_KAFKA_STATE"
}

case "${1:-}" in
  start) shift; lock_state; cmd_start "$@" ;;
  stop) shift; [[ -d "$ARGUS_KAFKA_STATE" ]] && lock_state; cmd_stop "$@" ;;
  kill) shift; [[ -d "$ARGUS_KAFKA_STATE" ]] && lock_state; cmd_kill ;;
  status) cmd_status ;;
  prepare) prepare ;;
  brokers) echo "KAFKA_BROKERS=$BROKERS" ;;
  logs) tail -n "${2:-50}" "$LOGFILE" ;;
  -h | --help | help) usage ;;
  *) usage >&2; exit 2 ;;
esac
