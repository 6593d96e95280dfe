#!/usr/bin/python3
"""End to end, CPU-only jobs (`submit --gpus 0 --cpus N --mem SIZE`): a
secure `tiresias up` (TLS, tokens, one agent of 2 emulated GPUs, node-0,
keeping no spare CPUs) and a second agent started as an operator would,
`tiresias agent --gpus 1 --spare-cpus 1 --spare-mem 256M` (node-cpu), both
as root running jobs as their owners; the real CLI as a throwaway Unix
user with its own token. Judged from what each job wrote about itself:

- a CPU-only job ran on node-cpu (the only node keeping spare CPUs) as
  its owner, with no GPU (CUDA_VISIBLE_DEVICES empty), bound to the
  agent's last CPU (its spare one), and, with cgroups, the node's GPU
  device (a char device 195:0 made with mknod) refused with EPERM;
- it started while a GPU job held node-cpu's only GPU (neither waits for
  the other);
- a second CPU-only job waits while the first holds the spare CPU, with
  a reason naming spare CPUs, and starts after it ended; one asking more
  spare CPUs than any node keeps waits saying so;
- one that allocates past its --mem is killed and reported out of
  memory;
- `submit --gpus 0` without --cpus is refused before anything is sent;
  `tiresias nodes` shows the spare CPUs, `job` the job's CPUs.

Needs root: exit 77 (skipped) otherwise.
Usage: cpu_only_test.py TIRESIAS_BINARY
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (cli, fail,  # noqa: E402
                           run_as_throwaway_user, secure_up_and_agent,
                           start_operator_agent, user_session, wait_up)

# Where it ran, as whom, on which CPUs, with which GPUs; and what opening
# the fake GPU device gave.
PROBE = r'''
out="$PWD/ran-$1"
{
  echo "node $TIRESIAS_NODE_NAME"
  echo "uid $(id -u)"
  echo "cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2)"
  echo "cuda [${CUDA_VISIBLE_DEVICES-unset}]"
  if [ -n "$2" ]; then
    echo "gpu $(/usr/bin/python3 -c 'import os,sys
try:
    os.open(sys.argv[1], os.O_RDONLY)
    print("opened")
except OSError as e:
    print(e.strerror.replace(" ", "_"))' "$2")"
  fi
} > "$out.tmp"
mv "$out.tmp" "$out"
sleep "${3:-0}"
'''


def main():
    run_as_throwaway_user(run, "tiresias-cpu")


def run(binary, workdir, user):
    with secure_up_and_agent(binary, workdir, "node-cpu",
                             ["--gpus", "1", "--spare-cpus", "1",
                              "--spare-mem", "256M"]) as (base, admin):
        env = check(binary, admin, workdir, user)
        check_node_without_gpus(binary, base, admin, env, workdir)
    print("CPU-only jobs: ran on the spare CPU as their owner without a "
          "GPU, beside a GPU job, one at a time, each reason naming spare "
          "CPUs")


def read_probe(path, timeout_s=30, job=None):
    """What the probe wrote at `path`; fails with `job`'s state and
    reason (job: (binary, env, id)) if it never did."""
    deadline = time.time() + timeout_s
    while not os.path.exists(path):
        if time.time() > deadline:
            shown = ""
            if job is not None:
                binary, env, job_id = job
                shown = cli(binary, env, "job", job_id).stdout + \
                    cli(binary, env, "logs", job_id).stdout
            fail("%s never appeared\n%s" % (path, shown))
        time.sleep(0.1)
    with open(path) as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines())


def check(binary, admin, workdir, user):
    nodes = wait_up(binary, admin, workdir, ["node-0", "node-cpu"])
    spare = nodes["node-cpu"]
    if spare["spare_cpus"] != 1 or spare["spare_cpus_free"] != 1 or \
            spare["spare_memory_mib"] != 256 or \
            nodes["node-0"]["spare_cpus"] != 0:
        fail("nodes --json: %s" % nodes)
    table = cli(binary, admin, "nodes").stdout
    if "SPARE" not in table or " 1/1 " not in table:
        fail("nodes shows no spare CPUs:\n%s" % table)
    last_cpu = str(max(os.sched_getaffinity(0)))

    env, uid, home = user_session(binary, admin, workdir, user)
    cgroups = os.path.isdir("/sys/fs/cgroup/devices/tiresias")
    gpu_dev = ""
    if cgroups:
        gpu_dev = os.path.join(workdir, "nvidia0")
        os.mknod(gpu_dev, 0o20666, os.makedev(195, 0))
        os.chmod(gpu_dev, 0o666)

    before = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
    bad = cli(binary, env, "submit", "--gpus", "0", "--", "/bin/true")
    if bad.returncode == 0 or "--cpus: required" not in bad.stderr:
        fail("--gpus 0 without --cpus: %d %s" % (bad.returncode, bad.stderr))
    after = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
    if len(after) != len(before):
        fail("a refused submit made a job")

    # node-cpu's GPU held by a GPU job: the CPU-only job runs beside it.
    gpu_job = cli(binary, env, "submit", "--gpus", "1", "--nodelist",
                  "node-cpu", "--chdir", home, "--", "/bin/sh", "-c", PROBE,
                  "probe", "gpu", "", "60").stdout.split()[0]
    read_probe(os.path.join(home, "ran-gpu"), job=(binary, env, gpu_job))

    first = cli(binary, env, "submit", "--gpus", "0", "--cpus", "1", "--mem",
                "128M", "--chdir", home, "--", "/bin/sh", "-c", PROBE,
                "probe", "first", gpu_dev, "5")
    if first.returncode != 0:
        fail("submit --gpus 0 --cpus 1: %s" % first.stderr)
    first = first.stdout.split()[0]
    got = read_probe(os.path.join(home, "ran-first"),
                     job=(binary, env, first))
    if got["node"] != "node-cpu" or int(got["uid"]) != uid or \
            got["cuda"] != "[]" or got["cpus"] != last_cpu:
        fail("the CPU-only job: %s (want node-cpu, uid %d, no GPU, CPU %s)"
             % (got, uid, last_cpu))
    if cgroups and got.get("gpu") != "Operation_not_permitted":
        fail("the CPU-only job opened the node's GPU: %s" % got.get("gpu"))
    info = json.loads(cli(binary, env, "job", gpu_job, "--json").stdout)
    if info["state"] != "running":
        fail("the GPU job beside it is %s" % info["state"])
    shown = cli(binary, env, "job", first).stdout
    if "CPU-only job" not in shown:
        fail("job %s does not show its CPUs:\n%s" % (first, shown))

    second = cli(binary, env, "submit", "--gpus", "0", "--cpus", "1",
                 "--chdir", home, "--", "/bin/sh", "-c", PROBE, "probe",
                 "second").stdout.split()[0]
    time.sleep(1)
    info = json.loads(cli(binary, env, "job", second, "--json").stdout)
    reason = info.get("pending_reason") or ""
    if info["state"] != "pending" or "spare CPU" not in reason or \
            info.get("pending_reason_kind") != "resources":
        fail("a second CPU-only job: %s, %r" % (info["state"], reason))
    rows = [line.split() for line in
             cli(binary, env, "jobs", "--all").stdout.splitlines()[1:]]
    row = [r for r in rows if r and r[0] == second]
    if not row or row[0][5] != "cpu" or row[0][6] != "0":
        fail("jobs lists the CPU-only job as %s, want queue cpu, 0 GPUs" %
             row)
    too_big = cli(binary, env, "submit", "--gpus", "0", "--cpus", "2", "--",
                  "/bin/true").stdout.split()[0]
    time.sleep(1)
    reason = json.loads(cli(binary, env, "job", too_big, "--json").stdout) \
        .get("pending_reason") or ""
    if "needs 2 spare CPUs on one node, up nodes keep at most 1" not in reason:
        fail("--cpus 2: %r" % reason)
    cli(binary, env, "cancel", too_big)

    got = read_probe(os.path.join(home, "ran-second"), timeout_s=60,
                     job=(binary, env, second))
    done = json.loads(cli(binary, env, "job", first, "--json").stdout)
    if done["state"] != "finished" or got["node"] != "node-cpu":
        fail("after the first (%s) the second ran on %s" %
             (done["state"], got["node"]))
    cli(binary, env, "cancel", gpu_job)

    if os.path.isdir("/sys/fs/cgroup/memory/tiresias"):
        r = cli(binary, env, "submit", "--gpus", "0", "--cpus", "1", "--mem",
                "64M", "--chdir", home, "--wait", "--", "/usr/bin/python3",
                "-c", "x = 'x' * (256 << 20)", timeout=90)
        job = r.stdout.split()[0]
        info = json.loads(cli(binary, env, "job", job, "--json").stdout)
        details = " ".join(e.get("detail") or ""
                           for e in info.get("events", []))
        if r.returncode == 0 or info["state"] != "failed" or \
                "out of memory" not in details:
            fail("256 MiB under --mem 64M: rc %d, %s, %s" %
                 (r.returncode, info["state"], details))
    return env, home


def check_node_without_gpus(binary, base, admin, user_env, workdir):
    """A third agent without GPUs (`--gpus 0 --spare-cpus 1`): it joins
    with 0 GPUs and its spare CPU, and a CPU-only job sent there runs on it
    as its owner; a GPU job sent there waits saying no node matches."""
    env, home = user_env
    agent = start_operator_agent(binary, workdir, base, admin, "node-nogpu",
                                 ["--gpus", "0", "--spare-cpus", "1"])
    try:
        deadline = time.time() + 20
        node = None
        while time.time() < deadline and node is None:
            listed = json.loads(cli(binary, admin, "nodes", "--json").stdout)
            node = next((n for n in listed["nodes"]
                         if n["name"] == "node-nogpu" and n["state"] == "up"),
                        None)
            time.sleep(0.2)
        if node is None or node["gpus"] != 0 or node["spare_cpus"] != 1:
            fail("node-nogpu: %s" % node)
        r = cli(binary, env, "submit", "--gpus", "0", "--cpus", "1",
                "--nodelist", "node-nogpu", "--chdir", home, "--", "/bin/sh",
                "-c", PROBE, "probe", "nogpu")
        if r.returncode != 0:
            fail("submit to node-nogpu: %s" % r.stderr)
        got = read_probe(os.path.join(home, "ran-nogpu"),
                         job=(binary, env, r.stdout.split()[0]))
        if got["node"] != "node-nogpu" or got["cuda"] != "[]":
            fail("the job for node-nogpu: %s" % got)
        gpu = cli(binary, env, "submit", "--gpus", "1", "--nodelist",
                  "node-nogpu", "--", "/bin/true").stdout.split()[0]
        time.sleep(1)
        reason = json.loads(cli(binary, env, "job", gpu, "--json").stdout) \
            .get("pending_reason") or ""
        if "needs 1 GPU, more than every up node has together (0)" \
                not in reason:
            fail("a GPU job for node-nogpu: %r" % reason)
        cli(binary, env, "cancel", gpu)
    finally:
        agent.terminate()
        agent.wait(timeout=30)


if __name__ == "__main__":
    main()
