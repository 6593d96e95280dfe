#!/usr/bin/python3
"""Chaos: a real `tiresias master` and three `tiresias agent`s (2 emulated
GPUs and one spare CPU each), jobs (one in five CPU-only, asking for that
CPU) submitted and cancelled throughout, and at random moments
(seeded) SIGKILL or SIGSTOP of the master and of agents. Then everything is
healed and every job runs to its end.

Judged from the tasks' own ground truth (chaos_task.py: GPU locks, a live
check of the job's other attempts, each task's start and last-alive times),
not from the master's word:
  - no GPU (nor a node's spare CPU) held by two tasks at once;
  - no two attempts of a job alive at once;
  - no task alive after its job ended, beyond the grace period;
  - every acknowledged job reaches exactly one final state;
  - no task stopped by the system is counted as failed: only the jobs made
    to fail fail, the others finish (or are cancelled, when we asked to
    cancel them, answered or not);
  - no job whose task ended on its own (exit 0 at the end of its work, or
    its failure code) runs again: requeues are sent throughout, the
    scheduler preempts, and the master is frozen for up to twice the node
    timeout, so that tasks end while a stop or a stall is in flight. The
    one exception is a task whose node was lost before it could report
    its end (the job's events say so): the master cannot know of it.

Reproducible from its seed: TIRESIAS_CHAOS_SEED (default 1) fixes the
actions and their times; TIRESIAS_CHAOS_SECONDS (default 80) their span.

Usage: chaos_test.py TIRESIAS_BINARY
"""
import collections
import json
import os
import random
import signal
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (FINAL, events, fail, free_port,  # noqa: E402
                           read_task_records, run_with_cluster)

SEED = int(os.environ.get("TIRESIAS_CHAOS_SEED", "1"))
CHAOS_SECONDS = float(os.environ.get("TIRESIAS_CHAOS_SECONDS", "80"))
NODE_TIMEOUT = 4  # s; with GRACE 1 s an agent's lease is 2 s
GRACE = 1
AGENTS = ["n0", "n1", "n2"]
TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "chaos_task.py")
TOLERANCE = 0.06  # s: the tasks' 20 ms alive ticks, twice, and slack


def main():
    run_with_cluster(run, "tiresias-chaos-", node_timeout=NODE_TIMEOUT,
                     policy="tiresias-l", grace=GRACE,
                     master_args=["--thresholds", "4"])


class Chaos:
    """The processes' states and the recoveries due."""

    def __init__(self, cluster, rng, address):
        self.c = cluster
        self.rng = rng
        self.address = address
        self.state = {"master": "up"}
        self.state.update({a: "up" for a in AGENTS})
        self.due = []  # (time, what, name)
        self.counts = collections.Counter()

    def pid(self, name):
        proc = self.c.master if name == "master" else self.c.agents[name]
        return proc.pid

    def act(self, now):
        up = [n for n, s in self.state.items() if s == "up"]
        if not up:
            return
        name = self.rng.choice(up)
        kill = self.rng.random() < 0.5
        if kill:
            if name == "master":
                self.c.kill_master()
            else:
                self.c.kill_agent(name)
                AGENT_KILLS.append((time.time(), name))
            TIMELINE.append((time.time(), "SIGKILL", name))
            self.state[name] = "dead"
            self.due.append((now + self.rng.uniform(0.2, 3.0), "start", name))
        else:
            os.kill(self.pid(name), signal.SIGSTOP)
            TIMELINE.append((time.time(), "SIGSTOP", name))
            self.state[name] = "stopped"
            # Agents: sometimes past the node timeout (fenced, declared
            # lost); the master too: past the lease (every agent fences)
            # and past the node timeout (it must take the reports that
            # waited before it judges any node).
            longest = 2 * NODE_TIMEOUT
            self.due.append((now + self.rng.uniform(0.3, longest), "cont",
                             name))
        self.counts["%s %s" % ("SIGKILL" if kill else "SIGSTOP",
                               "master" if name == "master" else "agent")] += 1

    def recover(self, now, everything=False):
        for item in sorted(self.due):
            when, what, name = item
            if when > now and not everything:
                continue
            self.due.remove(item)
            TIMELINE.append((time.time(), what, name))
            if what == "cont":
                os.kill(self.pid(name), signal.SIGCONT)
            elif name == "master":
                for _ in range(20):  # the port may take a moment to free
                    try:
                        self.c.start_master(self.address)
                        break
                    except SystemExit:
                        time.sleep(0.2)
            else:
                self.c.start_agent(name)
            self.state[name] = "up"


def submit(cluster, ground, rng, jobs, n):
    gpus = 2 if rng.random() < 0.3 else 1
    work = round(rng.uniform(1.0, 6.0), 2)
    failing = rng.random() < 0.1
    # One job in five CPU-only, for an agent's one spare CPU.
    shape = ["--gpus", "0", "--cpus", "1"] if rng.random() < 0.2 else \
        ["--gpus", str(gpus)]
    args = [TASK, ground, str(work)] + (["3"] if failing else [])
    out = cluster.cli_raw_timeout(
        6, "submit", *shape, "--name", "c%d" % n, "--",
        "/usr/bin/python3", "-S", *args)
    if out is not None and out.returncode == 0 and out.stdout.strip().isdigit():
        jobs[out.stdout.strip()] = {"failing": failing, "cancelled": False}


def cancel(cluster, rng, jobs):
    if not jobs:
        return
    job_id = rng.choice(sorted(jobs))
    # Asked is enough: a cancel left unanswered (the master frozen, the
    # client killed at 6 s) may still have reached the master and be carried
    # out when it thaws, as an unanswered submission may.
    jobs[job_id]["cancelled"] = True
    cluster.cli_raw_timeout(6, "cancel", job_id)


def requeue(cluster, rng, jobs):
    if not jobs:
        return
    job_id = rng.choice(sorted(jobs))
    TIMELINE.append((time.time(), "requeue", "job " + job_id))
    cluster.cli_raw_timeout(6, "requeue", job_id)


# Events that say a launch was lost with its node, so that its task's own
# end, if it came, never reached the master.
LOST_WORDS = ("node_down", "not re-adopted")


# (time, node) of each agent SIGKILL. An agent killed after recording a
# stop and before signalling it leaves a record that says the task was
# stopped from then on: a task that then ends on its own within the window
# below is counted as stopped by the next agent (a known limit, in the
# issue's note), so such ends are not judged here.
AGENT_KILLS = []
KILL_WINDOW = 5.0  # s
# (time, what, target) of every chaos action, for the report of a problem.
TIMELINE = []


def lost_near(node, when):
    """Whether `node`'s agent was silent (frozen or dead) for a node timeout
    around `when`: the master then declared the node lost, and a task end
    it had not reported yet could not reach the master before its launch was
    counted lost (a known limit: see the issue notes). A launch being
    stopped when its node is lost gets no node_down event, so the events
    alone cannot tell."""
    began = {}
    for t, what, name in TIMELINE:
        if name != node:
            continue
        if what in ("SIGSTOP", "SIGKILL"):
            began.setdefault(node, t)
        elif what in ("cont", "start") and node in began:
            t0 = began.pop(node)
            if t - t0 >= NODE_TIMEOUT - 0.5 and t0 - 1.0 <= when <= t:
                return True
    return False


def around(when, span=10.0):
    """The chaos actions within `span` seconds of `when`, as text."""
    return ", ".join("%+.1f s %s %s" % (t - when, what, name)
                     for t, what, name in TIMELINE if abs(t - when) <= span)


def killed_near(node, when):
    return any(n == node and abs(t - when) <= KILL_WINDOW
               for t, n in AGENT_KILLS)


def ran_again_after_own_end(cluster, tasks, jobs):
    """Jobs with a task that ended on its own and a later attempt."""
    problems = []
    by_job = collections.defaultdict(list)
    for t in tasks:
        by_job[t["job"]].append(t)
    for job_id, ts in sorted(by_job.items(), key=lambda kv: int(kv[0])):
        own = []
        for attempt in sorted({t["attempt"] for t in ts}):
            group = [t for t in ts if t["attempt"] == attempt]
            ended = [t for t in group
                     if t["code"] is not None and t["code"] != 143
                     and not killed_near(t["node"], t["last"])
                     and not lost_near(t["node"], t["last"])]
            # An attempt of several processes (one per GPU) ended on its
            # own if one failed (that decides it), or if all of them
            # finished: one that finished while its peer was stopped (a
            # fence, a preemption) leaves the job to resume, rightly.
            if any(t["code"] != 0 for t in ended) or (
                    ended and all(t["code"] == 0 for t in group)):
                own += ended
        if not own:
            continue
        first = min(t["attempt"] for t in own)
        later = sorted({t["attempt"] for t in ts if t["attempt"] > first})
        if not later:
            continue
        evs = events(cluster.job(job_id))
        if any(w in kind or w in detail for kind, detail in evs
               for w in LOST_WORDS):
            continue
        end = [t for t in own if t["attempt"] == first][0]
        problems.append(
            "job %s: attempt %d ended on its own (exit %d, on %s at %.3f) and "
            "attempts %s ran after it; events %s; chaos around its end: %s" %
            (job_id, first, end["code"], end["node"], end["last"], later, evs,
             around(end["last"]) or "none"))
    return problems


def check(cluster, ground, jobs, all_jobs):
    problems = []
    try:
        with open(os.path.join(ground, "violations")) as f:
            problems += ["seen by a task: " + l for l in f.read().splitlines()]
    except FileNotFoundError:
        pass
    tasks = read_task_records(ground)
    # Two attempts of a job alive at once.
    by_job = collections.defaultdict(list)
    for t in tasks:
        by_job[t["job"]].append(t)
    for job, ts in by_job.items():
        for a in ts:
            for b in ts:
                if a["attempt"] < b["attempt"] and \
                        b["start"] < a["last"] - TOLERANCE:
                    problems.append(
                        "job %s: attempt %d started at %.3f while attempt %d "
                        "was alive until %.3f" % (job, b["attempt"],
                                                  b["start"], a["attempt"],
                                                  a["last"]))
    # One GPU held by two tasks at once.
    by_gpu = collections.defaultdict(list)
    for t in tasks:
        for g in t["gpus"]:
            by_gpu[(t["node"], g)].append(t)
    for (node, g), ts in by_gpu.items():
        ts.sort(key=lambda t: t["start"])
        for a, b in zip(ts, ts[1:]):
            if b["start"] < a["last"] - TOLERANCE:
                problems.append(
                    "GPU %s of %s: job %s attempt %d started at %.3f while "
                    "job %s attempt %d held it until %.3f" %
                    (g, node, b["job"], b["attempt"], b["start"], a["job"],
                     a["attempt"], a["last"]))
    # Every acknowledged job: one final state, the right one.
    for job_id, info in sorted(jobs.items(), key=lambda kv: int(kv[0])):
        job = all_jobs.get(job_id)
        if job is None:
            problems.append("job %s was acknowledged and is gone" % job_id)
            continue
        state = job["state"]
        finals = [k for k, _ in events(cluster.job(job_id))
                  if k in ("finished", "failed", "cancelled")]
        if state not in FINAL or len(finals) != 1:
            problems.append("job %s: state %s, final events %s" %
                            (job_id, state, finals))
            continue
        if info["failing"]:
            want = ["failed"]
        else:
            want = ["finished"]
        if info["cancelled"]:
            want.append("cancelled")
        if state not in want:
            problems.append("job %s ended %s, want %s; events %s" %
                            (job_id, state, " or ".join(want),
                             events(cluster.job(job_id))))
    # No task alive after its job ended, beyond the grace period.
    for t in tasks:
        job = all_jobs.get(t["job"])
        if job and job.get("end_time") and \
                t["last"] > job["end_time"] + GRACE + 0.5:
            problems.append(
                "job %s ended at %.3f but its attempt %d ran until %.3f" %
                (t["job"], job["end_time"], t["attempt"], t["last"]))
    problems += ran_again_after_own_end(cluster, tasks, jobs)
    return problems, tasks


def run(cluster):
    rng = random.Random(SEED)
    ground = os.path.join(cluster.workdir, "ground")
    os.makedirs(ground)
    address = cluster.start_master("127.0.0.1:%d" % free_port())
    cluster.agent_args = ["--spare-cpus", "1"]
    for a in AGENTS:
        cluster.start_agent(a)
    cluster.wait_nodes_up(AGENTS)
    chaos = Chaos(cluster, rng, address)
    jobs = {}
    print("seed %d, %.0f s of chaos" % (SEED, CHAOS_SECONDS), flush=True)
    began = time.time()
    n = 0
    while time.time() - began < CHAOS_SECONDS:
        now = time.time()
        chaos.recover(now)
        roll = rng.random()
        if roll < 0.45:
            n += 1
            submit(cluster, ground, rng, jobs, n)
        elif roll < 0.55:
            cancel(cluster, rng, jobs)
        elif roll < 0.65:
            requeue(cluster, rng, jobs)
            chaos.counts["requeue"] += 1
        elif roll < 0.85:
            chaos.act(now)
        time.sleep(rng.uniform(0.2, 0.8))
    chaos.recover(time.time(), everything=True)
    print("chaos over after %.0f s: %s; %d jobs acknowledged" %
          (time.time() - began, dict(chaos.counts), len(jobs)), flush=True)
    cluster.wait_nodes_up(AGENTS, timeout_s=30)
    all_jobs = cluster.wait(
        lambda j: all(job["state"] in FINAL for job in j.values()),
        "every job to end", timeout_s=120)
    problems, tasks = check(cluster, ground, jobs, all_jobs)
    starts = collections.Counter(t["job"] for t in tasks)
    states = collections.Counter(j["state"] for j in all_jobs.values())
    fenced = sum(1 for t in tasks if t["code"] == 143)
    spare = sum(1 for t in tasks if t["gpus"] == ["spare"])
    print("%d tasks ran for %d jobs (%d on a spare CPU; %d started more than "
          "once, %d tasks stopped by SIGTERM, %d with no end: SIGKILLed); %d "
          "preemptions; final states %s" %
          (len(tasks), len(starts), spare,
           sum(1 for c in starts.values() if c > 1),
           fenced, sum(1 for t in tasks if t["code"] is None),
           sum(j.get("preemptions", 0) for j in all_jobs.values()),
           dict(states)))
    if problems:
        fail("%d problem(s), seed %d:\n  %s\nmaster log:\n%s" %
             (len(problems), SEED, "\n  ".join(problems[:40]),
              cluster.tail("master.log")))
    # Judged after the problems, which matter more than what went
    # untested.
    if spare == 0:
        fail("no CPU-only task ran: the spare CPUs went untested")


if __name__ == "__main__":
    main()
