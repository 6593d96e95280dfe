#!/usr/bin/env bash
# An emulated multi-server Tiresias cluster on one machine: N network
# namespaces ("servers"), each joined to a bridge by a veth pair shaped with
# tc (a NIC of --rate each way, --delay added where the kernel has netem),
# one `tiresias agent --gpus G` per namespace advertising the namespace's
# address, and a `tiresias master` in the root namespace on the bridge's
# address. Traffic between the ranks of a job on two servers crosses two
# shaped links (out of one namespace, into the other); traffic within a
# server stays on that namespace's loopback. Everything stays on this
# machine. Needs root (CAP_NET_ADMIN), iproute2 (`ip`, `tc`), a built
# `tiresias`.
#
#   scripts/testbed.sh up [--servers 2] [--gpus 4] [--rate 1gbit] [--delay 0.1ms]
#                         [--placement P] [--policy P] [--master-args "..."]
#   scripts/testbed.sh env          # export lines for the CLI (TIRESIAS_MASTER)
#   scripts/testbed.sh status       # nodes, links, bytes through each link
#   scripts/testbed.sh exec I -- CMD    # run CMD inside server I's namespace
#   scripts/testbed.sh run [up flags] -- CMD   # up, CMD with the env, down
#   scripts/testbed.sh down         # stop everything, remove the namespaces
#   scripts/testbed.sh check        # can this machine host a testbed? (exit 3 if not)
#
# Common flags: --name NAME (tb; names the namespaces NAME-0.., the bridge
# NAME-br, the links NAME-h0..), --dir DIR (./testbed-NAME: logs, state),
# --subnet A.B.C (10.77.0: the bridge is A.B.C.1, server I is A.B.C.(10+I)),
# --tiresias BIN (build/src/cli/tiresias).
#
# The master runs with --insecure: the testbed lives on private namespaces
# of one machine and its jobs are root's own (agents run with
# --allow-root-tasks). Agents set GLOO_SOCKET_IFNAME (and NCCL's and
# TensorPipe's) to the namespace's interface, tb0, so gloo binds the
# namespace's address and not loopback. `up` is idempotent (an instance
# that is up is left alone); a failed or interrupted `up` removes what it
# made; `down` removes whatever of the instance exists. Exit codes: 0 ok,
# 1 failure, 2 bad usage, 3 this machine cannot host a testbed (not root,
# no ip/tc, no network namespaces).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=testbed.sh
NAME=tb
DIR=
SUBNET=10.77.0
SERVERS=2
GPUS=4
RATE=1gbit
DELAY=0.1ms
PLACEMENT=
POLICY=
MASTER_ARGS=
GRACE=5
TIRESIAS=${TIRESIAS:-$ROOT/build/src/cli/tiresias}
IFNAME=tb0

die() { echo "$PROG: error: $*" >&2; exit 1; }
usage_error() { echo "$PROG: error: $*" >&2; exit 2; }
cannot_host() { echo "$PROG: cannot host a testbed here: $*" >&2; exit 3; }
log() { echo "$PROG: $*" >&2; }

parse_flags() {  # sets the globals; stops at -- (the rest is in REST)
  REST=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --name) NAME=${2:?}; shift 2 ;;
      --dir) DIR=${2:?}; shift 2 ;;
      --subnet) SUBNET=${2:?}; shift 2 ;;
      --servers) SERVERS=${2:?}; shift 2 ;;
      --gpus) GPUS=${2:?}; shift 2 ;;
      --rate) RATE=${2:?}; shift 2 ;;
      --delay) DELAY=${2:?}; shift 2 ;;
      --placement) PLACEMENT=${2:?}; shift 2 ;;
      --policy) POLICY=${2:?}; shift 2 ;;
      --master-args) MASTER_ARGS=${2?}; shift 2 ;;
      --grace) GRACE=${2:?}; shift 2 ;;
      --tiresias) TIRESIAS=${2:?}; shift 2 ;;
      --) shift; REST=("$@"); return ;;
      *) usage_error "unknown flag '$1' (see the top of scripts/testbed.sh)" ;;
    esac
  done
}

validate() {
  [[ $NAME =~ ^[a-z][a-z0-9]{0,9}$ ]] ||
    usage_error "--name '$NAME': expected 1-10 lower-case letters and digits, starting with a letter"
  [[ $SUBNET =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] ||
    usage_error "--subnet '$SUBNET': expected three octets, e.g. 10.77.0"
  [[ $SERVERS =~ ^[1-9][0-9]?$ ]] && [ "$SERVERS" -le 64 ] ||
    usage_error "--servers '$SERVERS': expected an integer 1..64"
  [[ $GPUS =~ ^[1-9][0-9]*$ ]] && [ "$GPUS" -le 1024 ] ||
    usage_error "--gpus '$GPUS': expected an integer 1..1024"
  [[ $RATE =~ ^[0-9]+(\.[0-9]+)?(kbit|mbit|gbit)$ ]] ||
    usage_error "--rate '$RATE': expected a number with kbit, mbit or gbit, e.g. 1gbit"
  [[ $DELAY =~ ^[0-9]+(\.[0-9]+)?(us|ms)$ ]] ||
    usage_error "--delay '$DELAY': expected a number with us or ms, e.g. 0.1ms"
  [[ $GRACE =~ ^[0-9]+$ ]] || usage_error "--grace '$GRACE': expected whole seconds"
  DIR=${DIR:-$PWD/testbed-$NAME}
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
}

# --- prerequisites --------------------------------------------------------------

check_host() {
  [ "$(id -u)" -eq 0 ] || cannot_host "needs root (CAP_NET_ADMIN) for network namespaces and tc"
  command -v ip >/dev/null || cannot_host "no 'ip' command (Debian package iproute2)"
  command -v tc >/dev/null || cannot_host "no 'tc' command (Debian package iproute2)"
  local probe="${NAME}-probe$$"
  ip netns add "$probe" 2>/dev/null ||
    cannot_host "cannot create a network namespace (ip netns add failed)"
  if ! ip link add "${NAME}-pr$$" type veth peer name "$IFNAME" netns "$probe" 2>/dev/null; then
    ip netns del "$probe"
    cannot_host "cannot create a veth pair into a namespace"
  fi
  local ok=1
  tc qdisc add dev "${NAME}-pr$$" root tbf rate 1gbit burst 64kb latency 50ms 2>/dev/null || ok=0
  ip link del "${NAME}-pr$$" 2>/dev/null || true
  ip netns del "$probe"
  [ $ok -eq 1 ] || cannot_host "tc cannot attach a tbf (token bucket) qdisc"
}

have_netem() {  # sch_netem (delay) is a module some kernels lack
  local dev="${NAME}-nt$$" ok=0
  ip link add "$dev" type dummy 2>/dev/null || return 1
  tc qdisc add dev "$dev" root netem delay 1ms 2>/dev/null && ok=1
  ip link del "$dev" 2>/dev/null || true
  [ $ok -eq 1 ]
}

# --- state ------------------------------------------------------------------------

STATE() { echo "$DIR/testbed.env"; }

load_state() {  # 1 if there is no instance recorded in DIR
  [ -f "$(STATE)" ] || return 1
  # shellcheck disable=SC1090
  source "$(STATE)"
}

# A child we just started is running until it exits (a zombie has exited).
# Its command line is no test: between fork and exec, and inside each exec of
# nohup -> setsid -> tiresias -> tiresias-full, it is the script's or empty.
running() {
  local state
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
  state=$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  case "$state" in Z | X | x) return 1 ;; esac
}

# A pid recorded in the state file is ours only while it is running and still
# a tiresias process: a stale state file must not make us signal a reused pid.
alive() {
  running "${1:-}" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q tiresias
}

# --- links ------------------------------------------------------------------------

# tbf's bucket: 4 ms of the rate (at least 32 KiB), so a tick of the kernel
# timer never starves the link; packets wait up to 50 ms before a drop.
shape() {  # shape DEV [netns]: rate (and delay) on DEV's egress
  local dev=$1 ns=${2:-} bits burst
  bits=$(awk -v r="$RATE" 'BEGIN{m=1; if(r~/gbit$/)m=1e9; else if(r~/mbit$/)m=1e6; else m=1e3; sub(/[a-z]+$/,"",r); print r*m}')
  burst=$(awk -v b="$bits" 'BEGIN{x=int(b/8/250); if(x<32768)x=32768; print x}')
  local run=()
  [ -n "$ns" ] && run=(ip netns exec "$ns")
  if [ "$NETEM" = 1 ]; then
    "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "$DELAY" limit 100000
    "${run[@]}" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$RATE" burst "$burst" latency 50ms
  else
    "${run[@]}" tc qdisc add dev "$dev" root tbf rate "$RATE" burst "$burst" latency 50ms
  fi
}

make_network() {
  NETEM=0
  if awk -v d="$DELAY" 'BEGIN{exit !(d+0 > 0)}'; then
    if have_netem; then NETEM=1; else
      log "warning: tc netem is not available in this kernel: links get no added delay, only the $RATE rate"
    fi
  fi
  ip link add "${NAME}-br" type bridge
  ip addr add "${SUBNET}.1/24" dev "${NAME}-br"
  ip link set "${NAME}-br" up
  for ((i = 0; i < SERVERS; i++)); do
    local ns="${NAME}-$i" host="${NAME}-h$i"
    ip netns add "$ns"
    ip link add "$host" type veth peer name "$IFNAME" netns "$ns"
    ip link set "$host" master "${NAME}-br" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "${SUBNET}.$((10 + i))/24" dev "$IFNAME"
    ip netns exec "$ns" ip link set "$IFNAME" up
    ip netns exec "$ns" ip route add default via "${SUBNET}.1"
    shape "$host"              # into the server
    shape "$IFNAME" "$ns"      # out of the server
  done
}

# --- processes ------------------------------------------------------------------

start_master() {
  # Jobs checkpoint in the testbed's folder (per owner and cluster id), not
  # in their owner's home.
  local args=(master --insecure --listen "${SUBNET}.1:0" --state-dir "$DIR/master"
              --checkpoint-base "$DIR/checkpoints")
  [ -n "$POLICY" ] && args+=(--policy "$POLICY")
  [ -n "$PLACEMENT" ] && args+=(--placement "$PLACEMENT")
  # shellcheck disable=SC2206
  [ -n "$MASTER_ARGS" ] && args+=($MASTER_ARGS)
  : >"$DIR/master.out"
  nohup setsid "$TIRESIAS" "${args[@]}" >"$DIR/master.out" 2>"$DIR/master.log" </dev/null &
  MASTER_PID=$!
  local line=""
  for _ in $(seq 100); do
    line=$(grep -m1 "listening on " "$DIR/master.out" || true)
    [ -n "$line" ] && break
    running "$MASTER_PID" || die "tiresias master exited at start: $(tail -n 3 "$DIR/master.log" | tr '\n' ' ')"
    sleep 0.1
  done
  [ -n "$line" ] || die "tiresias master did not say where it listens within 10 s (see $DIR/master.log)"
  MASTER=$(sed -E 's/.*listening on ([^ ]+).*/\1/' <<<"$line")
}

start_agents() {
  AGENT_PIDS=""
  for ((i = 0; i < SERVERS; i++)); do
    local ns="${NAME}-$i"
    nohup setsid ip netns exec "$ns" env -u TIRESIAS_MASTER \
      GLOO_SOCKET_IFNAME="$IFNAME" NCCL_SOCKET_IFNAME="$IFNAME" TP_SOCKET_IFNAME="$IFNAME" \
      "$TIRESIAS" agent --insecure --master "$MASTER" --gpus "$GPUS" --name "$ns" \
      --address "${SUBNET}.$((10 + i))" --state-dir "$DIR/agent-$i" --grace "$GRACE" \
      --allow-root-tasks >"$DIR/agent-$i.log" 2>&1 </dev/null &
    AGENT_PIDS="$AGENT_PIDS $!"
  done
}

wait_nodes_up() {
  local up=0
  for _ in $(seq 150); do
    up=$(TIRESIAS_MASTER=$MASTER "$TIRESIAS" nodes 2>/dev/null | awk 'NR>1 && $2=="up"' | wc -l)
    [ "$up" -ge "$SERVERS" ] && return 0
    for pid in $AGENT_PIDS; do
      running "$pid" || die "an agent exited at start (pid $pid); see $DIR/agent-*.log"
    done
    sleep 0.2
  done
  die "$up of $SERVERS agents registered within 30 s; see $DIR/agent-*.log"
}

write_state() {
  local tmp
  tmp=$(mktemp "$DIR/.testbed.env.XXXXXX")
  cat >"$tmp" <<EOF
NAME=$NAME
SUBNET=$SUBNET
SERVERS=$SERVERS
GPUS=$GPUS
RATE=$RATE
DELAY=$DELAY
NETEM=$NETEM
MASTER=$MASTER
MASTER_PID=$MASTER_PID
AGENT_PIDS="$AGENT_PIDS"
EOF
  mv "$tmp" "$(STATE)"
}

# --- subcommands --------------------------------------------------------------

cmd_up() {
  validate
  if load_state && alive "${MASTER_PID:-}"; then
    log "testbed '$NAME' is already up: master $MASTER, $SERVERS server(s) x $GPUS GPU(s) ($DIR)"
    return 0
  fi
  check_host
  [ -x "$TIRESIAS" ] || die "no tiresias binary at $TIRESIAS (build it, or pass --tiresias BIN)"
  teardown quiet  # leftovers of an instance that died
  MASTER_PID="" AGENT_PIDS=""
  trap 'log "up failed or was interrupted: removing what it made"; teardown quiet' EXIT
  trap 'exit 130' INT TERM
  make_network
  start_master
  start_agents
  wait_nodes_up
  write_state
  trap - EXIT INT TERM
  log "testbed '$NAME' is up: master $MASTER (--insecure), $SERVERS server(s) x $GPUS emulated GPU(s), links $RATE$([ "$NETEM" = 1 ] && echo " + $DELAY")"
  log "  export TIRESIAS_MASTER=$MASTER   (logs and state in $DIR)"
}

# Stops the instance's processes (agents first: they hand their jobs back),
# then whatever still runs in its namespaces, then removes the namespaces,
# links and bridge. Safe to run on a half-made or absent instance.
teardown() {
  local quiet=${1:-}
  load_state || true
  for pid in ${AGENT_PIDS:-}; do alive "$pid" && kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq $((GRACE * 10 + 50))); do
    local any=0
    for pid in ${AGENT_PIDS:-}; do alive "$pid" && any=1; done
    [ $any -eq 0 ] && break
    sleep 0.1
  done
  if alive "${MASTER_PID:-}"; then
    kill -TERM "$MASTER_PID" 2>/dev/null || true
    for _ in $(seq 50); do alive "$MASTER_PID" || break; sleep 0.1; done
    alive "$MASTER_PID" && kill -KILL "$MASTER_PID" 2>/dev/null || true
  fi
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NAME}-[0-9]+$" || true); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  local dev
  for dev in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
               grep -E "^${NAME}-(h[0-9]+|br)$" || true); do
    ip link del "$dev" 2>/dev/null || true
  done
  rm -f "$(STATE)"
  [ -n "$quiet" ] || log "testbed '$NAME' is down (logs kept in $DIR)"
}

cmd_down() {
  validate
  [ "$(id -u)" -eq 0 ] || cannot_host "needs root to remove network namespaces"
  teardown
}

need_up() {
  load_state && alive "${MASTER_PID:-}" || die "testbed '$NAME' is not up (scripts/testbed.sh up --name $NAME --dir $DIR)"
}

cmd_env() {
  validate
  need_up
  echo "export TIRESIAS_MASTER=$MASTER"
}

cmd_status() {
  validate
  need_up
  echo "testbed '$NAME': master $MASTER (pid $MASTER_PID), $SERVERS server(s) x $GPUS GPU(s), links $RATE$([ "$NETEM" = 1 ] && echo " + $DELAY")"
  TIRESIAS_MASTER=$MASTER "$TIRESIAS" nodes || true
  printf '%-10s %-15s %16s %16s\n' LINK ADDRESS "BYTES IN" "BYTES OUT"
  for ((i = 0; i < SERVERS; i++)); do
    local in out
    in=$(tc -s qdisc show dev "${NAME}-h$i" | awk '/Sent/{print $2; exit}')
    out=$(ip netns exec "${NAME}-$i" tc -s qdisc show dev "$IFNAME" | awk '/Sent/{print $2; exit}')
    printf '%-10s %-15s %16s %16s\n' "${NAME}-h$i" "${SUBNET}.$((10 + i))" "$in" "$out"
  done
}

cmd_exec() {
  local i=${REST_I:-}
  validate
  need_up
  [[ $i =~ ^[0-9]+$ ]] && [ "$i" -lt "$SERVERS" ] ||
    usage_error "exec: expected a server index 0..$((SERVERS - 1)), got '$i'"
  [ ${#REST[@]} -gt 0 ] || usage_error "exec: expected a command after --"
  exec ip netns exec "${NAME}-$i" env GLOO_SOCKET_IFNAME="$IFNAME" "${REST[@]}"
}

cmd_run() {
  [ ${#REST[@]} -gt 0 ] || usage_error "run: expected a command after --"
  local cmd=("${REST[@]}")
  cmd_up
  trap 'teardown' EXIT
  trap 'exit 130' INT TERM
  load_state
  local rc=0
  TIRESIAS_MASTER=$MASTER TESTBED_DIR=$DIR "${cmd[@]}" || rc=$?
  exit $rc
}

main() {
  [ $# -gt 0 ] || usage_error "expected a subcommand: up, down, env, status, exec, run, check"
  local sub=$1
  shift
  case "$sub" in
    up) parse_flags "$@"; [ ${#REST[@]} -eq 0 ] || usage_error "up: unexpected '${REST[*]}'"; cmd_up ;;
    down) parse_flags "$@"; cmd_down ;;
    env) parse_flags "$@"; cmd_env ;;
    status) parse_flags "$@"; cmd_status ;;
    exec) REST_I=${1:-}; [ $# -gt 0 ] && shift; parse_flags "$@"; cmd_exec ;;
    run) parse_flags "$@"; cmd_run ;;
    check) parse_flags "$@"; validate; check_host; echo "$PROG: this machine can host a testbed" ;;
    -h|--help|help) sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
    *) usage_error "unknown subcommand '$sub': expected up, down, env, status, exec, run, check" ;;
  esac
}

main "$@"
