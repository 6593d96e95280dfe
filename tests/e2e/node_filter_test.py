#!/usr/bin/python3
"""End to end, jobs that may run only on some nodes: a secure `tiresias up`
(TLS, tokens, one agent of 2 emulated GPUs, node-0) and a second agent
started as an operator would, `tiresias agent --tls-dir ... --gpu-model
"NVIDIA A100-SXM4-80GB" --feature ib,nvme --memory 8G` (node-a100), both
as root running jobs as their owners; the real CLI as a throwaway Unix
user with its own token. Judged from what each job wrote about itself
(its node, uid, CPUs and memory limit):

- `--gpu-type a100` and `--constraint 'ib&nvme'` ran on node-a100 alone,
  `--exclude node-a100`, `--nodelist 'node-[0-0]'` and `--mem-per-gpu 6G`
  (more than node-a100's 4G slice per GPU) on node-0;
- `--gpu-type v100` and `--cpus-per-gpu` past every node's slice wait with
  a reason that names what they asked for;
- with cgroups, `--cpus-per-gpu 1 --mem-per-gpu 64M` runs on one CPU under
  a 64 MiB limit, and a job that allocates past it is killed and reported
  out of memory;
- `--exclusive` runs on the node no other job holds a GPU of, a job sent
  to that node starts only after it ended, and a second exclusive job
  waits saying why;
- `tiresias nodes` shows each node's GPU model, features, CPUs and memory;
- a constraint the CLI cannot read is refused before anything is sent.

Needs root: exit 77 (skipped) otherwise.
Usage: node_filter_test.py TIRESIAS_BINARY
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (cli, fail,  # noqa: E402
                           run_as_throwaway_user, secure_up_and_agent,
                           user_session, wait_up)

# Each job records where it ran and as whom.
PROBE = 'echo "$TIRESIAS_NODE_NAME $(id -u)" > "$PWD/ran-$1"'


def main():
    run_as_throwaway_user(run, "tiresias-nodef")


def run(binary, workdir, user):
    with secure_up_and_agent(binary, workdir, "node-a100",
                             ["--gpus", "2", "--gpu-model",
                              "NVIDIA A100-SXM4-80GB", "--feature", "ib,nvme",
                              "--memory", "8G"]) as (_, admin):
        check(binary, admin, workdir, user)
    print("node filters: jobs ran only on the nodes they named, one waits "
          "naming its GPU type")


def check(binary, admin, workdir, user):
    nodes = wait_up(binary, admin, workdir, ["node-0", "node-a100"])
    a100 = nodes["node-a100"]
    if a100["gpu_model"] != "NVIDIA A100-SXM4-80GB" or \
            a100["features"] != ["ib", "nvme"] or \
            a100["memory_mib"] != 8192 or \
            nodes["node-0"]["gpu_model"] != "Emulated GPU" or \
            nodes["node-0"]["memory_mib"] < 2 * 6144 or \
            min(n["cpus"] for n in nodes.values()) < 1:
        fail("nodes --json: %s" % nodes)
    most_cpus = max(n["cpus"] // n["gpus"] for n in nodes.values())
    table = cli(binary, admin, "nodes").stdout
    if "NVIDIA A100-SXM4-80GB" not in table or "ib,nvme" not in table:
        fail("nodes shows no model or features:\n%s" % table)

    env, uid, home = user_session(binary, admin, workdir, user)

    want = {"type": (["--gpu-type", "a100"], "node-a100"),
            "features": (["--constraint", "ib&nvme"], "node-a100"),
            "exclude": (["--exclude", "node-a100"], "node-0"),
            "nodelist": (["--nodelist", "node-[0-0]"], "node-0"),
            "memory": (["--mem-per-gpu", "6G"], "node-0")}
    for name, (flags, node) in want.items():
        r = cli(binary, env, "submit", "--gpus", "1", *flags, "--chdir",
                home, "--wait", "--", "/bin/sh", "-c", PROBE, "probe", name)
        if r.returncode != 0:
            fail("submit %s exited %d: %s" % (flags, r.returncode, r.stderr))
        with open(os.path.join(home, "ran-" + name)) as f:
            ran_on, who = f.read().split()
        if ran_on != node or int(who) != uid:
            fail("%s ran on %s as uid %s, want %s as %d" %
                 (flags, ran_on, who, node, uid))

    r = cli(binary, env, "submit", "--gpus", "1", "--gpu-type", "v100",
            "--chdir", home, "--", "/bin/true")
    if r.returncode != 0:
        fail("submit --gpu-type v100: %s" % r.stderr)
    job = r.stdout.split()[0]
    time.sleep(1)
    info = json.loads(cli(binary, env, "job", job, "--json").stdout)
    reason = info.get("pending_reason") or ""
    if info["state"] != "pending" or \
            info.get("pending_reason_kind") != "no_match" or \
            "no up node matches GPU type v100" not in reason or \
            info["node_filter"]["gpu_type"] != "v100":
        fail("a v100 job: %s, %r" % (info["state"], reason))
    shown = cli(binary, env, "job", job).stdout
    if "GPU type v100" not in shown:
        fail("job %s does not show its node filter:\n%s" % (job, shown))
    cli(binary, env, "cancel", job)

    r = cli(binary, env, "submit", "--gpus", "1", "--cpus-per-gpu",
            str(most_cpus + 1), "--", "/bin/true")
    job = r.stdout.split()[0]
    time.sleep(1)
    reason = json.loads(cli(binary, env, "job", job, "--json").stdout).get(
        "pending_reason") or ""
    if "no up node matches %d CPUs per GPU" % (most_cpus + 1) not in reason:
        fail("--cpus-per-gpu %d: %r" % (most_cpus + 1, reason))
    cli(binary, env, "cancel", job)

    if os.path.isdir("/sys/fs/cgroup/memory/tiresias"):
        check_limits(binary, env, home)
    check_exclusive(binary, env, home)

    before = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
    bad = cli(binary, env, "submit", "--gpus", "1", "--constraint", "ib&&x",
              "--", "/bin/true")
    if bad.returncode == 0 or "--constraint" not in bad.stderr:
        fail("a bad --constraint: %d %s" % (bad.returncode, bad.stderr))
    after = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
    if len(after) != len(before):
        fail("a refused submit made a job")


def check_limits(binary, env, home):
    """In cgroups (v1 here): one CPU, and 64 MiB (the job cannot read its
    group's limit: it is judged by what it may allocate)."""
    probe = ('grep Cpus_allowed_list /proc/self/status > limits && '
             'exec /usr/bin/python3 -c "x = \'x\' * (24 << 20)"')
    r = cli(binary, env, "submit", "--gpus", "1", "--cpus-per-gpu", "1",
            "--mem-per-gpu", "64M", "--chdir", home, "--wait", "--",
            "/bin/sh", "-c", probe)
    if r.returncode != 0:
        job = r.stdout.split()[0] if r.stdout.split() else "?"
        fail("the limits probe exited %d: %s; its log:\n%s" %
             (r.returncode, r.stderr, cli(binary, env, "logs", job).stdout))
    with open(os.path.join(home, "limits")) as f:
        allowed = f.read().split()[1]
    if "," in allowed or "-" in allowed:
        fail("--cpus-per-gpu 1 ran on CPUs %s" % allowed)
    # What it used, from its cgroups: the 24 MiB it allocated, some CPU.
    probe_job = r.stdout.split()[0]
    info = json.loads(cli(binary, env, "job", probe_job, "--json").stdout)
    if not info["cpu_s"] > 0 or \
            not 24 << 20 <= info["max_memory_bytes"] <= 64 << 20:
        fail("job %s used cpu_s %r, max_memory_bytes %r" %
             (probe_job, info["cpu_s"], info["max_memory_bytes"]))
    shown = cli(binary, env, "job", probe_job).stdout
    if "Used:" not in shown or "memory peak" not in shown:
        fail("job %s does not show what it used:\n%s" % (probe_job, shown))
    rows = json.loads(cli(binary, env, "history", "--format",
                          "id,cpu,maxmem", "--json").stdout)["jobs"]
    row = [j for j in rows if str(j["id"]) == probe_job]
    if not row or row[0]["max_memory_bytes"] != info["max_memory_bytes"]:
        fail("history --format id,cpu,maxmem: %s" % row)
    r = cli(binary, env, "submit", "--gpus", "1", "--mem-per-gpu", "64M",
            "--chdir", home, "--wait", "--", "/usr/bin/python3", "-c",
            "x = 'x' * (256 << 20)")
    job = r.stdout.split()[0]
    info = json.loads(cli(binary, env, "job", job, "--json").stdout)
    details = " ".join(e.get("detail") or "" for e in info.get("events", []))
    if r.returncode == 0 or info["state"] != "failed" or \
            "out of memory" not in details:
        fail("256 MiB under --mem-per-gpu 64M: rc %d, %s, %s" %
             (r.returncode, info["state"], details))


def check_exclusive(binary, env, home):
    """An exclusive job takes the node nobody holds a GPU of; a job sent to
    that node starts only once it ended; another exclusive one waits."""
    stamp = ('echo "$TIRESIAS_NODE_NAME $(date +%s.%N)" > "$PWD/$1-start"; '
             'sleep "$2"; date +%s.%N > "$PWD/$1-end"')

    def submit(*flags, name, seconds):
        r = cli(binary, env, "submit", "--gpus", "1", *flags, "--chdir",
                home, "--", "/bin/sh", "-c", stamp, "stamp", name,
                str(seconds))
        if r.returncode != 0:
            fail("submit %s: %s" % (flags, r.stderr))
        return r.stdout.split()[0]

    def wait_file(name, timeout_s=30):
        path = os.path.join(home, name)
        deadline = time.time() + timeout_s
        while not os.path.exists(path) or os.path.getsize(path) == 0:
            if time.time() > deadline:
                fail("%s never appeared" % name)
            time.sleep(0.1)
        with open(path) as f:
            return f.read().split()

    holder = submit("--nodelist", "node-0", name="holder", seconds=60)
    wait_file("holder-start")
    alone = submit("--exclusive", name="alone", seconds=4)
    node, started = wait_file("alone-start")
    if node != "node-a100":
        fail("the exclusive job ran on %s, want node-a100 (node-0 is held)"
             % node)
    beside = submit("--nodelist", "node-a100", name="beside", seconds=0)
    second = submit("--exclusive", name="second", seconds=0)
    time.sleep(1)
    info = json.loads(cli(binary, env, "job", second, "--json").stdout)
    if info["state"] != "pending" or \
            "(--exclusive)" not in (info.get("pending_reason") or ""):
        fail("a second exclusive job: %s, %r" %
             (info["state"], info.get("pending_reason")))
    cli(binary, env, "cancel", second)
    (ended,) = wait_file("alone-end")
    beside_node, beside_started = wait_file("beside-start")
    if beside_node != "node-a100" or float(beside_started) < float(ended):
        fail("a job on the exclusive job's node started at %s on %s, before "
             "it ended at %s" % (beside_started, beside_node, ended))
    cli(binary, env, "cancel", holder)
    del alone, started


if __name__ == "__main__":
    main()
