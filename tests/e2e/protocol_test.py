#!/usr/bin/python3
"""End to end, the agent protocol's promises with real daemons, each a
reproduction of a failure seen from outside (issue: "no job ever runs
twice, no launch is lost"), judged from the task's own records:

  stop_before_start  A stopped (SIGSTOP) agent; a job is submitted and
                     cancelled before the agent can hear of it; the agent is
                     resumed. The job's process must never start, the job
                     ends cancelled and the next job gets the GPU.
  fencing            An agent is stopped (SIGSTOP) for twice the node
                     timeout while its job runs. Its task must stop on its
                     own (the lease lapses) before the master reruns the job
                     on another node: the two copies never overlap; the job
                     finishes, preempted once, never failed.
  up_restart         `tiresias up` is stopped with Ctrl-C while a job runs
                     and started again on the same state folder: the job
                     was preempted (checkpointed), not failed, and resumes
                     from its checkpoint to finish.

Usage: protocol_test.py TIRESIAS_BINARY CASE
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, events, expected_launch_events,  # noqa: E402
                           fail, free_port, launch_events, read_lines,
                           read_task_records, run_with_cluster)

TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "chaos_task.py")


def task_records(ground):
    """(attempt, start, last alive, end code) of each task, by start."""
    return [(t["attempt"], t["start"], t["last"], t["code"])
            for t in read_task_records(ground)]


def violations(ground):
    return read_lines(os.path.join(ground, "violations"))


def stop_before_start(cluster):
    cluster.start_master()
    agent = cluster.start_agent("nodeA", gpus=1)
    cluster.wait_nodes_up(["nodeA"])
    marker = os.path.join(cluster.workdir, "started")
    os.kill(agent.pid, signal.SIGSTOP)
    try:
        job = cluster.cli("submit", "--gpus", "1", "--", "/bin/sh", "-c",
                          "echo started >> %s; exec sleep 300" % marker
                          ).strip()
        time.sleep(0.5)  # the master decides and pushes; nobody hears
        cluster.cli("cancel", job)
    finally:
        os.kill(agent.pid, signal.SIGCONT)
    jobs = cluster.wait(lambda j: j[job]["state"] in FINAL,
                        "the cancelled job to end", timeout_s=20)
    if jobs[job]["state"] != "cancelled":
        fail("job %s ended %s" % (job, jobs[job]["state"]))
    # Several heartbeats later, still nothing ran.
    time.sleep(2)
    if os.path.exists(marker):
        fail("the cancelled job's process started: %s" % read_lines(marker))
    after = cluster.cli("submit", "--gpus", "1", "--", "/bin/true").strip()
    jobs = cluster.wait(lambda j: j[after]["state"] in FINAL,
                        "the next job to run on the freed GPU", timeout_s=20)
    if jobs[after]["state"] != "finished":
        fail("next job ended %s" % jobs[after]["state"])
    print("cancelled before the agent heard of it: never started")


def fencing(cluster):
    ground = os.path.join(cluster.workdir, "ground")
    os.makedirs(ground)
    cluster.start_master()
    agent_a = cluster.start_agent("nodeA", gpus=1)
    cluster.wait_nodes_up(["nodeA"])
    job = cluster.cli("submit", "--gpus", "1", "--", "/usr/bin/python3",
                      "-S", TASK, ground, "12").strip()
    cluster.wait(lambda j: j[job]["state"] == "running",
                 "the job to run on nodeA")
    cluster.start_agent("nodeB", gpus=1)
    cluster.wait_nodes_up(["nodeA", "nodeB"])
    time.sleep(1)  # some progress on nodeA
    os.kill(agent_a.pid, signal.SIGSTOP)
    stopped_at = time.time()
    # Declared lost after the node timeout; the job reruns on nodeB.
    cluster.wait(lambda n: n["nodeA"]["state"] == "down",
                 "nodeA to be declared lost", timeout_s=20,
                 source=cluster.nodes)
    cluster.wait(lambda j: j[job]["attempt"] >= 2 and
                 j[job]["state"] == "running",
                 "the job to run again on nodeB", timeout_s=20)
    time.sleep(max(0.0, stopped_at + 2 * cluster.node_timeout - time.time()))
    os.kill(agent_a.pid, signal.SIGCONT)
    jobs = cluster.wait(lambda j: j[job]["state"] in FINAL, "the job to end",
                        timeout_s=60)
    records = task_records(ground)
    print("copies (attempt, start, last alive, code): %s" %
          [(a, round(s - stopped_at, 2), round(l - stopped_at, 2), c)
           for a, s, l, c in records])
    if violations(ground):
        fail("the tasks saw: %s" % violations(ground))
    if jobs[job]["state"] != "finished":
        fail("job ended %s: %s" % (jobs[job]["state"],
                                   events(cluster.job(job))))
    if len(records) < 2:
        fail("the job ran %d copies, want at least 2" % len(records))
    first, second = records[0], records[1]
    if first[3] != 143:
        fail("nodeA's copy ended %s, not by the fence's SIGTERM (143)" %
             (first[3],))
    if second[1] < first[2]:
        fail("nodeB's copy started at %.3f while nodeA's ran until %.3f" %
             (second[1], first[2]))
    if jobs[job]["preemptions"] < 1:
        fail("no preemption counted: %s" % events(cluster.job(job)))
    # Each copy shows in the job's events with its attempt: started on
    # nodeA, preempted when nodeA was lost, resumed on nodeB (the job
    # finished, so every copy but the last was preempted).
    want = expected_launch_events([(a, i + 1 < len(records))
                                   for i, (a, _, _, _) in enumerate(records)])
    got = launch_events(cluster.job(job))
    if got != want:
        fail("job events %s; the task's copies call for %s" % (got, want))
    print("nodeA's copy was fenced %.2f s after the stop; nodeB's started "
          "%.2f s after that" % (first[2] - stopped_at, second[1] - first[2]))


def up_restart(binary):
    with tempfile.TemporaryDirectory(prefix="tiresias-up-") as workdir:
        ground = os.path.join(workdir, "ground")
        os.makedirs(ground)
        state = os.path.join(workdir, "state")
        address = "127.0.0.1:%d" % free_port()

        def up():
            # --allow-root-tasks: run as root (as CI does), the jobs are
            # root's.
            proc = subprocess.Popen(
                [binary, "up", "--insecure", "--agents", "1", "--gpus", "1",
                 "--listen",
                 address, "--state-dir", state, "--grace", "3",
                 "--allow-root-tasks", "--checkpoint-base",
                 os.path.join(state, "checkpoints")],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = proc.stdout.readline()
            if "master on " not in line:
                fail("tiresias up did not start: %r" % line)
            return proc

        def cli(*args):
            out = subprocess.run([binary] + list(args), capture_output=True,
                                 text=True, timeout=30,
                                 env=dict(os.environ,
                                          TIRESIAS_MASTER=address))
            if out.returncode != 0:
                fail("tiresias %s: %s" % (" ".join(args), out.stderr))
            return out.stdout

        def job_state(job):
            import json
            return json.loads(cli("job", job, "--json"))

        def wait(pred, what, timeout_s=30):
            deadline = time.time() + timeout_s
            while time.time() < deadline:
                job = job_state(job_id)
                if pred(job):
                    return job
                time.sleep(0.2)
            fail("timed out waiting for %s: %s" % (what, job_state(job_id)))

        proc = up()
        try:
            job_id = cli("submit", "--gpus", "1", "--", "/usr/bin/python3",
                         "-S", TASK, ground, "5").strip()
            wait(lambda j: j["state"] == "running", "the job to run")
            time.sleep(1.5)
            proc.send_signal(signal.SIGINT)  # Ctrl-C
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                fail("tiresias up did not stop within 30 s of Ctrl-C")
            if proc.returncode != 0:
                fail("tiresias up exited %d: %s" %
                     (proc.returncode, proc.stderr.read()))
        finally:
            if proc.poll() is None:
                proc.kill()
        proc = up()
        try:
            job = job_state(job_id)
            if job["state"] in ("failed", "cancelled"):
                fail("after the restart the job is %s: %s" %
                     (job["state"], events(job)))
            job = wait(lambda j: j["state"] in FINAL, "the job to end", 60)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
        records = task_records(ground)
        print("runs (attempt, code): %s; events %s" %
              ([(a, c) for a, _, _, c in records], events(job)))
        if job["state"] != "finished":
            fail("job ended %s: %s" % (job["state"], events(job)))
        if [c for _, _, _, c in records] != [143, 0]:
            fail("want a first run stopped by SIGTERM (143) and a second "
                 "that finished (0), got %s" % records)
        kinds = [k for k, _ in events(job)]
        if "failed" in kinds or job["preemptions"] != 1 or \
                "resumed" not in kinds:
            fail("want one preemption and a resume, no failure: %s" % kinds)
        # Every run the task recorded shows in the job's events with its
        # attempt: started, preempted (by the Ctrl-C), resumed.
        want = expected_launch_events([(a, c == 143)
                                       for a, _, _, c in records])
        if launch_events(job) != want:
            fail("job events %s; the task's runs call for %s" %
                 (launch_events(job), want))
        ran = sum(l - s for _, s, l, _ in records)
        if ran > 5 + 2:  # resumed from its checkpoint, not from scratch
            fail("the two runs took %.1f s for 5 s of work" % ran)


def main():
    binary, case = sys.argv[1], sys.argv[2]
    if case == "stop_before_start":
        run_with_cluster(stop_before_start, "tiresias-sbs-")
    elif case == "fencing":
        # Lease 4 - 1 - 1 = 2 s.
        run_with_cluster(fencing, "tiresias-fence-", node_timeout=4,
                         grace=1)
    elif case == "up_restart":
        started = time.time()
        up_restart(binary)
        print("PASS in %.1f s" % (time.time() - started))
    else:
        fail("unknown case %s" % case)


if __name__ == "__main__":
    main()
