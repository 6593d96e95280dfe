#!/usr/bin/python3
"""End to end, job control: `submit --time`, `--hold`, `--no-preempt`,
`cancel` of several jobs and by filter, `hold`, `release`, `requeue`. A
`tiresias master` (tiresias-l, a 2 GPU-second queue bound, so a running
job is demoted within a second and a newcomer preempts it) and one
`tiresias agent` with 2 emulated GPUs, as real processes. Judged from what
the jobs' own processes write (their pid and the instants they started)
and from whether those processes are still alive:

- a `--time 0:03` job running `sleep 60` is dead 3 s after it started (plus
  the check period and the agent's grace), ends timeout, and `submit
  --wait` and `logs -f` exit 124;
- a `--hold` job starts no process until `release`, then runs;
- `cancel A B` stops both; `cancel --name X` only the jobs named X;
- a preemptible job is preempted by a newcomer of a higher queue, a
  `--no-preempt` one in the same place is not: the newcomer starts only
  after it ended;
- `requeue` of a running job kills its process, and it runs again as
  attempt 2;
- a held job stays held across a master restart;
- bad requests (unknown ids, unknown states, no filter) get a clear error
  and the master stays up.

Usage: jobctl_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import alive, fail, run_with_cluster  # noqa: E402

# Appends "START <unix time> <pid> <restart count>" to $1, then runs the
# rest of the arguments with exec (so the pid is the command's own).
RECORD = ('echo "START $(date +%s.%N) $$ ${TIRESIAS_RESTART_COUNT:-0}" '
          '>> "$1"; shift; exec "$@"')


def main():
    run_with_cluster(run, "tiresias-jobctl-", node_timeout=6,
                     policy="tiresias-l", grace=2,
                     master_args=["--thresholds", "2"])


def starts(path):
    """[(time, pid, restart count)] of every start recorded in `path`."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 4 and parts[0] == "START":
                    out.append((float(parts[1]), int(parts[2]),
                                int(parts[3])))
    except FileNotFoundError:
        pass
    return out


class Jobs:
    def __init__(self, cluster):
        self.cluster = cluster
        self.n = 0

    def submit(self, *flags, command=("sleep", "60"), gpus=1):
        """Submits a recorded job, one process per node (one record line
        per start); returns (id, record path)."""
        self.n += 1
        path = os.path.join(self.cluster.workdir, "record-%d" % self.n)
        self.cluster.markers.append(path)
        job_id = self.cluster.cli(
            "submit", "--gpus", str(gpus), "--tasks-per-node", "1", *flags,
            "--", "/bin/sh", "-c",
            RECORD, "sh", path, *command).strip()
        if not job_id.isdigit():
            fail("submit printed %r, not a job id" % job_id)
        return job_id, path


def state(cluster, job_id):
    return cluster.job(job_id)["state"]


def wait_state(cluster, job_id, want, timeout_s=30):
    cluster.wait(lambda j: j[job_id]["state"] == want,
                 "job %s %s" % (job_id, want), timeout_s)


def wait_started(cluster, path, count=1, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        s = starts(path)
        if len(s) >= count:
            return s
        time.sleep(0.1)
    fail("%s: %d start(s) recorded, want %d\nmaster log:\n%s" %
         (path, len(starts(path)), count, cluster.tail("master.log")))


def wait_dead(pid, timeout_s):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not alive(pid):
            return time.time()
        time.sleep(0.05)
    fail("process %d still alive after %d s" % (pid, timeout_s))


def check_timeout(cluster, jobs):
    path = os.path.join(cluster.workdir, "record-timeout")
    cluster.markers.append(path)
    out = cluster.cli_raw_timeout(
        60, "submit", "--wait", "--gpus", "1", "--time", "0:03", "--",
        "/bin/sh", "-c", RECORD, "sh", path, "sleep", "60")
    returned = time.time()
    if out is None:
        fail("submit --wait --time 0:03 did not return within 60 s")
    job_id = out.stdout.strip()
    if out.returncode != 124:
        fail("a job past its --time: submit --wait exit %d (stderr %r), "
             "want 124" % (out.returncode, out.stderr))
    (started, pid, _), = starts(path)
    if alive(pid):
        fail("the timed-out job's process %d is still alive" % pid)
    ran = returned - started
    # 3 s of run, at most 1 s to notice, SIGTERM kills sleep at once (the
    # 2 s grace is the worst case), and the waiter's 1 s poll.
    if not 3 <= ran <= 3 + 1 + 2 + 1 + 2:
        fail("the --time 0:03 job ran %.1f s before submit --wait returned" %
             ran)
    job = cluster.job(job_id)
    if job["state"] != "timeout":
        fail("job %s ended %s, want timeout" % (job_id, job["state"]))
    executed = job["total_executed_s"]
    if not 2.5 <= executed <= 6:
        fail("job %s executed %.1f s, its limit is 3 s" % (job_id, executed))
    logs = cluster.cli_raw("logs", "-f", job_id)
    if logs.returncode != 124:
        fail("logs -f of a timed-out job: exit %d, want 124" %
             logs.returncode)
    listed = cluster.cli("jobs", "--state", "timeout")
    if job_id not in listed.split():
        fail("jobs --state timeout does not list job %s:\n%s" %
             (job_id, listed))
    print("timeout: killed %.1f s after it started, exit 124" % ran)


def check_hold(cluster, jobs):
    held, path = jobs.submit("--hold", command=("true",))
    time.sleep(3)
    if starts(path):
        fail("a --hold job started: %r" % starts(path))
    job = cluster.job(held)
    if job["state"] != "pending" or not job.get("held"):
        fail("a --hold job is %s, held %s" % (job["state"], job.get("held")))
    if "held" not in cluster.cli("jobs", "--all").split():
        fail("`tiresias jobs` does not show the job held")
    if (job.get("pending_reason_kind") != "held" or
            "release" not in job.get("pending_reason", "")):
        fail("a held job's reason is %r (%s)" % (job.get("pending_reason"),
                                                  job.get("pending_reason_kind")))
    released_at = time.time()
    out = cluster.cli("release", held)
    if "released" not in out:
        fail("release said %r" % out)
    (started, _, _), = wait_started(cluster, path)
    if started < released_at - 0.5:
        fail("the held job started at %.2f, before its release at %.2f" %
             (started, released_at))
    wait_state(cluster, held, "finished")
    # hold of a running job is refused; of an ended one too.
    refused = cluster.cli_raw("hold", held)
    if refused.returncode == 0 or "ended" not in refused.stderr:
        fail("hold of a finished job: exit %d, stderr %r" %
             (refused.returncode, refused.stderr))
    print("hold: nothing ran until release, then it did")


def check_cancel(cluster, jobs):
    a, path_a = jobs.submit()
    b, path_b = jobs.submit()
    (_, pid_a, _), = wait_started(cluster, path_a)
    (_, pid_b, _), = wait_started(cluster, path_b)
    out = cluster.cli("cancel", a, b)
    for job_id in (a, b):
        if "job %s" % job_id not in out:
            fail("cancel %s %s said %r" % (a, b, out))
    wait_dead(pid_a, 10)
    wait_dead(pid_b, 10)
    wait_state(cluster, a, "cancelled")
    wait_state(cluster, b, "cancelled")

    # By name: held jobs, so that none runs meanwhile.
    x1, _ = jobs.submit("--hold", "--name", "x-job")
    x2, _ = jobs.submit("--hold", "--name", "x-job")
    y, _ = jobs.submit("--hold", "--name", "y-job")
    out = cluster.cli("cancel", "--name", "x-job")
    if ("job %s cancelled" % x1) not in out or \
            ("job %s cancelled" % x2) not in out or y in out.split():
        fail("cancel --name x-job said %r" % out)
    if state(cluster, y) != "pending":
        fail("cancel --name x-job touched job %s (y-job): %s" %
             (y, state(cluster, y)))
    for job_id in (x1, x2):
        if state(cluster, job_id) != "cancelled":
            fail("job %s named x-job is %s" % (job_id,
                                               state(cluster, job_id)))
    cluster.cli("cancel", y)

    # Bad requests: clear errors, exit 1, and the master stays up.
    for args, says in [
            (("cancel",), "expected job ids"),
            (("cancel", "--state", "bogus"), "--state bogus"),
            (("cancel", "--state", "finished"), "have ended"),
            (("cancel", "1", "--name", "x"), "not both"),
            (("cancel", "999999"), "999999"),
            (("requeue", "999999"), "999999"),
            (("hold", "0"), "hold: JOB 0: expected a job id"),
            (("cancel", "1x"), "cancel: JOB 1x: expected a job id"),
            (("release", a), "already ended"),
    ]:
        out = cluster.cli_raw(*args)
        if out.returncode == 0 or says not in out.stderr:
            fail("tiresias %s: exit %d, stderr %r (want %r)" %
                 (" ".join(args), out.returncode, out.stderr, says))
    if cluster.master.poll() is not None:
        fail("the master died on a bad request")
    print("cancel: two ids at once, by name, bad requests refused")


def check_no_preempt(cluster, jobs):
    # Control: a preemptible 2-GPU job, demoted after 1 s (2 GPU-s), is
    # preempted by a 1-GPU newcomer of the first queue.
    p, path_p = jobs.submit(gpus=2)
    (_, pid_p, _), = wait_started(cluster, path_p)
    time.sleep(1.5)
    s1, path_s1 = jobs.submit(command=("sleep", "1"))
    wait_dead(pid_p, 15)
    wait_started(cluster, path_s1)
    cluster.cli("cancel", p)
    wait_state(cluster, s1, "finished")
    wait_state(cluster, p, "cancelled")

    # The same with --no-preempt: it keeps running; the newcomer waits.
    n, path_n = jobs.submit("--no-preempt", gpus=2, command=("sleep", "6"))
    (_, pid_n, _), = wait_started(cluster, path_n)
    time.sleep(1.5)
    s2, path_s2 = jobs.submit(command=("sleep", "1"))
    ended = wait_dead(pid_n, 20)
    (s2_started, _, _), = wait_started(cluster, path_s2)
    if len(starts(path_n)) != 1:
        fail("the --no-preempt job started %d times" % len(starts(path_n)))
    if s2_started < ended - 0.5:
        fail("the newcomer started at %.2f while the --no-preempt job ran "
             "(until %.2f)" % (s2_started, ended))
    wait_state(cluster, n, "finished")
    if cluster.job(n)["preemptions"] != 0:
        fail("the --no-preempt job counts preemptions")
    wait_state(cluster, s2, "finished")
    print("no-preempt: the control was preempted, the no-preempt job not")


def check_requeue(cluster, jobs):
    r, path = jobs.submit()
    (_, pid1, count1), = wait_started(cluster, path)
    out = cluster.cli("requeue", r)
    if "requeued" not in out:
        fail("requeue said %r" % out)
    wait_dead(pid1, 10)
    s = wait_started(cluster, path, count=2)
    (_, pid2, count2) = s[1]
    if pid2 == pid1 or not alive(pid2) or count2 != count1 + 1:
        fail("after requeue: starts %r" % s)
    wait_state(cluster, r, "running")
    if cluster.job(r)["attempt"] != 2:
        fail("the requeued job runs attempt %s, want 2" %
             cluster.job(r)["attempt"])
    cluster.cli("cancel", r)
    wait_dead(pid2, 10)
    print("requeue: killed, ran again as attempt 2")


def check_hold_survives_restart(cluster, jobs):
    held, path = jobs.submit("--hold", command=("true",))
    address = cluster.address
    cluster.kill_master()
    cluster.start_master(address)
    cluster.wait_nodes_up(["nodeA"], timeout_s=20)
    time.sleep(2)
    job = cluster.job(held)
    if not job.get("held") or starts(path):
        fail("after a master restart the held job is %s, held %s, "
             "starts %r" % (job["state"], job.get("held"), starts(path)))
    cluster.cli("release", held)
    wait_started(cluster, path)
    wait_state(cluster, held, "finished")
    print("hold: durable across a master restart")


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=2)
    cluster.wait_nodes_up(["nodeA"])
    jobs = Jobs(cluster)
    check_timeout(cluster, jobs)
    check_hold(cluster, jobs)
    check_cancel(cluster, jobs)
    check_no_preempt(cluster, jobs)
    check_requeue(cluster, jobs)
    check_hold_survives_restart(cluster, jobs)


if __name__ == "__main__":
    main()
