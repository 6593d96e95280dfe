#!/usr/bin/python3
"""End to end: `tiresias up` with 2 agents x 2 emulated GPUs runs a 4-GPU
PyTorch DDP job of examples/train.py spanning both agents; under
tiresias-l with a low threshold it is demoted, two 1-GPU jobs arrive and
preempt it (it checkpoints on SIGTERM), it resumes from its checkpoint on
both agents and finishes with exactly the steps asked for. Its logs are
read through the master (`tiresias logs`, which the master fetches from
the agents), and `tiresias logs -f` started before the preemption follows
it into the resumed launch and ends with the job. The same
submissions under yarn-cs make the short jobs wait for the long one, so
their JCTs are higher. Real processes, real gRPC, real SQLite, real torch.

Usage: preemption_test.py TIRESIAS_BINARY REPO_ROOT. Exit 77 (skipped) when
/usr/bin/python3 cannot import torch.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (expected_launch_events,  # noqa: E402
                           launch_events, wait_follower)

SKIP = 77
LONG_STEPS = 150


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


class Cluster:
    def __init__(self, binary, state_dir, policy):
        self.binary = binary
        self.state_dir = state_dir
        # --allow-root-tasks: run as root (as CI does), the jobs are root's.
        self.proc = subprocess.Popen(
            [binary, "up", "--insecure", "--agents", "2", "--gpus", "2",
             "--listen", "127.0.0.1:0", "--state-dir", state_dir,
             "--policy", policy, "--thresholds", "20", "--grace", "20",
             "--allow-root-tasks",
             # Checkpoints in the test's folder, not root's home.
             "--checkpoint-base", os.path.join(state_dir, "checkpoints")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "master on " not in line:
            fail("tiresias up did not start: %r %s" %
                 (line, self.proc.stderr.read() if self.proc.poll() else ""))
        self.address = line.split("master on ")[1].split(",")[0]

    def cli(self, *args):
        env = dict(os.environ, TIRESIAS_MASTER=self.address)
        out = subprocess.run([self.binary] + list(args), env=env,
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            fail("tiresias %s: %s" % (" ".join(args), out.stderr))
        return out.stdout

    def submit(self, gpus, name, *command):
        return self.cli("submit", "--gpus", str(gpus), "--name", name,
                        "--", *command).strip()

    def jobs(self):
        # Keyed by the id as `submit` prints it (JSON ids are numbers).
        return {str(j["id"]): j for j in json.loads(self.cli("jobs", "--all", "--json"))
                .get("jobs", [])}

    def wait(self, predicate, what, timeout_s=120):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            jobs = self.jobs()
            if predicate(jobs):
                return jobs
            time.sleep(0.25)
        fail("timed out waiting for %s; jobs: %s" % (what, self.cli("jobs", "--all")))

    def env(self):
        return dict(os.environ, TIRESIAS_MASTER=self.address)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("tiresias up did not stop on SIGINT")
        if code != 0:
            fail("tiresias up exited %d: %s" % (code, self.proc.stderr.read()))


def run(binary, repo, policy, workdir):
    train = os.path.join(repo, "examples", "train.py")
    cluster = Cluster(binary, os.path.join(workdir, policy), policy)
    try:
        long_id = cluster.submit(4, "long", "/usr/bin/python3", train,
                                 "--steps", str(LONG_STEPS),
                                 "--step-time", "0.1",
                                 "--checkpoint-every", "1000")
        follower = subprocess.Popen([binary, "logs", "-f", long_id],
                                    env=cluster.env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        # Running on both agents, and (tiresias-l) past its 20 GPU-s bound.
        cluster.wait(lambda j: j[long_id]["state"] == "running" and
                     j[long_id]["attained_gpu_s"] > 30,
                     "the long job to run")
        shorts = [cluster.submit(1, "short%d" % i, "/usr/bin/python3", train,
                                 "--steps", "20", "--step-time", "0.05")
                  for i in range(2)]
        jobs = cluster.wait(
            lambda j: all(j[i]["state"] in ("finished",
                                            "failed")
                          for i in [long_id] + shorts),
            "every job to end", timeout_s=240)
        # The last (resumed) launch's log of each rank, through the master.
        resumed_logs = [cluster.cli("logs", long_id, "--rank", str(rank))
                        for rank in (0, 1)]
        followed, _ = wait_follower(follower)
        long_detail = json.loads(cluster.cli("job", long_id, "--json"))
    finally:
        cluster.stop()
    for i in [long_id] + shorts:
        if jobs[i]["state"] != "finished":
            fail("%s job %s ended %s" % (policy, i, jobs[i]["state"]))
    long_job = jobs[long_id]
    # <base>/<owner>/<cluster id>/job-N
    found = glob.glob(os.path.join(workdir, policy, "checkpoints", "*", "*",
                                   "job-" + long_id))
    if len(found) != 1:
        fail("%s: expected one checkpoint dir of job %s: %s" %
             (policy, long_id, found))
    ckpt = found[0]
    with open(os.path.join(ckpt, "result.json")) as f:
        result = json.load(f)
    if result["steps"] != LONG_STEPS:
        fail("%s: long job did %s steps, not %d" %
             (policy, result["steps"], LONG_STEPS))
    jct = {i: jobs[i]["end_time"] - jobs[i]["submit_time"] for i in shorts}
    # Each launch of the long job shows in its events with its attempt, as
    # many as its own result.json counts restarts: started attempt 1, then
    # preempted attempt k and resumed attempt k + 1 for each restart.
    restarts = result["restarts"]
    want = expected_launch_events([(k, k <= restarts)
                                   for k in range(1, restarts + 2)])
    if launch_events(long_detail) != want:
        fail("%s: long job's events %s; its %d restart(s) call for %s" %
             (policy, launch_events(long_detail), restarts, want))
    return long_job, result, jct, resumed_logs, followed


def main():
    binary, repo = sys.argv[1], sys.argv[2]
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP: /usr/bin/python3 cannot import torch (apt-get install "
              "python3-torch)")
        sys.exit(SKIP)
    with tempfile.TemporaryDirectory() as workdir:
        long_job, result, las_jct, logs, followed = run(
            binary, repo, "tiresias-l", workdir)
        if long_job["preemptions"] < 1 or result["restarts"] < 1:
            fail("tiresias-l: the long job was never preempted: %s" %
                 long_job)
        if not all("resumed from step" in l for l in logs):
            fail("the resumed long job's two ranks did not both resume from "
                 "a checkpoint: %r" % [l[-300:] for l in logs])
        # The follower printed the first launch, then the resumed one.
        first = followed.find("training from step 0 ")
        resumed = followed.find("resumed from step")
        if not 0 <= first < resumed:
            fail("tiresias logs -f did not follow the job into its resumed "
                 "launch: %r" % followed[-600:])
        _, _, yarn_jct, _, _ = run(binary, repo, "yarn-cs", workdir)
        las_mean = sum(las_jct.values()) / len(las_jct)
        yarn_mean = sum(yarn_jct.values()) / len(yarn_jct)
        print("short jobs' mean JCT: tiresias-l %.1f s, yarn-cs %.1f s" %
              (las_mean, yarn_mean))
        if not las_mean < yarn_mean:
            fail("short jobs were not faster under tiresias-l")
    print("PASS: preempted %d time(s), resumed, %d steps; short JCT %.1f s "
          "vs %.1f s under yarn-cs" % (long_job["preemptions"],
                                       result["steps"], las_mean, yarn_mean))


if __name__ == "__main__":
    main()
