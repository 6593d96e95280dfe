#!/usr/bin/python3
"""End to end, the testbed-vs-simulator check in small: a `tiresias master`
(tiresias-l, its queue bound scaled with the time scale) and two agents of 2
emulated GPUs as real processes; `tiresias replay` submits
tests/data/replay_small.csv at 0.02 real seconds per trace second, each job
a task that runs its scaled duration and resumes after a preemption; the
same trace is simulated on 2x2; `tiresias compare` puts them side by side.

Checked: every job ran and finished; each job's executed time (the master's
record, in trace seconds) covers its trace duration; the real average JCT
is within 25% of the simulated one (they agreed within a few percent when
this was written; the margin is for a loaded 2-core machine).

Usage: replay_test.py TIRESIAS_BINARY SOURCE_DIR.
"""
import csv
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail, run_with_cluster  # noqa: E402

SCALE = 0.02


def main():
    run_with_cluster(run, "tiresias-replay-", node_timeout=30,
                     policy="tiresias-l",
                     master_args=["--thresholds", str(200 * SCALE)])


def run(cluster):
    trace = os.path.join(sys.argv[2], "tests", "data", "replay_small.csv")
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=2)
    cluster.start_agent("nodeB", gpus=2)
    cluster.wait_nodes_up(["nodeA", "nodeB"])
    real = os.path.join(cluster.workdir, "real")
    sim = os.path.join(cluster.workdir, "sim")
    out = cluster.cli_raw_timeout(
        120, "replay", "--trace", trace, "--time-scale", str(SCALE),
        "--out", real)
    if out is None or out.returncode != 0:
        fail("replay: %s" % (out and out.stderr))
    simulated = cluster.cli_raw(
        "simulate", "--trace", trace, "--cluster", "2x2", "--policy",
        "tiresias-l", "--thresholds", "200", "--no-preemption-cost",
        "--out", sim)
    if simulated.returncode != 0:
        fail("simulate: %s" % simulated.stderr)

    with open(os.path.join(real, "summary.json")) as f:
        real_summary = json.load(f)["policies"][0]
    with open(os.path.join(sim, "summary.json")) as f:
        sim_summary = json.load(f)["policies"][0]
    if real_summary["jobs"] != 6:
        fail("replay summarized %s jobs, want 6" % real_summary["jobs"])
    durations = {}
    with open(trace) as f:
        for row in csv.DictReader(f):
            durations[row["job_id"]] = float(row["duration"])
    with open(os.path.join(real, "tiresias-l_jobs.csv")) as f:
        for row in csv.DictReader(f):
            want = durations[row["id"]]
            if float(row["executed_s"]) < 0.95 * want:
                fail("job %s executed %s trace s, less than its duration %s" %
                     (row["id"], row["executed_s"], want))
            if float(row["jct_s"]) < 0.95 * want:
                fail("job %s JCT %s below its duration %s" %
                     (row["id"], row["jct_s"], want))
    states = {j["name"]: j["state"] for j in cluster.jobs().values()}
    if sorted(states.values()) != ["finished"] * 6:
        fail("job states: %r" % states)
    ratio = real_summary["avg_jct_s"] / sim_summary["avg_jct_s"]
    if not 0.75 <= ratio <= 1.25:
        fail("real avg JCT %.1f s vs simulated %.1f s (ratio %.3f)" %
             (real_summary["avg_jct_s"], sim_summary["avg_jct_s"], ratio))
    compared = cluster.cli_raw("compare", os.path.join(sim, "summary.json"),
                               os.path.join(real, "summary.json"))
    if compared.returncode != 0 or "avg_jct_s" not in compared.stdout:
        fail("compare: %s %s" % (compared.stdout, compared.stderr))
    bad = cluster.cli_raw("compare", os.path.join(sim, "summary.json"),
                          trace)
    if bad.returncode == 0 or "not a summary.json" not in bad.stderr:
        fail("compare of a CSV: exit %d, %r" % (bad.returncode, bad.stderr))
    print("real/simulated avg JCT %.3f; preemptions %d real, %d simulated" %
          (ratio, real_summary["preemptions"], sim_summary["preemptions"]))


if __name__ == "__main__":
    main()
