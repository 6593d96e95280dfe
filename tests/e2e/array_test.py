#!/usr/bin/python3
"""End to end, job arrays (`submit --array`, Slurm's). A `tiresias master`
and one `tiresias agent` with 4 emulated GPUs, as real processes, so that
GPUs alone would let 4 jobs of the array run at once. `--array 0-5%2` of a
task that writes, into a file named after its own TIRESIAS_JOB_ID, the
TIRESIAS_ARRAY_* it was given and the instants it started and ended.
Judged from those files (ground truth), not from the master's word:

- every index 0..5 ran exactly once, each job saw the index the master
  lists for it (and the array's id, count, smallest and largest index);
- at no instant did more than 2 of the array's jobs run;
- while the limit holds jobs back, they wait with the reason
  "array_limit" in `jobs --json`;
- `--output out-%j-%a.txt` wrote each job's stdout to a file named by its
  id and index;
- `submit` prints the array's id on stdout (its first job's), the id range
  on stderr, and with --json every job's id; `jobs --array` lists one
  array; `cancel --array` cancels it whole and nothing else;
- bad arrays (`5-2`, `0-99%0`, `a-b`, too many indices) are refused with an
  error naming --array, and create nothing.

Usage: array_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail, run_with_cluster  # noqa: E402

LIMIT = 2
# $1: the folder for records. Writes PID (for the test's clean-up, which
# kills the process group of any line whose second word is a number: the
# other lines' second words never are), the array variables, START and END
# (Unix seconds) to $1/rec-$TIRESIAS_JOB_ID, and one line to stdout (the
# --output file).
TASK = ('r="$1/rec-$TIRESIAS_JOB_ID"; echo "PID $$" >> "$r"; '
        'echo "ARRAY job=$TIRESIAS_ARRAY_JOB_ID '
        'task=$TIRESIAS_ARRAY_TASK_ID count=$TIRESIAS_ARRAY_TASK_COUNT '
        'min=$TIRESIAS_ARRAY_TASK_MIN max=$TIRESIAS_ARRAY_TASK_MAX" >> "$r"; '
        'echo "START $(date +%s.%N)" >> "$r"; '
        'echo "index=$TIRESIAS_ARRAY_TASK_ID"; sleep 2; '
        'echo "END $(date +%s.%N)" >> "$r"')


def main():
    run_with_cluster(run, "tiresias-array-", node_timeout=6)


def read_record(path):
    out = {"START": [], "END": [], "ARRAY": []}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in out:
                out[parts[0]].append(parts[1:])
    return out


def check_refusals(cluster):
    before = len(cluster.jobs())
    for spec, says in (("5-2", '--array "5-2": range ends (2) before it '
                               'starts (5)'),
                       ("0-99%0", "the running limit after % must be an "
                                  "integer from 1 to 10000"),
                       ("a-b", '--array "a-b": range bounds must be'),
                       ("0-10000", "at most 10000 jobs in one array"),
                       ("1,1", "index 1 is given twice")):
        out = cluster.cli_raw("submit", "--gpus", "1", "--array", spec, "--",
                              "true")
        if out.returncode == 0 or says not in out.stderr:
            fail("submit --array %s: exit %d, stderr %r (want %r)" %
                 (spec, out.returncode, out.stderr, says))
    if len(cluster.jobs()) != before:
        fail("a refused array created jobs")
    print("refusals: 5-2, 0-99%0, a-b, 0-10000, 1,1")


def check_json_and_cancel(cluster):
    """A held array (it never runs): --json lists its ids; cancel --array
    takes all of it and leaves an unrelated job alone."""
    other = cluster.cli("submit", "--gpus", "1", "--hold", "--", "true")
    other = other.strip()
    out = cluster.cli("submit", "--gpus", "1", "--hold", "--array", "1,3",
                      "--json", "--", "true")
    answer = json.loads(out)
    array_id = str(answer["job_id"])
    ids = [str(i) for i in answer.get("array_job_ids", [])]
    if len(ids) != 2 or ids[0] != array_id:
        fail("submit --array 1,3 --json: %r" % answer)
    listed = json.loads(cluster.cli("jobs", "--all", "--array", array_id, "--json"))
    got = sorted((str(j["id"]), j["array_index"])
                 for j in listed.get("jobs", []))
    if got != sorted(zip(ids, (1, 3))):
        fail("jobs --array %s: %r, want ids %r with indices 1, 3" %
             (array_id, got, ids))
    # ARRAYID_INDEX names a job of the array, as squeue shows it.
    shown = json.loads(cluster.cli("job", array_id + "_3", "--json"))
    if str(shown["id"]) != ids[1] or shown["array_index"] != 3:
        fail("job %s_3: id %r index %r, want %s and 3" %
             (array_id, shown["id"], shown["array_index"], ids[1]))
    missing = cluster.cli_raw("job", array_id + "_2")
    if missing.returncode == 0 or \
            ("array %s has no index 2" % array_id) not in missing.stderr:
        fail("job %s_2: exit %d, stderr %r" % (array_id, missing.returncode,
                                               missing.stderr))
    held = cluster.cli("hold", array_id + "_1")  # held since submitted
    if ("job %s: nothing to do" % ids[0]) not in held:
        fail("hold %s_1: %r, want job %s named" % (array_id, held, ids[0]))
    cluster.cli("cancel", "--array", array_id)
    jobs = cluster.jobs()
    for job_id in ids:
        if jobs[job_id]["state"] != "cancelled":
            fail("job %s of array %s after cancel --array: %s" %
                 (job_id, array_id, jobs[job_id]["state"]))
    if jobs[other]["state"] != "pending":
        fail("cancel --array %s also touched job %s: %s" %
             (array_id, other, jobs[other]["state"]))
    cluster.cli("cancel", other)
    print("--json lists the array's ids; cancel --array takes it whole")


def run_array(cluster):
    records = os.path.join(cluster.workdir, "records")
    os.mkdir(records)
    output = os.path.join(cluster.workdir, "out-%j-%a.txt")
    sub = cluster.cli_raw("submit", "--gpus", "1", "--name", "sweep",
                          "--array", "0-5%%%d" % LIMIT, "--output", output,
                          "--chdir", cluster.workdir, "--", "/bin/sh", "-c",
                          TASK, "sh", records)
    if sub.returncode != 0:
        fail("submit --array: exit %d: %s" % (sub.returncode, sub.stderr))
    array_id = sub.stdout.strip()
    if not array_id.isdigit():
        fail("submit --array printed %r, not the array's id" % sub.stdout)
    ids = [str(int(array_id) + i) for i in range(6)]
    want = "array %s (0-5%%%d): 6 jobs, ids %s-%s" % (array_id, LIMIT, ids[0],
                                                      ids[-1])
    if want not in sub.stderr:
        fail("submit --array stderr %r, want %r" % (sub.stderr, want))
    for job_id in ids:
        cluster.markers.append(os.path.join(records, "rec-" + job_id))

    # While the first two run, the others wait for the limit, not GPUs.
    seen_limit = False
    deadline = time.time() + 20
    while time.time() < deadline and not seen_limit:
        jobs = json.loads(cluster.cli("jobs", "--all", "--array", array_id, "--json"))
        for j in jobs.get("jobs", []):
            if j.get("pending_reason_kind") == \
                    "array_limit":
                if ("array limit: " not in (j.get("pending_reason") or "") or
                        "at most %d at once" % LIMIT not in
                        j["pending_reason"]):
                    fail("job %s: reason %r" % (j["id"],
                                                j.get("pending_reason")))
                seen_limit = True
        time.sleep(0.1)
    if not seen_limit:
        fail("no job of the array ever waited with the array-limit reason")
    table = cluster.cli("jobs", "--all", "--array", array_id)
    if "%s_3" % array_id not in table:
        fail("`jobs --array %s` does not show %s_3:\n%s" % (array_id,
                                                            array_id, table))
    shown = cluster.cli("job", ids[3])
    if "%s_3 (array %s: 0-5, at most %d running)" % (
            array_id, array_id, LIMIT) not in shown:
        fail("`tiresias job %s` has no Array line:\n%s" % (ids[3], shown))

    cluster.wait(lambda j: all(j[i]["state"] == "finished"
                               for i in ids),
                 "the array's 6 jobs finished", timeout_s=90)
    listed = {str(j["id"]): j for j in json.loads(
        cluster.cli("jobs", "--all", "--array", array_id, "--json"))["jobs"]}
    if sorted(listed) != sorted(ids):
        fail("jobs --array %s lists %r, want %r" % (array_id, sorted(listed),
                                                    ids))

    # Ground truth: the files the tasks wrote.
    intervals = []
    indices = []
    for job_id in ids:
        path = os.path.join(records, "rec-" + job_id)
        if not os.path.exists(path):
            fail("job %s never ran (no %s)" % (job_id, path))
        rec = read_record(path)
        if len(rec["START"]) != 1 or len(rec["END"]) != 1:
            fail("job %s ran %d times (%r)" % (job_id, len(rec["START"]),
                                               rec))
        index = listed[job_id]["array_index"]
        seen = rec["ARRAY"][0]
        want = ["job=" + array_id, "task=%d" % index, "count=6", "min=0",
                "max=5"]
        if seen != want:
            fail("job %s (index %d) saw TIRESIAS_ARRAY_* %r, want %r" %
                 (job_id, index, seen, want))
        indices.append(index)
        intervals.append((float(rec["START"][0][0]),
                          float(rec["END"][0][0]), job_id))
        out = os.path.join(cluster.workdir, "out-%s-%d.txt" % (job_id, index))
        try:
            with open(out) as f:
                text = f.read()
        except FileNotFoundError:
            fail("--output out-%%j-%%a.txt: no %s" % out)
        if text.strip() != "index=%d" % index:
            fail("%s holds %r" % (out, text))
    if sorted(indices) != list(range(6)):
        fail("indices run: %r, want each of 0..5 once" % sorted(indices))
    # `jobs --format ... --csv` says the same as the tasks did.
    csv_text = cluster.cli("jobs", "--all", "--array", array_id, "--format",
                           "id,array,index,state,reason", "--csv")
    want_csv = "JOBID,ARRAY,INDEX,STATE,REASON\n" + "".join(
        "%s,%s,%d,finished,-\n" % (job_id, array_id,
                                    listed[job_id]["array_index"])
        for job_id in ids)
    if csv_text != want_csv:
        fail("jobs --format --csv:\n%s\nwant:\n%s" % (csv_text, want_csv))
    # At every start, how many ran (the intervals are the tasks' own).
    most = 0
    for start, _, job_id in intervals:
        running = [j for s, e, j in intervals if s <= start < e]
        most = max(most, len(running))
        if len(running) > LIMIT:
            fail("at %.3f jobs %s ran at once; the limit is %d\n%r" %
                 (start, ",".join(running), LIMIT, intervals))
    first = min(s for s, _, _ in intervals)
    last = max(e for _, e, _ in intervals)
    print("array %s: indices 0..5 ran once each, at most %d at once (limit "
          "%d), %.1f s in all; %%a output files right" %
          (array_id, most, LIMIT, last - first))


def check_wait(cluster):
    """--wait on an array waits for all of its jobs and exits with the
    highest code (Slurm's): jobs exiting 0, 1 and 2 give 2."""
    out = cluster.cli_raw("submit", "--gpus", "1", "--array", "0-2",
                          "--wait", "--", "/bin/sh", "-c",
                          "exit $TIRESIAS_ARRAY_TASK_ID")
    array_id = out.stdout.strip()
    if out.returncode != 2 or not array_id.isdigit():
        fail("submit --array 0-2 --wait: exit %d (want 2), stdout %r, "
             "stderr %r" % (out.returncode, out.stdout, out.stderr))
    listed = json.loads(cluster.cli("jobs", "--all", "--array", array_id, "--json"))
    states = sorted(j["state"] for j in listed["jobs"])
    if states != ["failed", "failed",
                  "finished"]:
        fail("after --wait, the array's jobs are %r" % states)
    if "2 of 3 jobs did not finish with 0; exit code 2" not in out.stderr:
        fail("submit --array --wait stderr %r" % out.stderr)
    print("--wait on an array: exit code 2, the highest of 0, 1, 2")


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=4)
    cluster.wait_nodes_up(["nodeA"])
    check_refusals(cluster)
    check_json_and_cancel(cluster)
    run_array(cluster)
    check_wait(cluster)


if __name__ == "__main__":
    main()
