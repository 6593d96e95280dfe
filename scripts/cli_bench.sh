#!/usr/bin/env bash
# The CLI as users feel it, against a real local cluster (`tiresias up`,
# secure by default: TLS and a token; emulated GPUs). No Slurm needed.
#
#   bash scripts/cli_bench.sh [--build DIR] [--baseline OLD_TIRESIAS]
#                             [--jobs N] [--file-jobs N] [--busy-jobs N]
#
# Measures, in this order, and prints one line each:
#   1. `tiresias --version`: mean wall and CPU time of 50 runs;
#   2. CLI submissions/s from a shell loop, one CLI process per job, with 1
#      and 8 clients (--jobs in all, default 400), and the CPU time per
#      `submit`: the client's (all its threads), the control processes'
#      (control_channel.h) and the cluster process's share (master + idle
#      agent), from getrusage and /proc; as users run it (the control
#      channel on) and with TIRESIAS_CONTROL_PERSIST=0 (each command its
#      own connection);
#   3. `submit --file` of --file-jobs jobs (default 10,000): jobs/s;
#   4. GPU busy fraction: --busy-jobs (default 200) back-to-back 1 s jobs on
#      8 emulated GPUs, from the jobs' own clock readings.
# With --baseline, 1 and 2 are measured for that binary too, interleaved in
# the same run (the machine is shared and noisy: compare ratios), against
# the same cluster. Jobs of 2 ask for all 8 GPUs and sleep, so that only
# the first runs: the numbers are the CLI's and the master's, not the
# agent's launching.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
baseline=""
jobs=400
file_jobs=10000
busy_jobs=200
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --baseline) baseline="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --file-jobs) file_jobs="$2"; shift 2 ;;
    --busy-jobs) busy_jobs="$2"; shift 2 ;;
    *) echo "cli_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tiresias="$build/src/cli/tiresias"
[[ -x "$tiresias" ]] || { echo "cli_bench.sh: no $tiresias (build first)" >&2; exit 1; }
work="$(mktemp -d /tmp/tiresias-cli-bench.XXXXXX)"
# This run's control processes live here, apart from the user's own.
export TIRESIAS_CONTROL_DIR="$work/ctl"
mkdir -m 700 "$TIRESIAS_CONTROL_DIR"
up_pid=""
cleanup() {
  if [[ -n "$up_pid" ]]; then kill -INT "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; fi
  pkill -f "__control $work/ctl" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Starts `tiresias up` with 1 agent x 8 GPUs in $work/$1 and exports its
# address and credentials.
start_up() {
  local dir="$work/$1"
  mkdir -p "$dir"
  local root_flag=()
  [[ "$(id -u)" == 0 ]] && root_flag=(--allow-root-tasks)
  (cd "$dir" && exec "$tiresias" up --agents 1 --gpus 8 --grace 1 \
      --listen 127.0.0.1:0 --state-dir "$dir/up" "${root_flag[@]}" \
      >"$dir/up.log" 2>&1) &
  up_pid=$!
  for _ in $(seq 300); do
    grep -q "registered as node" "$dir/up.log" 2>/dev/null && break
    sleep 0.1
  done
  eval "$(grep -E '^  export ' "$dir/up.log" | sed 's/^  //')"
  [[ -n "${TIRESIAS_MASTER:-}" ]] || { cat "$dir/up.log" >&2; exit 1; }
}
stop_up() {
  kill -INT "$up_pid"; wait "$up_pid" 2>/dev/null || true; up_pid=""
}

echo "tiresias CLI bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $tiresias${baseline:+ vs baseline $baseline}"
start_up cluster
# Occupies every GPU, so the jobs submitted below wait.
"$tiresias" submit --gpus 8 --name hog -- sleep 100000 >/dev/null

# The measurements, in Python for getrusage of the children (CPU of every
# thread of each CLI process) and /proc of the cluster process.
python3 - "$tiresias" "$baseline" "$jobs" "$up_pid" <<'EOF'
import os, resource, subprocess, sys, time

new, old, jobs, up_pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tick = os.sysconf("SC_CLK_TCK")

def up_cpu():
    fields = open(f"/proc/{up_pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick

# The control processes (src/cli/control_channel.h) the CLI starts for
# this run's endpoints (TIRESIAS_CONTROL_DIR is this run's own folder): CPU
# by pid, so one started during a loop counts from zero.
control_dir = os.environ["TIRESIAS_CONTROL_DIR"]
def control_cpu():
    total = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if len(cmd) > 2 and cmd[1] == b"__control" and cmd[2].decode().startswith(control_dir):
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                total[pid] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total

def control_delta(before, after):
    return sum(cpu - before.get(pid, 0) for pid, cpu in after.items())

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def version(binary, n=50):
    t0, c0 = time.perf_counter(), children_cpu()
    for _ in range(n):
        subprocess.run([binary, "--version"], stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) / n * 1e3, (children_cpu() - c0) / n * 1e3

def loop(binary, clients, n, env):
    each = n // clients
    script = (f'for i in $(seq {each}); do "{binary}" submit --gpus 8 --name b '
              f'-- sleep 1 >/dev/null || exit 1; done')
    t0, c0, u0, k0 = time.perf_counter(), children_cpu(), up_cpu(), control_cpu()
    procs = [subprocess.Popen(["bash", "-c", script], env=dict(os.environ, **env))
             for _ in range(clients)]
    if any(p.wait() != 0 for p in procs):
        sys.exit("cli_bench: a submission failed")
    wall = time.perf_counter() - t0
    done = each * clients
    return (done / wall, (children_cpu() - c0) / done * 1e3,
            (up_cpu() - u0) / done * 1e3, control_delta(k0, control_cpu()) / done * 1e3)

# new: as users run it (the control channel on, its default); direct: the
# same binary with it off, each command its own TLS connection; baseline:
# another build, with its own defaults.
binaries = [("new", new, {}), ("direct", new, {"TIRESIAS_CONTROL_PERSIST": "0"})]
binaries += [("baseline", old, {})] if old else []
results = {}
for rnd in range(2):  # A B A B: both see the same machine
    for name, b, env in binaries:
        results.setdefault((name, "version"), []).append(version(b))
        results.setdefault((name, 1), []).append(loop(b, 1, jobs // 2, env))
        results.setdefault((name, 8), []).append(loop(b, 8, jobs // 2, env))

def mean(rows, i):
    return sum(r[i] for r in rows) / len(rows)

for name, _, _ in binaries:
    v = results[(name, "version")]
    print(f"{name:8} --version: {mean(v,0):6.2f} ms wall, {mean(v,1):5.2f} ms CPU (mean of {50*len(v)})")
    for c in (1, 8):
        r = results[(name, c)]
        print(f"{name:8} submit loop, {c} client(s): {mean(r,0):6.1f} jobs/s; "
              f"CPU per submit {mean(r,1):5.2f} ms client + {mean(r,3):4.2f} ms control "
              f"+ {mean(r,2):4.2f} ms cluster")
for key, label, i, better in ((1, "jobs/s, 1 client", 0, "higher"),
                              (8, "jobs/s, 8 clients", 0, "higher"),
                              (1, "client CPU per submit", 1, "lower")):
    print(f"ratio new/direct, {label}: "
          f"{mean(results[('new', key)], i) / mean(results[('direct', key)], i):.2f} ({better} is better)")
if old:
    for key, label, i, better in (("version", "--version CPU", 1, "lower"),
                                  (1, "jobs/s, 1 client", 0, "higher"),
                                  (8, "jobs/s, 8 clients", 0, "higher"),
                                  (1, "client CPU per submit", 1, "lower")):
        print(f"ratio new/baseline, {label}: "
              f"{mean(results[('new', key)], i) / mean(results[('baseline', key)], i):.2f} ({better} is better)")
EOF

# 3. One file of many jobs.
python3 -c "
import sys
for i in range($file_jobs):
    print('{\"gpus\": 8, \"command\": [\"sleep\", \"1\"], \"name\": \"f%d\"}' % i)
" > "$work/jobs.jsonl"
start=$(date +%s%N)
"$tiresias" submit --file "$work/jobs.jsonl" > "$work/ids.txt"
end=$(date +%s%N)
echo "submit --file: $(wc -l < "$work/ids.txt") jobs in $(( (end - start) / 1000000 )) ms: $(( file_jobs * 1000000000 / (end - start) )) jobs/s"
stop_up

# 4. Back-to-back 1 s jobs on 8 GPUs, on a fresh cluster.
start_up busy
python3 -c "
for i in range($busy_jobs):
    print('{\"gpus\": 1, \"command\": [\"/bin/sh\", \"-c\", \"date +%%s%%N; sleep 1; date +%%s%%N\"], \"name\": \"b%d\"}' % i)
" > "$work/busy.jsonl"
"$tiresias" submit --file "$work/busy.jsonl" > /dev/null
for _ in $(seq 1200); do
  left=$("$tiresias" jobs --state pending | tail -n +2 | wc -l)
  left=$(( left + $("$tiresias" jobs --state running | tail -n +2 | wc -l) ))
  left=$(( left + $("$tiresias" jobs --state starting | tail -n +2 | wc -l) ))
  [[ "$left" == 0 ]] && break
  sleep 0.5
done
python3 - "$work/busy/up" 8 <<'EOF'
import glob, sys
runs = []
for path in glob.glob(f"{sys.argv[1]}/agent-*/logs/job-*-rank-0.log"):
    stamps = [int(l) for l in open(path) if l.strip().isdigit()]
    if len(stamps) == 2:
        runs.append(stamps)
gpus = int(sys.argv[2])
span = max(e for _, e in runs) - min(s for s, _ in runs)
busy = sum(e - s for s, e in runs)
print(f"GPU busy fraction, {len(runs)} back-to-back 1 s jobs on {gpus} GPUs: "
      f"{busy / (gpus * span):.3f} (span {span / 1e9:.1f} s, ideal {busy / gpus / 1e9:.1f} s)")
EOF
