#!/usr/bin/env bash
# A three-node PostgreSQL 15 cluster on one machine: Patroni on etcd (its v2 API), synchronous replication that
# never falls back to asynchronous, and HAProxy in front. For trying the service on replicated PostgreSQL and for
# the failover drill; docs/OPERATIONS.md ("Replicated PostgreSQL") gives the production layout and the reasons for
# each setting. Debian 12's packages: apt-get install patroni etcd-server etcd-client haproxy.
#
#   deploy/ha/cluster.sh start        a fresh cluster; prints the service's DATABASE_URL
#   deploy/ha/cluster.sh stop         stops every process and removes the directory
#   deploy/ha/cluster.sh status       the members as Patroni sees them
#   deploy/ha/cluster.sh url          the DATABASE_URL (through HAProxy's read-write port)
#   deploy/ha/cluster.sh leader       the name of the primary (n1, n2 or n3)
#   deploy/ha/cluster.sh members      "name role state" per line, from Patroni's REST API
#   deploy/ha/cluster.sh pid NODE patroni|postgres
#   deploy/ha/cluster.sh node stop|start NODE
#   deploy/ha/cluster.sh etcd stop|start
#   deploy/ha/cluster.sh switchover   hands the primary to a synchronous standby
#
# HA_DIR (default /tmp/merchant-gateway-ha) holds everything: data, logs, configurations, passwords.
# HA_PORT_BASE (default 25400) and the ten ports after it: etcd client and peer, three Patroni REST APIs, three
# PostgreSQL servers, HAProxy's read-write and read-only ports. They are written to $HA_DIR/ports at start, and
# every other command reads them from there.
set -euo pipefail

DIR="${HA_DIR:-/tmp/merchant-gateway-ha}"
PG_BIN="${HA_PG_BIN:-/usr/lib/postgresql/15/bin}"
NODES=(n1 n2 n3)
# The run user: PostgreSQL refuses to run as root.
if [ "$(id -u)" = 0 ]; then RUN_AS=postgres; else RUN_AS="$(id -un)"; fi

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

load_ports() {
  [ -f "$DIR/ports" ] || die "no cluster in $DIR (start one first)"
  # shellcheck source=/dev/null
  . "$DIR/ports"
}

node_index() {
  case "$1" in
    n1) echo 0 ;;
    n2) echo 1 ;;
    n3) echo 2 ;;
    *) die "no node $1 (n1, n2 or n3)" ;;
  esac
}
rest_port() { echo $((REST_BASE + $(node_index "$1"))); }
pg_port() { echo $((PG_BASE + $(node_index "$1"))); }

# Runs a command as the run user with an empty environment: an inherited PGPASSWORD would reach PostgreSQL and
# override the replication password file, and strict synchronous mode would then hang every write.
RUN_USER_PREFIX=(env -i HOME="$DIR/run" PATH=/usr/bin:/bin LANG=C.UTF-8)
if [ "$(id -u)" = 0 ]; then
  RUN_USER_PREFIX=(setpriv --reuid="$RUN_AS" --regid="$RUN_AS" --init-groups "${RUN_USER_PREFIX[@]}")
fi
as_run_user() { "${RUN_USER_PREFIX[@]}" "$@"; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$DIR/run/$1.pid" 2>/dev/null || true; }

wait_gone() {
  local pid="$1" deadline=$((SECONDS + ${2:-20}))
  while alive "$pid"; do
    [ $SECONDS -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# --- configuration ----------------------------------------------------------------------------------------------

write_etcd_start() {
  cat >"$DIR/etcd.sh" <<EOF
exec etcd --name e1 --data-dir "$DIR/etcd" --enable-v2=true \\
  --listen-client-urls http://127.0.0.1:$ETCD_PORT --advertise-client-urls http://127.0.0.1:$ETCD_PORT \\
  --listen-peer-urls http://127.0.0.1:$ETCD_PEER_PORT --initial-advertise-peer-urls http://127.0.0.1:$ETCD_PEER_PORT \\
  --initial-cluster e1=http://127.0.0.1:$ETCD_PEER_PORT --initial-cluster-state new \\
  --heartbeat-interval 100 --election-timeout 1000 --log-level warn
EOF
}

write_patroni() {
  local name="$1" rest pg
  rest=$(rest_port "$name")
  pg=$(pg_port "$name")
  cat >"$DIR/$name.yml" <<EOF
scope: merchant-gateway
name: $name
log: {level: WARNING}
restapi: {listen: 127.0.0.1:$rest, connect_address: 127.0.0.1:$rest}
# etcd's v2 API: Patroni 3.0.2's v3 client can hand the leader key back to a hung leader that resumes.
etcd: {hosts: 127.0.0.1:$ETCD_PORT}
bootstrap:
  dcs:
    ttl: 15
    loop_wait: 3
    retry_timeout: 5
    maximum_lag_on_failover: 0
    synchronous_mode: true
    synchronous_mode_strict: true
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        max_connections: 120
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: 'on'
        wal_keep_size: 128MB
        shared_buffers: 64MB
        wal_retrieve_retry_interval: 1s
        synchronous_commit: 'on'
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}, data-checksums, {auth-host: scram-sha-256}]
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $DIR/data/$name
  bin_dir: $PG_BIN
  pgpass: $DIR/run/$name.pgpass
  authentication:
    superuser: {username: postgres, password: '$SUPERUSER_PASSWORD'}
    replication: {username: replicator, password: '$REPLICATION_PASSWORD'}
    rewind: {username: rewinder, password: '$REWIND_PASSWORD'}
  parameters:
    unix_socket_directories: '$DIR/run'
    logging_collector: 'off'
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
watchdog: {mode: 'off'}
tags: {nofailover: false, noloadbalance: false, clonefrom: false, nosync: false}
EOF
}

write_haproxy() {
  local servers_rw="" servers_ro="" name
  for name in "${NODES[@]}"; do
    servers_rw+="  server $name 127.0.0.1:$(pg_port "$name") maxconn 200 check port $(rest_port "$name")"$'\n'
    servers_ro+="  server $name 127.0.0.1:$(pg_port "$name") maxconn 200 check port $(rest_port "$name")"$'\n'
  done
  cat >"$DIR/haproxy.cfg" <<EOF
global
  maxconn 1000
  pidfile $DIR/run/haproxy.pid

defaults
  mode tcp
  log global
  retries 2
  timeout connect 2s
  # Idle pool connections and the LISTEN session stay open; TCP keepalive notices a dead peer.
  timeout client 60m
  timeout server 60m
  timeout check 1s
  option clitcpka
  option srvtcpka

# Writes: only the member whose Patroni answers 200 on /primary. Marked down after two failed checks half a
# second apart; then every session through it is cut, so that no client keeps writing to a demoted node.
listen primary
  bind 127.0.0.1:$RW_PORT
  option httpchk OPTIONS /primary
  http-check expect status 200
  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 1 on-marked-down shutdown-sessions
$servers_rw
# Reads that may lag: exports and dashboard lists, never money or idempotency reads.
listen replicas
  bind 127.0.0.1:$RO_PORT
  balance roundrobin
  option httpchk OPTIONS /replica
  http-check expect status 200
  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 1 on-marked-down shutdown-sessions
$servers_ro
EOF
}

# --- processes --------------------------------------------------------------------------------------------------

start_etcd() {
  setsid bash "$DIR/etcd.sh" >>"$DIR/log/etcd.log" 2>&1 </dev/null &
  echo $! >"$DIR/run/etcd.pid"
  local deadline=$((SECONDS + 20))
  until curl -fsS "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; do
    [ $SECONDS -lt $deadline ] || die "etcd did not become healthy (see $DIR/log/etcd.log)"
    sleep 0.1
  done
}

stop_etcd() {
  local pid
  pid=$(pid_of etcd)
  if alive "$pid"; then
    kill "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/etcd.pid"
}

start_node() {
  local name="$1"
  # Patroni as the run user, in a session of its own (setsid, setpriv and env each exec the next, so $! is
  # Patroni's PID), its log and its PostgreSQL's in log/.
  setsid "${RUN_USER_PREFIX[@]}" patroni "$DIR/$name.yml" >>"$DIR/log/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/run/$name.patroni.pid"
}

postmaster_pid() {
  head -1 "$DIR/data/$1/postmaster.pid" 2>/dev/null || true
}

# Patroni first (it stops its PostgreSQL on SIGTERM), then whatever postmaster outlived it: one whose Patroni was
# SIGKILLed is re-parented to init and keeps running.
# With "immediate" (the whole cluster going away with its data) neither waits for a checkpoint.
stop_node() {
  local name="$1" mode="${2:-fast}" pid pm
  pid=$(pid_of "$name.patroni")
  if alive "$pid"; then
    kill -CONT "$pid" 2>/dev/null || true
    if [ "$mode" = immediate ]; then kill -9 "$pid" 2>/dev/null || true; else kill "$pid" 2>/dev/null || true; fi
    wait_gone "$pid" 30 || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/$name.patroni.pid"
  pm=$(postmaster_pid "$name")
  if alive "$pm"; then
    as_run_user "$PG_BIN/pg_ctl" -D "$DIR/data/$name" stop -m "$mode" -w -t 20 >/dev/null 2>&1 ||
      kill -9 "$pm" 2>/dev/null || true
    wait_gone "$pm" 10 || true
  fi
}

start_haproxy() {
  haproxy -f "$DIR/haproxy.cfg" -D -q
  local deadline=$((SECONDS + 5))
  until alive "$(pid_of haproxy)"; do
    [ $SECONDS -lt $deadline ] || die "HAProxy did not start"
    sleep 0.05
  done
}

stop_haproxy() {
  local pid
  pid=$(pid_of haproxy)
  if alive "$pid"; then
    kill "$pid" 2>/dev/null || true
    wait_gone "$pid" 5 || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/run/haproxy.pid"
}

superuser_psql() {
  PGPASSWORD="$SUPERUSER_PASSWORD" psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$RW_PORT" -U postgres -d postgres "$@"
}

# --- commands ---------------------------------------------------------------------------------------------------

members() {
  load_ports
  curl -fsS --max-time 2 "http://127.0.0.1:$REST_BASE/cluster" 2>/dev/null ||
    curl -fsS --max-time 2 "http://127.0.0.1:$((REST_BASE + 1))/cluster" 2>/dev/null ||
    curl -fsS --max-time 2 "http://127.0.0.1:$((REST_BASE + 2))/cluster"
}

cmd_start() {
  for tool in patroni etcd haproxy psql curl; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install patroni etcd-server etcd-client haproxy"
  done
  [ ! -e "$DIR/ports" ] || die "a cluster is already in $DIR (stop it first)"
  local base="${HA_PORT_BASE:-25400}"
  mkdir -p "$DIR"/{run,log,data,etcd}
  chmod 0755 "$DIR"
  local rand
  rand() { head -c 18 /dev/urandom | base64 | tr -d '/+=' | cut -c1-24; }
  {
    echo "ETCD_PORT=$base"
    echo "ETCD_PEER_PORT=$((base + 1))"
    echo "REST_BASE=$((base + 2))"
    echo "PG_BASE=$((base + 5))"
    echo "RW_PORT=$((base + 8))"
    echo "RO_PORT=$((base + 9))"
    echo "SUPERUSER_PASSWORD=$(rand)"
    echo "REPLICATION_PASSWORD=$(rand)"
    echo "REWIND_PASSWORD=$(rand)"
    echo "GATEWAY_PASSWORD=$(rand)"
  } >"$DIR/ports"
  chmod 0600 "$DIR/ports"
  load_ports
  write_etcd_start
  for name in "${NODES[@]}"; do write_patroni "$name"; done
  write_haproxy
  chown -R "$RUN_AS" "$DIR/run" "$DIR/log" "$DIR/data" "$DIR"/n?.yml
  chmod 0700 "$DIR/data"
  as_run_user test -w "$DIR/data" || die "$RUN_AS cannot write to $DIR/data: give it the directories above it"
  start_etcd
  # The first node bootstraps; the others clone it (pg_basebackup) once it leads.
  start_node n1
  start_haproxy
  local deadline=$((SECONDS + 60))
  until superuser_psql -c 'SELECT 1' >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "no primary after 60 s (see $DIR/log/n1.log)"
    sleep 0.2
  done
  start_node n2
  start_node n3
  # The service's role: it creates its databases (the tests do) and reads pg_stat_replication (readiness).
  superuser_psql <<SQL
CREATE ROLE gateway LOGIN CREATEDB PASSWORD '$GATEWAY_PASSWORD';
GRANT pg_monitor TO gateway;
CREATE DATABASE gateway OWNER gateway;
SQL
  # Ready when both standbys stream and one of them is synchronous: only then does a commit return.
  until [ "$(superuser_psql -Atc "SELECT count(*) FILTER (WHERE state = 'streaming')::text || '/' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication" 2>/dev/null)" = "2/1" ]; do
    [ $SECONDS -lt $deadline ] || die "the standbys did not stream within 60 s (see $DIR/log/)"
    sleep 0.2
  done
  cmd_url
}

cmd_stop() {
  [ -d "$DIR" ] || return 0
  if [ -f "$DIR/ports" ]; then load_ports; fi
  stop_haproxy
  for name in "${NODES[@]}"; do stop_node "$name" immediate & done
  wait
  stop_etcd
  # Anything left that runs from this directory (a postmaster of a node that was never stopped cleanly).
  pkill -9 -f -- "$DIR/" 2>/dev/null || true
  rm -rf "$DIR"
}

cmd_url() {
  load_ports
  echo "postgres://gateway:$GATEWAY_PASSWORD@127.0.0.1:$RW_PORT/gateway"
}

cmd_leader() {
  members | python3 -c 'import json,sys; print(next(m["name"] for m in json.load(sys.stdin)["members"] if m["role"] == "leader"))'
}

cmd_members() {
  members | python3 -c 'import json,sys
for m in json.load(sys.stdin)["members"]: print(m["name"], m["role"], m["state"])'
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status)
    load_ports
    as_run_user patronictl -c "$DIR/n1.yml" list
    ;;
  url) cmd_url ;;
  leader) cmd_leader ;;
  members) cmd_members ;;
  pid)
    load_ports
    case "${3:-}" in
      patroni) pid_of "$2.patroni" ;;
      postgres) postmaster_pid "$2" ;;
      *) die "pid NODE patroni|postgres" ;;
    esac
    ;;
  node)
    load_ports
    node_index "${3:-}" >/dev/null
    case "${2:-}" in
      stop) stop_node "$3" ;;
      start) start_node "$3" ;;
      *) die "node stop|start NODE" ;;
    esac
    ;;
  etcd)
    load_ports
    case "${2:-}" in
      stop) stop_etcd ;;
      start) start_etcd ;;
      *) die "etcd stop|start" ;;
    esac
    ;;
  switchover)
    load_ports
    leader=$(cmd_leader)
    as_run_user patronictl -c "$DIR/n1.yml" switchover --leader "$leader" --force merchant-gateway >/dev/null
    ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
