#!/usr/bin/python3
"""End to end, the exit codes a script gets: `tiresias submit --wait` and
`tiresias logs -f` exit as the job did. A `tiresias master` and one
`tiresias agent` as real processes; each job is a /bin/sh command whose own
exit status is the ground truth: `exit 7` gives 7, a shell killed by
SIGKILL gives 128 + 9, `true` gives 0, and a job cancelled while a client
waits gives 125. `--wait` with `--file` is refused.

Usage: exit_codes_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail, run_with_cluster  # noqa: E402


def main():
    run_with_cluster(run, "tiresias-exit-", node_timeout=30)


def submit_wait(cluster, *command):
    out = cluster.cli_raw_timeout(60, "submit", "--wait", "--gpus", "1",
                                  "--", *command)
    if out is None:
        fail("submit --wait %r did not return within 60 s" % (command,))
    job_id = out.stdout.strip()
    if not job_id.isdigit():
        fail("submit --wait printed %r, not a job id; stderr %r" %
             (out.stdout, out.stderr))
    return job_id, out


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=1)
    cluster.wait_nodes_up(["nodeA"])

    ok_id, ok = submit_wait(cluster, "/bin/true")
    if ok.returncode != 0 or ok.stderr:
        fail("a job that exits 0: submit --wait exit %d, stderr %r" %
             (ok.returncode, ok.stderr))

    seven_id, seven = submit_wait(cluster, "/bin/sh", "-c",
                                  "echo about to exit; exit 7")
    if seven.returncode != 7:
        fail("a job that exits 7: submit --wait exit %d (stderr %r)" %
             (seven.returncode, seven.stderr))
    if "job %s failed, exit code 7" % seven_id not in seven.stderr:
        fail("submit --wait said %r" % seven.stderr)

    killed_id, killed = submit_wait(cluster, "/bin/sh", "-c", "kill -9 $$")
    if killed.returncode != 128 + 9:
        fail("a job killed by SIGKILL: submit --wait exit %d, want 137" %
             killed.returncode)

    # logs -f of an ended job prints its log and exits with its code.
    logs = cluster.cli_raw("logs", "-f", seven_id)
    if logs.returncode != 7 or "about to exit" not in logs.stdout:
        fail("logs -f of the exit-7 job: exit %d, stdout %r, stderr %r" %
             (logs.returncode, logs.stdout, logs.stderr))
    logs = cluster.cli_raw("logs", "-f", ok_id)
    if logs.returncode != 0:
        fail("logs -f of a finished job: exit %d" % logs.returncode)

    # Cancelled while a client waits for it.
    env = dict(os.environ, TIRESIAS_MASTER=cluster.address)
    waiter = subprocess.Popen(
        [cluster.binary, "submit", "--wait", "--gpus", "1", "--",
         "/bin/sleep", "60"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job_id = waiter.stdout.readline().strip()
    if not job_id.isdigit():
        fail("submit --wait printed %r first, not the id" % job_id)
    cluster.wait(lambda j: j[job_id]["state"] == "running",
                 "the sleeper to run")
    cluster.cli("cancel", job_id)
    try:
        _, err = waiter.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        waiter.kill()
        fail("submit --wait kept waiting after the job was cancelled")
    if waiter.returncode != 125:
        fail("a cancelled job: submit --wait exit %d (stderr %r), want 125" %
             (waiter.returncode, err))

    refused = cluster.cli_raw("submit", "--wait", "--file", "/dev/null")
    if refused.returncode == 0 or "--wait" not in refused.stderr:
        fail("--wait with --file: exit %d, stderr %r" %
             (refused.returncode, refused.stderr))
    # `tiresias history` (sacct's part) lists these ended jobs with the
    # states and exit codes the processes had, as CSV.
    rows = cluster.cli("history", "--csv", "--format", "id,state,exit")
    want = ["JOBID,STATE,EXIT", "%s,finished,0" % ok_id,
            "%s,failed,7" % seven_id, "%s,failed," % killed_id,
            "%s,cancelled," % job_id]
    got = rows.strip().splitlines()
    if len(got) != 5 or got[:3] != want[:3] or not all(
            g.startswith(w) for g, w in zip(got[3:], want[3:])):
        fail("history --csv:\n%s\nwant rows like %r" % (rows, want))
    failed = cluster.cli("history", "--state", "failed", "--format", "id",
                         "--csv").split()
    if failed != ["JOBID", seven_id, killed_id]:
        fail("history --state failed: %r" % failed)
    none = cluster.cli("history", "--since", "2001-01-01", "--until",
                       "2001-01-02", "--csv")
    if none.strip() != "JOBID,NAME,USER,STATE,EXIT,GPUS,SUBMIT,END,WAIT,RUN,PREEMPTIONS":
        fail("history of a window with no job: %r" % none)
    bad = cluster.cli_raw("history", "--format", "id,stat")
    if bad.returncode != 1 or "unknown field \"stat\"" not in bad.stderr:
        fail("history --format id,stat: exit %d, %r" % (bad.returncode,
                                                       bad.stderr))
    print("exit codes: 0, 7, 137, logs -f 7, cancelled 125; history agrees")


if __name__ == "__main__":
    main()
