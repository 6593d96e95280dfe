#!/usr/bin/env bash
# `tiresias history` on a master that holds many ended jobs, against a real
# local cluster (`tiresias up`, TLS and a token; no agent work: the jobs are
# submitted held and cancelled).
#
#   bash scripts/history_bench.sh [--build DIR] [--old-jobs N] [--runs R]
#
# Stores --old-jobs jobs (default 20,000) that ended (cancelled) before the
# window, then 10 that ended in it, and times, interleaved, R runs (default
# 5) each of:
#   history  `tiresias history --since T --state cancelled`: the master
#            selects the window (ListJobs ended_since/ended_before) and
#            sends 10 jobs;
#   all      `tiresias jobs --state cancelled`: every cancelled job, page by
#            page; what `history` asked the master for before it sent the
#            window (it then filtered the window itself).
# Prints the median wall time of each and their ratio.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
old_jobs=20000
runs=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --old-jobs) old_jobs="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "history_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tiresias="$build/src/cli/tiresias"
[[ -x "$tiresias" ]] || { echo "history_bench.sh: no $tiresias (build first)" >&2; exit 1; }
work="$(mktemp -d /tmp/tiresias-history-bench.XXXXXX)"
export TIRESIAS_CONTROL_PERSIST=0
up_pid=""
cleanup() {
  if [[ -n "$up_pid" ]]; then kill -INT "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

root_flag=()
[[ "$(id -u)" == 0 ]] && root_flag=(--allow-root-tasks)
(cd "$work" && exec "$tiresias" up --agents 1 --gpus 8 --listen 127.0.0.1:0 \
    --state-dir "$work/up" "${root_flag[@]}" >"$work/up.log" 2>&1) &
up_pid=$!
for _ in $(seq 300); do
  grep -q "registered as node" "$work/up.log" 2>/dev/null && break
  sleep 0.1
done
eval "$(grep -E '^  export ' "$work/up.log" | sed 's/^  //')"
[[ -n "${TIRESIAS_MASTER:-}" ]] || { cat "$work/up.log" >&2; exit 1; }

held_jobs() {  # $1 jobs, name prefix $2
  python3 -c "
for i in range($1):
    print('{\"gpus\": 1, \"command\": [\"true\"], \"name\": \"$2%d\", \"hold\": true}' % i)
" > "$work/jobs.jsonl"
  "$tiresias" submit --file "$work/jobs.jsonl" > /dev/null
  "$tiresias" cancel --state pending > /dev/null
}
echo "history bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $old_jobs jobs ended before the window"
held_jobs "$old_jobs" old
sleep 1.1
since=$(date +%s)
sleep 1.1
held_jobs 10 new

ms() {  # wall milliseconds of "$@", output checked by the caller
  local start end
  start=$(date +%s%N)
  "$@" > "$work/out.txt"
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}
history_ms=() all_ms=()
for _ in $(seq "$runs"); do
  history_ms+=("$(ms "$tiresias" history --since "$since" --state cancelled)")
  rows=$(( $(wc -l < "$work/out.txt") - 1 ))
  [[ "$rows" == 10 ]] || { echo "history_bench.sh: history listed $rows jobs, expected 10" >&2; exit 1; }
  all_ms+=("$(ms "$tiresias" jobs --state cancelled)")
done
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
h=$(median "${history_ms[@]}")
a=$(median "${all_ms[@]}")
echo "history (window on the master): ${h} ms median of $runs (${history_ms[*]})"
echo "jobs --state cancelled (every ended job, the old history's reads): ${a} ms median of $runs (${all_ms[*]})"
python3 -c "print(f'ratio: {$a / max($h, 1):.1f}x')"
