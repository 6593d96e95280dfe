#!/usr/bin/python3
"""End to end, job dependencies (`submit --dependency`). A `tiresias
master` and one `tiresias agent` with 2 emulated GPUs, as real processes,
so that a dependent job would have a free GPU beside the job it waits for.
Judged from what the jobs' own processes write (the instant each started
and the instant it ended, with its exit code):

- B (afterok:A) starts only after A's process ended (exit 0); while A runs
  B is pending with the reason "waiting for job A (afterok)";
- C (afterok:F, F exits 3) never starts a process and ends failed, with
  the dependency that failed in `tiresias job C`;
- D (afterany:F) runs, after F's process ended; E (afternotok:F) too;
- a master restart while G (afterok:H) waits keeps it waiting; it runs
  after H's process ended;
- bad syntax, an unknown id and the job's own future id are refused with
  errors that name the flag or the id, and create nothing.

Usage: dependency_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail, run_with_cluster  # noqa: E402

# Appends "START <unix time> <pid>" to $1, runs the rest of the arguments,
# then appends "END <unix time> <exit code>" and exits with that code.
RECORD = ('f="$1"; shift; echo "START $(date +%s.%N) $$" >> "$f"; "$@"; '
          'rc=$?; echo "END $(date +%s.%N) $rc" >> "$f"; exit $rc')


def main():
    run_with_cluster(run, "tiresias-deps-", node_timeout=6)


def record(path):
    """{"START": (time, pid), "END": (time, code)}, as far as written."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] in ("START", "END"):
                    out[parts[0]] = (float(parts[1]), int(parts[2]))
    except FileNotFoundError:
        pass
    return out


class Jobs:
    def __init__(self, cluster):
        self.cluster = cluster
        self.n = 0

    def submit(self, *flags, command=("true",)):
        """Submits a recorded 1-GPU job; returns (id, record path)."""
        self.n += 1
        path = os.path.join(self.cluster.workdir, "record-%d" % self.n)
        self.cluster.markers.append(path)
        job_id = self.cluster.cli(
            "submit", "--gpus", "1", *flags, "--", "/bin/sh", "-c", RECORD,
            "sh", path, *command).strip()
        if not job_id.isdigit():
            fail("submit printed %r, not a job id" % job_id)
        return job_id, path


def wait_record(cluster, path, key, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        r = record(path)
        if key in r:
            return r
        time.sleep(0.1)
    fail("%s: no %s recorded after %d s\njobs:\n%s\nmaster log:\n%s" %
         (path, key, timeout_s, cluster.cli("jobs", "--all"),
          cluster.tail("master.log")))


def wait_state(cluster, job_id, want, timeout_s=30):
    cluster.wait(lambda j: j[job_id]["state"] == want,
                 "job %s %s" % (job_id, want), timeout_s)


def check_waiting(cluster, job_id, on, kind):
    job = cluster.job(job_id)
    want = "waiting for job %s (%s)" % (on, kind)
    if (job["state"] != "pending" or
            not job.get("waiting_on_dependencies") or
            job.get("pending_reason_kind") !=
            "dependency" or
            job.get("pending_reason") != want):
        fail("job %s while %s runs: %s, waiting %s, reason %r (%s); want "
             "pending, %r" % (job_id, on, job["state"],
                              job.get("waiting_on_dependencies"),
                              job.get("pending_reason"),
                              job.get("pending_reason_kind"), want))
    deps = job.get("dependencies", [])
    if [(d.get("kind"), d.get("job_id")) for d in deps] != [
            ("afterok" if kind == "afterok" else "afterany", int(on))]:
        fail("job %s --json dependencies: %r" % (job_id, deps))


def check_after_ok(cluster, jobs):
    a, path_a = jobs.submit(command=("sleep", "3"))
    b, path_b = jobs.submit("--dependency", "afterok:%s" % a)
    wait_record(cluster, path_a, "START")
    time.sleep(1)
    if record(path_b):
        fail("B (afterok:%s) started while A runs: %r" % (a, record(path_b)))
    check_waiting(cluster, b, a, "afterok")
    text = cluster.cli("job", b)
    if "afterok:%s (waiting)" % a not in text:
        fail("`tiresias job %s` does not show its dependency:\n%s" % (b, text))
    a_end = wait_record(cluster, path_a, "END")["END"]
    b_rec = wait_record(cluster, path_b, "END")
    if a_end[1] != 0:
        fail("A exited %d" % a_end[1])
    if b_rec["START"][0] < a_end[0]:
        fail("B started at %.3f, before A's process ended at %.3f" %
             (b_rec["START"][0], a_end[0]))
    wait_state(cluster, b, "finished")
    print("afterok: B started %.2f s after A's process ended" %
          (b_rec["START"][0] - a_end[0]))


def check_failure(cluster, jobs):
    f, path_f = jobs.submit(command=("sh", "-c", "sleep 2; exit 3"))
    c, path_c = jobs.submit("--dependency", "afterok:%s" % f)
    d, path_d = jobs.submit("--dependency", "afterany:%s" % f)
    e, path_e = jobs.submit("--dependency", "afternotok:%s" % f)
    f_end = wait_record(cluster, path_f, "END")["END"]
    if f_end[1] != 3:
        fail("F exited %d, want 3" % f_end[1])
    wait_state(cluster, c, "failed")
    for job_id, path in ((d, path_d), (e, path_e)):
        r = wait_record(cluster, path, "END")
        if r["START"][0] < f_end[0]:
            fail("job %s started at %.3f, before F's process ended at %.3f"
                 % (job_id, r["START"][0], f_end[0]))
        wait_state(cluster, job_id, "finished")
    time.sleep(1)
    if record(path_c):
        fail("C (afterok on a failed job) started a process: %r" %
             record(path_c))
    text = cluster.cli("job", c)
    want = "dependency afterok:%s can never be met: job %s ended failed" % (
        f, f)
    if want not in text:
        fail("`tiresias job %s` does not say %r:\n%s" % (c, want, text))
    print("afterok on a failed job: never started, failed; afterany and "
          "afternotok ran after it")


def check_restart(cluster, jobs):
    h, path_h = jobs.submit(command=("sleep", "6"))
    g, path_g = jobs.submit("--dependency", "afterok:%s" % h)
    wait_record(cluster, path_h, "START")
    address = cluster.address
    cluster.kill_master()
    cluster.start_master(address)
    cluster.wait_nodes_up(["nodeA"], timeout_s=20)
    # Checked only while H still runs (a slow restart may outlast it).
    seen_waiting = "END" not in record(path_h)
    if seen_waiting:
        check_waiting(cluster, g, h, "afterok")
    h_end = wait_record(cluster, path_h, "END")["END"]
    g_rec = wait_record(cluster, path_g, "END", timeout_s=40)
    if g_rec["START"][0] < h_end[0]:
        fail("after a restart G started at %.3f, before H ended at %.3f" %
             (g_rec["START"][0], h_end[0]))
    wait_state(cluster, g, "finished")
    print("afterok: the wait survived a master restart (seen waiting "
          "after it: %s)" % seen_waiting)


def check_refusals(cluster):
    before = len(cluster.jobs())
    for spec, says in (("afterok:x", "--dependency"),
                       ("after:1", "--dependency"),
                       ("afterok:9999", "9999")):
        out = cluster.cli_raw("submit", "--gpus", "1", "--dependency", spec,
                              "--", "true")
        if out.returncode == 0 or says not in out.stderr:
            fail("submit --dependency %s: exit %d, stderr %r (want %r)" %
                 (spec, out.returncode, out.stderr, says))
    if len(cluster.jobs()) != before:
        fail("a refused submission created a job")
    print("refusals: bad syntax and unknown ids")


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=2)
    cluster.wait_nodes_up(["nodeA"])
    jobs = Jobs(cluster)
    check_after_ok(cluster, jobs)
    check_failure(cluster, jobs)
    check_refusals(cluster)
    check_restart(cluster, jobs)


if __name__ == "__main__":
    main()
