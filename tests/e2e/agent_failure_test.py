#!/usr/bin/python3
"""End to end, dead machine: a `tiresias master` (--node-timeout 4) and two
separate agents x 2 emulated GPUs. A 2-GPU /bin/sh job runs on agent A;
agent A is killed with SIGKILL and so is its task's process group (the
machine is gone). After the node timeout the master marks A down, the job
is rescheduled on agent B and finishes there; `tiresias nodes` shows A
down and B up; the job's process was started exactly twice (once per node).

Usage: agent_failure_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, events, fail, run_with_cluster,  # noqa: E402
                           read_lines)

NODE_TIMEOUT = 4


def main():
    # Agents with a 1 s grace: a 2 s lease.
    run_with_cluster(run, "tiresias-agent-", node_timeout=NODE_TIMEOUT,
                     policy="yarn-cs", grace=1)


def run(cluster):
    cluster.start_master()
    # Only A at first, so the job lands on A.
    cluster.start_agent("nodeA")
    cluster.wait_nodes_up(["nodeA"])
    # 60 s on its first start (it will not get to finish), 5 s on a later
    # one (longer than the 2 s heartbeat, so the master sees it run).
    job_id, marker = cluster.submit_sh("victim", 2, 60, 5)
    jobs = cluster.wait(
        lambda j: j[job_id]["state"] == "running" and
        len(read_lines(marker)) == 1, "the job to run on nodeA")
    if jobs[job_id]["nodes"] != ["nodeA"]:
        fail("job runs on %s, not nodeA" % jobs[job_id]["nodes"])
    cluster.start_agent("nodeB")
    cluster.wait_nodes_up(["nodeA", "nodeB"])

    # The machine dies: the agent and its task, at once, no goodbye.
    task_pid = int(read_lines(marker)[0].split()[1])
    task_group = os.getpgid(task_pid)  # led by the task's shim
    cluster.kill_agent("nodeA")
    os.killpg(task_group, signal.SIGKILL)
    died_at = time.time()

    nodes = cluster.wait(
        lambda n: n["nodeA"]["state"] == "down",
        "nodeA to be marked down", timeout_s=NODE_TIMEOUT + 10,
        source=cluster.nodes)
    down_after = time.time() - died_at
    print("nodeA down %.1f s after it died" % down_after)
    if down_after < NODE_TIMEOUT - 0.5:
        fail("nodeA marked down after %.1f s, before the %d s timeout" %
             (down_after, NODE_TIMEOUT))
    if nodes["nodeB"]["state"] != "up":
        fail("nodeB is %s" % nodes["nodeB"]["state"])

    jobs = cluster.wait(lambda j: j[job_id]["state"] in FINAL,
                        "the job to end on nodeB", timeout_s=30)
    job = cluster.job(job_id)
    print("job %s: %s in %.1f s after the failure; events %s" %
          (job_id, job["state"], time.time() - died_at, events(job)))
    if job["state"] != "finished":
        fail("job ended %s: %s" % (job["state"], events(job)))
    if job["nodes"] != ["nodeB"]:
        fail("job's last run was on %s, not nodeB" % job["nodes"])
    starts = read_lines(marker)
    if len(starts) != 2:
        fail("job's process started %d times, want 2 (nodeA, nodeB): %s" %
             (len(starts), starts))
    if len(read_lines(marker + ".end")) != 1:
        fail("job's process ran to its end %d times, want 1" %
             len(read_lines(marker + ".end")))
    if ("resumed", "attempt 2 on nodeB GPUs 0,1") not in events(job):
        fail("no 'resumed' event for attempt 2 on nodeB: %s" % events(job))
    if job["attempt"] != 2:
        fail("job's attempt is %s, want 2" % job["attempt"])

    # The plain table too, as a user sees it.
    table = cluster.cli("nodes")
    rows = {l.split()[0]: l.split() for l in table.splitlines()[1:] if l}
    if rows.get("nodeA", [None, None])[1] != "down":
        fail("`tiresias nodes` does not show nodeA down:\n" + table)
    if rows.get("nodeB", [None, None])[1] != "up":
        fail("`tiresias nodes` does not show nodeB up:\n" + table)
    nodes = cluster.nodes()
    if nodes["nodeB"]["gpus_free"] != 2 or nodes["nodeB"]["job_ids"]:
        fail("nodeB still holds the finished job: %s" % nodes["nodeB"])
    print(table.rstrip())


if __name__ == "__main__":
    main()
