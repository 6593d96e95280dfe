#!/usr/bin/env bash
# Durable submissions per second on the embedded SQLite store and on an
# etcd store of three members (master/etcd_store.h), with 1 and 8 clients,
# side by side: submit_bench against each, in one run, 8 clients three
# times over, on etcd without and with the master's submission linger
# (MasterOptions::submit_linger, 1 ms, what `master --store etcd://` uses). The members are
# started here on loopback (data in a temporary folder, removed after), so
# a replica's round trip is a loopback one, not a network's.
#
#   bench/store_compare.sh [BUILD_DIR] [JOBS_1_CLIENT] [JOBS_8_CLIENTS]
set -euo pipefail
build=${1:-build}
jobs1=${2:-1000}
jobs8=${3:-4000}
bench="$build/bench/submit_bench"
[ -x "$bench" ] || { echo "store_compare: $bench: not built" >&2; exit 2; }
command -v etcd >/dev/null || { echo "store_compare: etcd missing: run scripts/setup.sh" >&2; exit 2; }

dir=$(mktemp -d /tmp/tiresias-store-compare-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
clients=() peers=() cluster=""
for i in 0 1 2; do
  clients+=("$(free_port)")
  peers+=("$(free_port)")
  cluster+="${cluster:+,}m$i=http://127.0.0.1:${peers[$i]}"
done
for i in 0 1 2; do
  etcd --name "m$i" --data-dir "$dir/m$i" \
    --listen-client-urls "http://127.0.0.1:${clients[$i]}" \
    --advertise-client-urls "http://127.0.0.1:${clients[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${peers[$i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${peers[$i]}" \
    --initial-cluster "$cluster" >"$dir/m$i.log" 2>&1 &
  pids+=("$!")
done
url="etcd://127.0.0.1:${clients[0]},127.0.0.1:${clients[1]},127.0.0.1:${clients[2]}"
for _ in $(seq 100); do
  ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:${clients[0]}" endpoint health \
    >/dev/null 2>&1 && break
  sleep 0.2
done

run() {  # label, then submit_bench's flags
  local label=$1; shift
  local state
  state=$(mktemp -d "$dir/state-XXXXXX")
  printf '%-8s ' "$label"
  "$bench" --state-dir "$state" "$@"
}
run sqlite --jobs "$jobs1" --clients 1
run etcd   --jobs "$jobs1" --clients 1 --store "$url"
for round in 1 2 3; do
  run sqlite --jobs "$jobs8" --clients 8
  run etcd   --jobs "$jobs8" --clients 8 --store "$url" --linger-us 0
  run etcd+1ms --jobs "$jobs8" --clients 8 --store "$url" --linger-us 1000
done
