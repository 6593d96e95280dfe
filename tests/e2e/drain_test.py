#!/usr/bin/python3
"""End to end, node drain and pending reasons: a `tiresias master` (fifo)
and two separate agents x 2 emulated GPUs, /bin/sh jobs that write the node
they run on (TIRESIAS_NODE_NAME) and their pid to a marker file. Judged
from those files and from process liveness:

- drain nodeA while job 1 runs there: job 1 keeps running (same pid, never
  signalled) to its end; a new job runs on nodeB only; a 4-GPU job, which
  would fit nodeA + nodeB, waits with a reason that says nodes are drained
  (`jobs`, `jobs --json`, `job --json`); nodeA shows draining, then
  drained;
- the master restarted while nodeA is drained: still drained, same reason;
- resume nodeA (and drain nodeB): a new job starts on nodeA;
- drain nodeA --preempt: that job's process gets SIGTERM and the job
  resumes on nodeB (restart count 1) and finishes;
- bad input (unknown node, no --reason, an empty reason) fails with a clear
  message and a non-zero exit; the master lives on.

Usage: drain_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, fail, free_port, read_lines,  # noqa: E402
                           run_with_cluster)

# $1 marker, $2 seconds on a first start, $3 on a later one. Each start
# appends "start PID NODE RESTARTS"; SIGTERM appends to MARKER.term.
NODE_SCRIPT = r'''
marker=$1; first=$2; later=$3
if [ -s "$marker" ]; then secs=$later; else secs=$first; fi
echo "start $$ ${TIRESIAS_NODE_NAME:-?} ${TIRESIAS_RESTART_COUNT:-?}" >> "$marker"
trap 'echo "term $$" >> "$marker.term"; exit 143' TERM
sleep "$secs" &
wait $!
echo "end $$" >> "$marker.end"
'''


def main():
    run_with_cluster(run, "tiresias-drain-", node_timeout=6, policy="fifo")


def submit(cluster, name, gpus, first_secs, later_secs=None):
    marker = os.path.join(cluster.workdir, "marker-" + name)
    cluster.markers.append(marker)
    later = first_secs if later_secs is None else later_secs
    # One process per node: each start of a node's task is one line.
    job_id = cluster.cli("submit", "--gpus", str(gpus), "--tasks-per-node",
                         "1", "--name", name,
                         "--", "/bin/sh", "-c", NODE_SCRIPT, "sh", marker,
                         str(first_secs), str(later)).strip()
    if not job_id.isdigit():
        fail("submit printed %r, not a job id" % job_id)
    return job_id, marker


def starts(marker):
    """[(pid, node, restarts)] of each start the job's processes wrote."""
    return [tuple(l.split()[1:4]) for l in read_lines(marker)]


def alive(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except ProcessLookupError:
        return False


def node_state(cluster, name):
    rows = {l.split()[0]: l.split() for l in
            cluster.cli("nodes").splitlines()[1:] if l.strip()}
    return rows.get(name, [None, None])[1]


def check_bad_input(cluster):
    for args, words in (
            (("node", "drain", "nosuch", "--reason", "x"), "not found"),
            (("node", "drain", "nodeA"), "--reason"),
            (("node", "drain", "nodeA", "--reason", ""), "reason"),
            (("node", "resume", "nosuch"), "not found")):
        out = cluster.cli_raw(*args)
        if out.returncode == 0:
            fail("tiresias %s succeeded" % " ".join(args))
        if words not in out.stderr + out.stdout:
            fail("tiresias %s: message %r does not mention %r" %
                 (" ".join(args), out.stderr, words))
    if cluster.master.poll() is not None:
        fail("the master died on a bad request:\n" +
             cluster.tail("master.log"))
    if cluster.nodes()["nodeA"].get("drained"):
        fail("a refused drain drained nodeA")


def run(cluster):
    address = cluster.start_master("127.0.0.1:%d" % free_port())
    cluster.start_agent("nodeA")
    cluster.wait_nodes_up(["nodeA"])
    check_bad_input(cluster)

    # Job 1 on nodeA (the only node), 8 s.
    j1, m1 = submit(cluster, "first", 2, 8)
    cluster.wait(lambda j: j[j1]["state"] == "running" and
                 len(starts(m1)) == 1, "job 1 to run on nodeA")
    pid1, node1, _ = starts(m1)[0]
    if node1 != "nodeA":
        fail("job 1 ran on %s, not nodeA" % node1)
    cluster.start_agent("nodeB")
    cluster.wait_nodes_up(["nodeA", "nodeB"])

    out = cluster.cli("node", "drain", "nodeA", "--reason", "swap fan")
    if "drained" not in out:
        fail("drain printed %r" % out)
    nodes = cluster.nodes()
    if not nodes["nodeA"].get("drained") or \
            nodes["nodeA"].get("drain_reason") != "swap fan":
        fail("nodes --json does not show nodeA drained: %s" % nodes["nodeA"])
    if node_state(cluster, "nodeA") != "draining":
        fail("`tiresias nodes` does not show nodeA draining:\n" +
             cluster.cli("nodes"))

    # A new 2-GPU job goes to nodeB; a 4-GPU one would need nodeA too.
    j2, m2 = submit(cluster, "second", 2, 3)
    j3, m3 = submit(cluster, "wide", 4, 1)
    cluster.wait(lambda j: len(starts(m2)) == 1, "job 2 to start")
    if starts(m2)[0][1] != "nodeB":
        fail("job 2 ran on %s while nodeA is drained" % starts(m2)[0][1])
    jobs = cluster.wait(
        lambda j: "drained" in j[j3].get("pending_reason", ""),
        "job 3's reason to say nodes are drained")
    reason = jobs[j3]["pending_reason"]
    if reason != "needs 4 GPUs, nodes not drained have 2 (nodes drained)":
        fail("job 3's reason: %r" % reason)
    if jobs[j3].get("pending_reason_kind") != "drained":
        fail("job 3's reason kind: %r" % jobs[j3].get("pending_reason_kind"))
    if cluster.job(j3).get("pending_reason") != reason:
        fail("job --json shows another reason: %s" % cluster.job(j3))
    if "(" + reason + ")" not in cluster.cli("jobs", "--all"):
        fail("`tiresias jobs` does not show job 3's reason:\n" +
             cluster.cli("jobs", "--all"))
    if "Reason:" not in cluster.cli("job", j3):
        fail("`tiresias job` does not show the reason")
    cluster.cli("cancel", j3)
    if starts(m3):
        fail("job 3 ran: %s" % starts(m3))

    # Job 1 ran to its end where it was, once, never signalled.
    if not alive(pid1):
        fail("job 1's process died when its node was drained")
    cluster.wait(lambda j: j[j1]["state"] in FINAL and
                 j[j2]["state"] in FINAL, "jobs 1 and 2 to end", 30)
    jobs = cluster.jobs()
    if jobs[j1]["state"] != "finished" or len(starts(m1)) != 1 or \
            read_lines(m1 + ".term") or len(read_lines(m1 + ".end")) != 1:
        fail("job 1 did not run once to its end on nodeA: %s, starts %s, "
             "term %s" % (jobs[j1]["state"], starts(m1),
                          read_lines(m1 + ".term")))
    cluster.wait(lambda n: not n["nodeA"].get("job_ids"),
                 "nodeA to hold no job", source=cluster.nodes)
    if node_state(cluster, "nodeA") != "drained":
        fail("`tiresias nodes` does not show nodeA drained:\n" +
             cluster.cli("nodes"))

    # A master restart keeps the drain.
    cluster.kill_master()
    if cluster.start_master(address) != address:
        fail("the master came back on another address")
    cluster.wait_nodes_up(["nodeA", "nodeB"], timeout_s=30)
    node_a = cluster.nodes()["nodeA"]
    if not node_a.get("drained") or node_a.get("drain_reason") != "swap fan":
        fail("after a master restart nodeA is not drained: %s" % node_a)
    # Once both agents registered again: 2 up, nodeA drained.
    cluster.wait(lambda s: "2 up, 0 down, 1 drained" in s,
                 "`tiresias status` to count the drained node",
                 source=lambda: cluster.cli("status"))

    # Resumed, with nodeB drained: a new job goes to nodeA.
    cluster.cli("node", "resume", "nodeA")
    cluster.cli("node", "drain", "nodeB", "--reason", "next in line")
    j4, m4 = submit(cluster, "moved", 2, 60, 3)
    cluster.wait(lambda j: j[j4]["state"] == "running" and
                 len(starts(m4)) == 1, "job 4 to run")
    pid4, node4, _ = starts(m4)[0]
    if node4 != "nodeA":
        fail("job 4 ran on %s after nodeA was resumed" % node4)
    cluster.cli("node", "resume", "nodeB")

    # Drain with preemption: job 4 checkpoints (SIGTERM) and resumes on B.
    out = json.loads(cluster.cli("node", "drain", "nodeA", "--reason",
                                 "reboot", "--preempt", "--json"))
    if out.get("preempted_job_ids") != [int(j4)]:
        fail("drain --preempt answered %s" % out)
    cluster.wait(lambda j: len(starts(m4)) == 2, "job 4 to start again", 30)
    if read_lines(m4 + ".term") != ["term " + pid4]:
        fail("job 4's first process did not get SIGTERM: %s" %
             read_lines(m4 + ".term"))
    _, node, restarts = starts(m4)[1]
    if node != "nodeB" or restarts != "1":
        fail("job 4 resumed on %s (restarts %s), not on nodeB" %
             (node, restarts))
    jobs = cluster.wait(lambda j: j[j4]["state"] in FINAL, "job 4 to end", 30)
    if jobs[j4]["state"] != "finished" or \
            jobs[j4]["preemptions"] != 1:
        fail("job 4 ended %s after %s preemptions" %
             (jobs[j4]["state"], jobs[j4]["preemptions"]))
    if alive(pid4):
        fail("job 4's first process still runs")
    print(cluster.cli("nodes").rstrip())


if __name__ == "__main__":
    main()
