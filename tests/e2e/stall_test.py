#!/usr/bin/python3
"""A stalled master judges nobody: a real `tiresias master` and one
`tiresias agent`; the master is frozen (SIGSTOP) for longer than the node
timeout while its node's task ends on its own (exit 0). When the master
thaws it must take the report that waited for it before it judges the
node: the job finished, its task ran once (its own record says so), and
the node was never declared lost. A master that judged at once declared
the node lost, preempted the job and ran it again.

Usage: stall_test.py TIRESIAS_BINARY
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, events, fail, read_lines,  # noqa: E402
                           run_with_cluster)

NODE_TIMEOUT = 4  # s; with GRACE 1 s an agent's lease is 2 s
STALL = 7.0  # s: past the node timeout

# Each run appends "<attempt> <unix s>" to its runs file, works 1.5 s and
# exits 0.
TASK = r'''
echo "$TIRESIAS_ATTEMPT $(date +%s.%N)" >> "$1"
sleep 1.5
exit 0
'''


def run(cluster):
    cluster.start_master()
    cluster.start_agent("n0")
    cluster.wait_nodes_up(["n0"])
    runs = os.path.join(cluster.workdir, "runs")
    job_id = cluster.cli("submit", "--gpus", "1", "--name", "short", "--",
                         "/bin/sh", "-c", TASK, "sh", runs).strip()
    cluster.wait(lambda j: j[job_id]["state"] == "running", "job running")
    os.kill(cluster.master.pid, signal.SIGSTOP)
    frozen_at = time.time()
    try:
        time.sleep(STALL)  # the task ends during it
    finally:
        os.kill(cluster.master.pid, signal.SIGCONT)
    jobs = cluster.wait(lambda j: j[job_id]["state"] in FINAL,
                        "the job to end", timeout_s=30)
    time.sleep(2)  # a second run, if one were coming, would show by now
    lines = read_lines(runs)
    job = cluster.job(job_id)
    problems = []
    if jobs[job_id]["state"] != "finished":
        problems.append("job ended %s, want finished" %
                        jobs[job_id]["state"])
    if len(lines) != 1:
        problems.append("its task ran %d times: %s" % (len(lines), lines))
    elif float(lines[0].split()[1]) + 1.5 > frozen_at + STALL:
        problems.append("the task did not end during the stall: %s" % lines)
    kinds = [k for k, _ in events(job)]
    if "node_down" in kinds or "preempted" in kinds:
        problems.append("events: %s" % events(job))
    if "stalled for" not in cluster.tail("master.log"):
        problems.append("the master did not say it stalled")
    if problems:
        fail("; ".join(problems) + "\nmaster log:\n" +
             cluster.tail("master.log") + "\nagent log:\n" +
             cluster.tail("n0.log"))


def main():
    run_with_cluster(run, "tiresias-stall-", node_timeout=NODE_TIMEOUT,
                     grace=1)


if __name__ == "__main__":
    main()
