#!/usr/bin/python3
"""End to end, master crash: a `tiresias master` (yarn-cs, so no job is
ever preempted on purpose) with 2 separate agents x 2 emulated GPUs runs
four 1-GPU /bin/sh jobs, two 2-GPU jobs wait, and one more job is submitted
right before the master is killed with SIGKILL. A new master on the same
state dir and the same address: every job whose id a client was given is
still there, the running ones are adopted (their processes were never
restarted: each start marker has exactly one line, attempt 1, no restart or
preemption), nothing runs twice, everything finishes.

Usage: restart_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, events, fail, run_with_cluster,  # noqa: E402
                           free_port, read_lines)

RUN_SECS = 12  # long enough to span the crash and the restart


def main():
    # A 7 s lease (10 - 2 - 1): the tasks outlive the master's restart.
    run_with_cluster(run, "tiresias-restart-", node_timeout=10,
                     policy="yarn-cs", grace=2)


def run(cluster):
    address = cluster.start_master("127.0.0.1:%d" % free_port())
    cluster.start_agent("nodeA")
    cluster.start_agent("nodeB")
    cluster.wait_nodes_up(["nodeA", "nodeB"])

    runners = [cluster.submit_sh("run%d" % i, 1, RUN_SECS) for i in range(4)]
    waiters = [cluster.submit_sh("wait%d" % i, 2, 2) for i in range(2)]
    ids = [i for i, _ in runners + waiters]
    cluster.wait(lambda j: all(j[i]["state"] == "running"
                               for i, _ in runners) and
                 all(len(read_lines(m)) == 1 for _, m in runners),
                 "the four 1-GPU jobs to run and start their processes")
    before = cluster.jobs()
    for i, _ in waiters:
        if before[i]["state"] != "pending":
            fail("job %s should wait for GPUs: %s" % (i, before[i]["state"]))

    # Accepted means on disk: submitted, answered, then the crash at once.
    last, last_marker = cluster.submit_sh("last", 1, 2)
    ids.append(last)
    cluster.kill_master()
    killed_at = time.time()
    # Tasks keep running with the master gone.
    time.sleep(1.5)
    for i, m in runners:
        if len(read_lines(m)) != 1:
            fail("job %s started %d times while the master was down" %
                 (i, len(read_lines(m))))

    if cluster.start_master(address) != address:
        fail("restarted master is not on %s" % address)
    print("master restarted %.1f s after SIGKILL" % (time.time() - killed_at))
    after = cluster.jobs()
    missing = [i for i in ids if i not in after]
    if missing:
        fail("jobs lost in the crash: %s (have %s)" % (missing, list(after)))
    for i, _ in runners:
        if after[i]["state"] in ("pending", "preempted",
                                 "failed", "cancelled"):
            fail("running job %s came back %s" % (i, after[i]["state"]))
    cluster.wait_nodes_up(["nodeA", "nodeB"])

    jobs = cluster.wait(lambda j: all(j[i]["state"] in FINAL for i in ids),
                        "every job to end", timeout_s=45)
    for i in ids:
        job = jobs[i]
        if job["state"] != "finished":
            fail("job %s ended %s: %s\nmaster log:\n%s" %
                 (i, job["state"], events(cluster.job(i)),
                  cluster.tail("master.log")))
    for i, marker in runners + waiters + [(last, last_marker)]:
        job = jobs[i]
        starts = read_lines(marker)
        if len(starts) != 1:
            fail("job %s's process was started %d times (%s); events: %s" %
                 (i, len(starts), starts, events(cluster.job(i))))
        if len(read_lines(marker + ".end")) != 1:
            fail("job %s's process did not run to its end once: %s" %
                 (i, read_lines(marker + ".end")))
        if read_lines(marker + ".term"):
            fail("job %s was sent SIGTERM: %s; events: %s" %
                 (i, read_lines(marker + ".term"), events(cluster.job(i))))
        if job["attempt"] != 1 or job["restarts"] or job["preemptions"]:
            fail("job %s: attempt %s, restarts %s, preemptions %s (want "
                 "1, 0, 0); events: %s" %
                 (i, job["attempt"], job["restarts"], job["preemptions"],
                  events(cluster.job(i))))
    # Adopted jobs ran their full length: start to end covers RUN_SECS.
    for i, _ in runners:
        job = jobs[i]
        ran = job["end_time"] - job["first_start_time"]
        if ran < RUN_SECS - 1:
            fail("job %s ran %.1f s by the master's record, not ~%d s" %
                 (i, ran, RUN_SECS))
        kinds = [k for k, _ in events(cluster.job(i))]
        if "adopted" not in kinds:
            fail("job %s was not adopted by the new master: %s" % (i, kinds))
        if kinds.count("started") != 1 or "resumed" in kinds:
            fail("job %s's history shows more than one start: %s" %
                 (i, kinds))
    print("%d jobs survived the crash; 4 adopted and ran once; all finished"
          % len(ids))


if __name__ == "__main__":
    main()
