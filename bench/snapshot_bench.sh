#!/usr/bin/env bash
# snapshot_bench (bench/snapshot_bench.cc) against one etcd member started
# here on loopback, its data and the copies in a temporary folder (removed
# after).
#
#   bench/snapshot_bench.sh [BUILD_DIR] [JOBS] [JOBS_PER_ENTRY]
set -euo pipefail
build=${1:-build}
jobs=${2:-100000}
batch=${3:-500}
bench="$build/bench/snapshot_bench"
[ -x "$bench" ] || { echo "snapshot_bench: $bench: not built" >&2; exit 2; }
command -v etcd >/dev/null || { echo "snapshot_bench: etcd missing: run scripts/setup.sh" >&2; exit 2; }
dir=$(mktemp -d /tmp/tiresias-snapshot-bench-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
client=$(free_port) peer=$(free_port)
etcd --name m0 --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$client" \
  --advertise-client-urls "http://127.0.0.1:$client" \
  --listen-peer-urls "http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
  --initial-cluster "m0=http://127.0.0.1:$peer" >"$dir/etcd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$client" endpoint health \
    >/dev/null 2>&1 && break
  sleep 0.2
done
mkdir "$dir/copies"
"$bench" --etcd "127.0.0.1:$client" --state-dir "$dir/copies" --jobs "$jobs" --batch "$batch"
