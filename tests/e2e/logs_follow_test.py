#!/usr/bin/python3
"""End to end, logs across an agent restart: a `tiresias master` and one
`tiresias agent`; a /bin/sh job prints a numbered line every 0.2 s.
`tiresias logs -f` follows it through the master. The agent is killed with
SIGKILL while the job runs (the job keeps running under its shim) and
restarted on the same state dir with a new log port; the follower keeps
going (it retries while the node cannot be reached) and ends when the job
ends, having printed every line exactly once, in order. The job finishes
with its real exit code, learnt by the restarted agent.

Usage: logs_follow_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, fail, run_with_cluster,  # noqa: E402
                           wait_follower)

LINES = 40
SCRIPT = ('i=1; while [ $i -le %d ]; do echo "line $i"; i=$((i+1)); '
          'sleep 0.2; done' % LINES)


def main():
    run_with_cluster(run, "tiresias-logs-", node_timeout=30)


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=1)
    cluster.wait_nodes_up(["nodeA"])
    job_id = cluster.cli("submit", "--gpus", "1", "--name", "counter", "--",
                         "/bin/sh", "-c", SCRIPT).strip()
    env = dict(os.environ, TIRESIAS_MASTER=cluster.address)
    follower = subprocess.Popen([cluster.binary, "logs", "-f", job_id],
                                env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    cluster.wait(lambda j: j[job_id]["state"] == "running",
                 "the job to run")
    time.sleep(1.5)  # a few lines in
    cluster.kill_agent("nodeA")
    time.sleep(1.5)  # lines are written while no agent serves them
    cluster.start_agent("nodeA", gpus=1)
    jobs = cluster.wait(lambda j: j[job_id]["state"] in FINAL,
                        "the job to end", timeout_s=60)
    out, err = wait_follower(follower)
    want = ["line %d" % i for i in range(1, LINES + 1)]
    if out.splitlines() != want:
        fail("follower printed %r, want line 1 .. line %d once each" %
             (out.splitlines(), LINES))
    if jobs[job_id]["state"] != "finished":
        fail("job ended %s" % jobs[job_id]["state"])
    print("followed %d lines across an agent restart; follower said: %s" %
          (LINES, err.strip().replace("\n", " | ")))


if __name__ == "__main__":
    main()
