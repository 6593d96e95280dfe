#!/usr/bin/env bash
# The paper's testbed-vs-simulator check, scaled down to this machine: 480
# Philly jobs (data/philly_day60_480.csv: the first 480 jobs of day 60 that
# need at most 4 GPUs) on a real local cluster of 15 agents x 4 emulated
# GPUs, time-scaled so a policy takes about 8 minutes, under each policy
# given (default tiresias-l and yarn-cs); then the simulation of the same
# trace on 15x4; then `tiresias compare` per policy. Placement is
# consolidate on both sides and the simulator runs without placement
# slowdown or preemption cost: the replayed tasks neither slow down when
# spread nor take time to checkpoint.
#
#   bash scripts/replay_check.sh [OUT] [POLICY...]
#
# OUT (default out/replay-check) gets <policy>/real, <policy>/sim and
# compare.txt. Needs the build (scripts/test.sh) and /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/replay-check}
shift || true
policies=("$@")
[ ${#policies[@]} -gt 0 ] || policies=(tiresias-l yarn-cs)
bin=build/src/cli/tiresias
trace=data/philly_day60_480.csv
scale=${TIRESIAS_REPLAY_SCALE:-0.0008}   # real seconds per trace second
# The queue bound, 3600 GPU-seconds, in real GPU-seconds.
threshold=$(/usr/bin/python3 -c "print(3600 * $scale)")
[ -x "$bin" ] || { echo "replay_check: build first (bash scripts/test.sh)" >&2; exit 2; }
mkdir -p "$out"
: > "$out/compare.txt"
for policy in "${policies[@]}"; do
  dir="$out/$policy"
  rm -rf "$dir"
  mkdir -p "$dir"
  port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  "$bin" up --insecure --agents 15 --gpus 4 --policy "$policy" \
    --placement consolidate --thresholds "$threshold" \
    --listen "127.0.0.1:$port" --state-dir "$dir/state" > "$dir/up.log" 2>&1 &
  up=$!
  trap 'kill $up 2>/dev/null || true' EXIT
  for _ in $(seq 100); do
    grep -q "tiresias up: master on" "$dir/up.log" && break
    sleep 0.1
  done
  started=$(date +%s)
  "$bin" replay --master "127.0.0.1:$port" --trace "$trace" \
    --time-scale "$scale" --max-wait 1200 --out "$dir/real"
  echo "replay_check: $policy took $(( $(date +%s) - started )) s real" >&2
  kill "$up"; wait "$up" 2>/dev/null || true
  trap - EXIT
  "$bin" simulate --trace "$trace" --cluster 15x4 --policy "$policy" \
    --placement consolidate --no-placement-slowdown --no-preemption-cost \
    --thresholds 3600 --out "$dir/sim" > /dev/null
  "$bin" compare "$dir/sim/summary.json" "$dir/real/summary.json" \
    | tee -a "$out/compare.txt"
done
