#!/usr/bin/env bash
# A job array of N held jobs submitted to Tiresias and to Slurm on this
# machine, side by side (issue 28): `tiresias submit --array 1-N --hold`
# against a master (secure, its default: TLS and a token) and `sbatch
# --array=1-N --hold` against a slurmctld, each with one node and its
# state on local disk, REPEAT times each, alternating, the wall time of
# the client command. Slurm (Debian's slurm-wlm and munge) is installed if
# missing (root); nothing else on the machine is touched: both run from a
# temporary folder and are stopped at the end.
#
# Usage: bench/array_submit.sh [N=10000] [REPEAT=5]   (as root, after the build)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
repeat=${2:-5}
tiresias=$PWD/build/src/cli/tiresias
[ -x "$tiresias" ] || { echo "build first: bash scripts/test.sh" >&2; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "array_submit: installing slurm-wlm and munge" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends slurm-wlm munge >/dev/null
fi
work=$(mktemp -d /tmp/tiresias-array-bench-XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Slurm: munge with a key of its own, slurmctld and one slurmd in the
# foreground, as root, state under $work.
mkdir -p "$work/munge" "$work/slurm/state" "$work/slurm/spool"
dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 status=none
chmod 700 "$work/munge"; chmod 400 "$work/munge/key"
munged --force --key-file="$work/munge/key" --socket="$work/munge/sock" \
  --pid-file="$work/munge/pid" --log-file="$work/munge/log" \
  --seed-file="$work/munge/seed"
pids+=("$(cat "$work/munge/pid")")
host=$(hostname -s)
cpus=$(nproc)
cat > "$work/slurm/slurm.conf" <<EOF
ClusterName=bench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
StateSaveLocation=$work/slurm/state
SlurmdSpoolDir=$work/slurm/spool
SlurmctldPidFile=$work/slurm/ctld.pid
SlurmdPidFile=$work/slurm/d.pid
SlurmctldPort=46817
SlurmdPort=46818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
MaxArraySize=$((n + 1))
MaxJobCount=$((n * (repeat + 1) + 1000))
ReturnToService=2
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=bench Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" > "$work/slurm/ctld.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$work/slurm/d.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do sinfo >/dev/null 2>&1 && break; sleep 0.1; done
sinfo >/dev/null || { cat "$work/slurm/ctld.log" >&2; exit 1; }

# Tiresias: a secure master (TLS, an admin token), no agents.
"$tiresias" master --state-dir "$work/tiresias" \
  --init-ca "$work/tiresias/tls" --listen 127.0.0.1:0 \
  > "$work/master.out" 2> "$work/master.err" &
pids+=($!)
for _ in $(seq 100); do
  address=$(grep -o 'listening on [0-9.:]*' "$work/master.out" | head -1 |
            awk '{print $3}') || true
  [ -n "${address:-}" ] && [ -f "$work/tiresias/admin-token" ] && break
  sleep 0.1
done
[ -n "${address:-}" ] || { cat "$work/master.out" "$work/master.err" >&2; exit 1; }
export TIRESIAS_MASTER=$address TIRESIAS_CA=$work/tiresias/tls/ca.pem \
  TIRESIAS_TOKEN_FILE=$work/tiresias/admin-token

seconds() {  # wall seconds of "$@", its output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
echo "array of $n held jobs, $repeat runs each, wall seconds of the command"
echo "(one job: tiresias submit of a single held job, for scale)"
printf '%-8s %12s %12s %12s %8s\n' run tiresias sbatch "one job" ratio
for i in $(seq "$repeat"); do
  t=$(seconds "$tiresias" submit --array "1-$n" --hold --gpus 1 -- /bin/true 2>/dev/null)
  s=$(seconds sbatch --array="1-$n" --hold --wrap=true -o /dev/null)
  o=$(seconds "$tiresias" submit --hold --gpus 1 -- /bin/true 2>/dev/null)
  printf '%-8s %12.3f %12.3f %12.3f %8.1f\n' "$i" "$t" "$s" "$o" \
    "$(echo "$t / $s" | bc -l)"
done
