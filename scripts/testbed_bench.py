#!/usr/bin/python3
"""Measurements on the emulated testbed (scripts/testbed.sh), as root.

  testbed_bench.py iteration [--models vgg16,resnet50] [--rate 1gbit]
      [--compute-time 0.1] [--steps 6] [--out FILE]
    Per model, a 4-GPU examples/ps_train.py job (2 servers, 2 workers, one
    rank per GPU) on a 2 x 4-GPU testbed, once with the master's placement
    `consolidate` (all four ranks on one server: loopback) and once with
    `spread` (two per server: a server and a worker on each, so traffic
    crosses the shaped links). Reports each run's seconds per step as the
    job measured it (result.json's step_s: steps after its first).

  testbed_bench.py workload --placement P [--rate 1gbit] [--servers 3]
      [--gpus 4] [--compute-time 0.1] [--steps vgg16-3=8,resnet50-3=20]
      [--cutoff 600] [--out FILE]
    The mixed workload (WORKLOAD below) on a fresh testbed whose master
    places with P. First one job of each kind runs alone (its first launch
    is profiled by the agent, so the master learns its tensor skew); then
    the whole workload is submitted at once: every job has the name,
    command and GPU count of one of them, so it starts with the skew
    measured before (the master's profile signature). Reports the average
    JCT (end - submit, from the master's records) and GPU fragmentation
    (from the master's start and end events), see summarize(). Stops
    waiting --cutoff seconds (600) after submitting: a job not ended by
    then counts as ending then, so the average is a lower bound, and the
    summary says how many were unfinished. Also samples the machine's
    CPU (/proc/stat, once a second, submission to end: cpu_busy,
    cpu_saturated_s_share, cpu_samples) and keeps each job's step_s from
    its result.json, to tell whether the cores rather than the links are
    what the jobs wait on.

Everything is judged from the master's records and the jobs' own
result.json files, never from a model. Prints a table and, with --out,
writes JSON.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTBED = os.path.join(ROOT, "scripts", "testbed.sh")
TIRESIAS = os.environ.get("TIRESIAS",
                          os.path.join(ROOT, "build", "src", "cli", "tiresias"))
PS_TRAIN = os.path.join(ROOT, "examples", "ps_train.py")
PYTHON = "/usr/bin/python3"
FINAL = ("finished", "failed", "cancelled")

# Job kinds of the workload: (name, model, gpus, workers, servers, steps).
# VGG16 (skew 0.74) and ResNet50 (0.09), parameter-server jobs of 3 GPUs,
# so that on 4-GPU servers consolidation leaves one-GPU holes that only a
# spread job can use.
KINDS = {
    "vgg16-3": ("vgg16", 3, 2, 1, 8),
    "resnet50-3": ("resnet50", 3, 2, 1, 20),
}
# The order jobs are submitted in (all at once).
WORKLOAD = ["vgg16-3", "resnet50-3", "resnet50-3", "vgg16-3", "resnet50-3",
            "resnet50-3", "vgg16-3", "resnet50-3", "resnet50-3", "vgg16-3",
            "resnet50-3", "resnet50-3"]


def fail(msg):
    print(f"testbed_bench.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


class Testbed:
    def __init__(self, name, workdir, servers, gpus, rate, placement):
        self.name, self.dir = name, workdir
        self.flags = ["--name", name, "--dir", workdir]
        self.up_flags = self.flags + ["--servers", str(servers), "--gpus",
                                      str(gpus), "--rate", rate,
                                      "--placement", placement]
        self.master = None

    def __enter__(self):
        subprocess.run([TESTBED, "down"] + self.flags, check=False,
                       capture_output=True)
        run = subprocess.run([TESTBED, "up"] + self.up_flags, text=True,
                             capture_output=True)
        sys.stderr.write(run.stderr)
        if run.returncode != 0:
            fail(f"testbed.sh up exited {run.returncode}")
        env = subprocess.run([TESTBED, "env"] + self.flags, text=True,
                             capture_output=True, check=True).stdout
        self.master = env.strip().split("=", 1)[1]
        return self

    def __exit__(self, *exc):
        subprocess.run([TESTBED, "down"] + self.flags, check=False)

    def cli(self, *args):
        out = subprocess.run([TIRESIAS] + list(args), text=True,
                             capture_output=True,
                             env=dict(os.environ, TIRESIAS_MASTER=self.master))
        if out.returncode != 0:
            fail(f"tiresias {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    def submit(self, name, model, gpus, workers, servers, steps,
               compute_time):
        cmd = [PYTHON, PS_TRAIN, "--model", model, "--workers", str(workers),
               "--servers", str(servers), "--steps", str(steps),
               "--compute-time", str(compute_time), "--rank-per-gpu",
               "--log-every", "100"]
        # One task per node: --rank-per-gpu starts the node's ranks.
        return self.cli("submit", "--gpus", str(gpus), "--tasks-per-node",
                        "1", "--name", name, "--", *cmd).strip()

    def job(self, job_id):
        return json.loads(self.cli("job", job_id, "--json"))

    def wait(self, ids, timeout_s, partial=False):
        """The jobs once all have ended (fails if one did not finish). At
        timeout_s: fails, or with `partial` returns them as they are."""
        deadline = time.time() + timeout_s
        while True:
            jobs = {j: self.job(j) for j in ids}
            if all(j["state"] in FINAL for j in jobs.values()):
                bad = [i for i, j in jobs.items()
                       if j["state"] != "finished"]
                if bad:
                    fail(f"job(s) {bad} did not finish; see {self.dir}")
                return jobs
            if time.time() >= deadline:
                if partial:
                    return jobs
                fail(f"jobs {ids} not done after {timeout_s} s; see {self.dir}")
            time.sleep(1)

    def result(self, job_id):
        path = os.path.join(self.dir, "master", "checkpoints",
                            f"job-{job_id}", "result.json")
        with open(path) as f:
            return json.load(f)


# --- iteration time: consolidated against spread ------------------------------

def iteration(args):
    rows = []
    for placement in ("consolidate", "spread"):
        with Testbed("tbbench", args.dir, 2, 4, args.rate, placement) as tb:
            for model in args.models.split(","):
                steps = args.steps
                jid = tb.submit(f"{model}-iter", model, 4, 2, 2, steps,
                                args.compute_time)
                job = tb.wait([jid], 600)[jid]
                res = tb.result(jid)
                rows.append({"model": model, "placement": placement,
                             "nodes": job["nodes"], "step_s": res["step_s"],
                             "timed_steps": res["timed_steps"],
                             "skew": (job.get("profile") or {}).get(
                                 "tensor_skew")})
                print(f"{model:10s} {placement:12s} {res['step_s']:.3f} s/step "
                      f"on {','.join(job['nodes'])}", flush=True)
    print("\nmodel       consolidated     spread   slowdown")
    for model in args.models.split(","):
        c = next(r for r in rows if r["model"] == model and
                 r["placement"] == "consolidate")["step_s"]
        s = next(r for r in rows if r["model"] == model and
                 r["placement"] == "spread")["step_s"]
        print(f"{model:10s} {c:10.3f} s {s:8.3f} s {s / c:8.2f}x")
    return {"rate": args.rate, "compute_time": args.compute_time,
            "workers": 2, "servers": 2, "gpus": 4, "runs": rows}


# --- the mixed workload ----------------------------------------------------------

ALLOC = re.compile(r"(\S+) GPUs ([0-9,]+)")


def gpu_intervals(jobs, now=None):
    """(start, end, {node: gpus}) of every attempt, from the events; an
    attempt still running ends at `now` (if given)."""
    out = []
    for job in jobs.values():
        open_run = None
        for e in job.get("events", []):
            if e["kind"] in ("started", "resumed"):
                alloc = {n: len(g.split(",")) for n, g in
                         ALLOC.findall(e.get("detail", ""))}
                open_run = (e["time"], alloc)
            elif e["kind"] in ("preempted", "finished", "failed",
                               "cancelled") and open_run:
                out.append((open_run[0], e["time"], open_run[1]))
                open_run = None
        if open_run and now is not None:
            out.append((open_run[0], now, open_run[1]))
    return out


def summarize(jobs, nodes, gpus_per_node, now=None):
    """Average JCT; fragmentation and idle-while-waiting, time-averaged
    over the run (first submit to last end), from the master's events:
      fragmentation: free GPUs on servers that are partly busy, as a share
        of all GPUs (GPUs a consolidated job cannot use);
      idle_while_waiting: free GPUs as a share of all GPUs, over the time
        some job was waiting;
      utilization: busy GPUs as a share of all GPUs.
    With `now` (a cut-off), a job not ended by then counts as ending then:
    its JCT, and so the average, is a lower bound ("unfinished")."""
    total = len(nodes) * gpus_per_node
    unfinished = sum(1 for j in jobs.values() if not j.get("end_time"))
    if now is not None:
        jobs = {i: dict(j, end_time=j.get("end_time") or now)
                for i, j in jobs.items()}
    intervals = gpu_intervals(jobs, now)
    runs = {jid: gpu_intervals({jid: j}, now) for jid, j in jobs.items()}
    t0 = min(j["submit_time"] for j in jobs.values())
    t1 = max(j["end_time"] for j in jobs.values())
    points = sorted({t0, t1} | {a for a, _, _ in intervals} |
                    {b for _, b, _ in intervals} |
                    {j["submit_time"] for j in jobs.values()})
    frag = idle_wait = busy = wait_time = 0.0
    for a, b in zip(points, points[1:]):
        if b <= a:
            continue
        mid = (a + b) / 2
        used = {n: 0 for n in nodes}
        for s, e, alloc in intervals:
            if s <= mid < e:
                for n, k in alloc.items():
                    used[n] = used.get(n, 0) + k
        free_partial = sum(gpus_per_node - u for u in used.values()
                           if 0 < u < gpus_per_node)
        in_use = sum(used.values())
        waiting = any(j["submit_time"] <= mid < j["end_time"] and
                      not any(s <= mid < e for s, e, _ in runs[jid])
                      for jid, j in jobs.items())
        frag += (b - a) * free_partial / total
        busy += (b - a) * in_use / total
        if waiting:
            wait_time += b - a
            idle_wait += (b - a) * (total - in_use) / total
    span = t1 - t0
    jcts = [j["end_time"] - j["submit_time"] for j in jobs.values()]
    return {"jobs": len(jobs), "unfinished": unfinished,
            "avg_jct_s": sum(jcts) / len(jcts),
            "max_jct_s": max(jcts), "makespan_s": span,
            "fragmentation": frag / span, "utilization": busy / span,
            "idle_while_waiting": idle_wait / wait_time if wait_time else 0.0,
            "waiting_s": wait_time}


def cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    total = sum(v[:8])  # guest time is already in user
    return total - idle, total


class CpuSampler(threading.Thread):
    """The machine's CPU busy share, once a second, while the workload
    runs: whether the 2 cores (and not the links) are what the jobs wait
    on. Reports the average and the share of seconds at >= 95% busy."""
    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.times = [], []
        self.stop = threading.Event()

    def run(self):
        last = cpu_times()
        while not self.stop.wait(1.0):
            now = cpu_times()
            if now[1] > last[1]:
                self.samples.append((now[0] - last[0]) / (now[1] - last[1]))
                self.times.append(time.time())
            last = now

    def summary(self):
        self.stop.set()
        self.join()
        n = len(self.samples) or 1
        return {"cpu_busy": sum(self.samples) / n,
                "cpu_saturated_s_share": sum(1 for x in self.samples
                                             if x >= 0.95) / n,
                "cpu_samples": [[round(t, 1), round(x, 3)] for t, x in
                                zip(self.times, self.samples)]}


def parse_steps(text):
    """--steps vgg16-3=4,resnet50-3=8: steps per job kind."""
    steps = {}
    for item in filter(None, (text or "").split(",")):
        name, _, n = item.partition("=")
        if name not in KINDS or not n.isdigit() or int(n) < 2:
            fail(f"--steps: bad item {item!r} (KIND=N, N >= 2, kinds "
                 f"{', '.join(KINDS)})")
        steps[name] = int(n)
    return steps


def workload(args):
    for name, n in parse_steps(args.steps).items():
        KINDS[name] = KINDS[name][:4] + (n,)
    with Testbed("tbwork", args.dir, args.servers, args.gpus, args.rate,
                 args.placement) as tb:
        # Warm-up: one job of each kind, alone, profiled on its first launch.
        for name in sorted(set(WORKLOAD)):
            jid = tb.submit(name, *KINDS[name], args.compute_time)
            job = tb.wait([jid], 600)[jid]
            skew = (job.get("profile") or {}).get("tensor_skew")
            print(f"warm-up {name}: job {jid}, measured skew {skew}",
                  flush=True)
            if skew is None:
                fail(f"warm-up job {jid} ({name}) has no measured skew")
        cpu = CpuSampler()
        cpu.start()
        ids = [tb.submit(name, *KINDS[name], args.compute_time)
               for name in WORKLOAD]
        jobs = tb.wait(ids, args.cutoff, partial=True)
        cutoff = time.time()
        cpu = cpu.summary()

        def step_s(jid):
            try:
                return tb.result(jid)["step_s"]
            except (OSError, ValueError, KeyError):
                return None
        steps = {j: step_s(j) for j in ids}
        inherited = sum(1 for j in jobs.values()
                        if (j.get("profile") or {}).get("tensor_skew")
                        is not None)
        nodes = [n["name"] for n in
                 json.loads(tb.cli("nodes", "--json"))["nodes"]]
        summary = summarize(jobs, nodes, args.gpus, now=cutoff)
    summary.update(cpu)
    summary.update({"placement": args.placement, "rate": args.rate,
                    "servers": args.servers, "gpus": args.gpus,
                    "compute_time": args.compute_time,
                    "jobs_with_skew": inherited,
                    "cutoff_s": args.cutoff,
                    "steps": {k: v[4] for k, v in KINDS.items()},
                    "per_job": [{"id": j["id"], "name": j["name"],
                                 "state": j["state"],
                                 "jct_s": (j.get("end_time") or cutoff) -
                                          j["submit_time"],
                                 "nodes": j["nodes"],
                                 "submit": j["submit_time"],
                                 "starts": [e["time"] for e in
                                            j.get("events", []) if e["kind"]
                                            in ("started", "resumed")],
                                 "end": j.get("end_time"),
                                 "step_s": steps[jid]}
                                for jid, j in jobs.items()]})
    bound = (f" (at least: {summary['unfinished']} unfinished at the "
             f"{args.cutoff:.0f} s cut-off)" if summary["unfinished"] else "")
    print(f"{args.placement}: {summary['jobs']} jobs, avg JCT "
          f"{summary['avg_jct_s']:.1f} s{bound}, makespan {summary['makespan_s']:.1f} s, "
          f"fragmentation {summary['fragmentation']:.3f}, idle while waiting "
          f"{summary['idle_while_waiting']:.3f}, utilization "
          f"{summary['utilization']:.3f}, CPU busy {summary['cpu_busy']:.2f} "
          f"(saturated {summary['cpu_saturated_s_share']:.2f} of the time); "
          f"{inherited} of them started with a measured skew")
    return summary


def main():
    p = argparse.ArgumentParser(prog="testbed_bench.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("iteration", "workload"):
        s = sub.add_parser(name)
        s.add_argument("--rate", default="1gbit")
        s.add_argument("--compute-time", type=float, default=0.1)
        s.add_argument("--dir", default=os.path.abspath(f"testbed-bench-{name}"))
        s.add_argument("--out")
        if name == "iteration":
            s.add_argument("--models", default="vgg16,resnet50")
            s.add_argument("--steps", type=int, default=6)
        else:
            s.add_argument("--placement", required=True)
            s.add_argument("--servers", type=int, default=3)
            s.add_argument("--gpus", type=int, default=4)
            s.add_argument("--steps",
                           help="steps per job kind, e.g. "
                                "vgg16-3=4,resnet50-3=8 (default 8 and 20)")
            s.add_argument("--cutoff", type=float, default=600,
                           help="seconds after submitting to stop waiting; "
                                "jobs not ended by then count as ending "
                                "then (a lower bound on JCT; default 600)")
    args = p.parse_args()
    if os.geteuid() != 0:
        fail("needs root (scripts/testbed.sh makes network namespaces)")
    result = iteration(args) if args.cmd == "iteration" else workload(args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
