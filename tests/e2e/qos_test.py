#!/usr/bin/python3
"""End to end, priority levels (QOS) on the default a user gets: a secure
`tiresias up` (TLS and tokens, 2 agents x 2 emulated GPUs, agents as root
running jobs as their owners) and two throwaway Unix users. An admin makes
QOS "high" (priority 10, at most 2 GPUs per user) and "urgent" (may ask
never to be preempted), both for the second user only. Judged from what
each job wrote about itself (its start and, on SIGTERM, its stop, in its
owner's folder, as its owner):

- the first user's 4 one-GPU jobs (no QOS) fill the cluster;
- the second user's 3 one-GPU jobs of QOS high: 2 start within 5 s of
  their submission, exactly 2 of the first user's jobs were stopped for
  them, and the third waits naming the QOS's per-user limit;
- the first user may not use QOS high, nor ask for --no-preempt (told
  which QOS would allow it); the second may, under urgent; a user who is
  not an admin may not create a QOS; `qos list` and `jobs --format` show
  the levels.

Needs root: exit 77 (skipped) otherwise.
Usage: qos_test.py TIRESIAS_BINARY
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (admin_env, cli, fail, free_port,  # noqa: E402
                           run_as_throwaway_users, secure_up,
                           user_session)
from local_cluster import log_words, wait_until  # noqa: E402
from vc_test import submit  # noqa: E402


def run(binary, workdir, users):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=2, extra=[]):
        admin = admin_env(state, address)
        wait_until("the two agents",
                   lambda: "node-1" in cli(binary, admin, "nodes").stdout)
        low_env, low_uid, low_home = user_session(binary, admin, workdir,
                                                  users[0], "low")
        high_env, high_uid, high_home = user_session(binary, admin, workdir,
                                                     users[1], "high")
        refused = cli(binary, low_env, "admin", "qos", "create", "mine",
                      "--priority", "100")
        if refused.returncode == 0:
            fail("a user created a QOS")
        for args in (["high", "--priority", "10", "--max-gpus-per-user", "2"],
                     ["urgent", "--allow-no-preempt"]):
            r = cli(binary, admin, "admin", "qos", "create", *args,
                    "--users", users[1])
            if r.returncode != 0:
                fail("admin qos create %s: %s" % (args[0], r.stderr))
        r = cli(binary, low_env, "submit", "--qos", "high", "--gpus", "1",
                "--", "/bin/true")
        if r.returncode == 0 or "may not use QOS" not in r.stderr:
            fail("another user's QOS: rc %d, %s" % (r.returncode, r.stderr))
        r = cli(binary, low_env, "submit", "--no-preempt", "--gpus", "1",
                "--", "/bin/true")
        if r.returncode == 0 or "no QOS allows it for" not in r.stderr:
            fail("--no-preempt without a QOS: rc %d, %s" %
                 (r.returncode, r.stderr))

        low_logs = {}
        for i in range(4):
            log = os.path.join(low_home, "log-low-%d" % i)
            low_logs[submit(binary, low_env, log, "--gpus", "1")] = log
        wait_until("the first user's 4 jobs to run",
                   lambda: all(log_words(p) for p in low_logs.values()))

        high_logs = {}
        submitted = time.time()
        for i in range(3):
            log = os.path.join(high_home, "log-high-%d" % i)
            high_logs[submit(binary, high_env, log, "--gpus", "1", "--qos",
                             "high")] = log
        wait_until("2 of the QOS high jobs to start", lambda: sum(
            bool(log_words(p)) for p in high_logs.values()) >= 2, timeout=20)
        time.sleep(2)  # a third would have started by now
        started = sorted(float(log_words(p)[0][1])
                         for p in high_logs.values() if log_words(p))
        stopped = {job for job, log in low_logs.items()
                   if any(w == "stop" for w, _ in log_words(log))}
        print("QOS high: %d started, the last %.2f s after submission; "
              "the first user's jobs stopped: %s" %
              (len(started), started[-1] - submitted, sorted(stopped)))
        if len(started) != 2:
            fail("%d of the 3 QOS high jobs started, past the limit of 2" %
                 len(started))
        if started[-1] - submitted > 5:
            fail("QOS high jobs started %.1f s after submission" %
                 (started[-1] - submitted))
        if len(stopped) != 2:
            fail("stopped %s of the first user's jobs, not 2" %
                 sorted(stopped))
        owners = {os.stat(p).st_uid for p in high_logs.values()
                  if os.path.exists(p)}
        if owners != {high_uid} or {os.stat(p).st_uid for p in
                                     low_logs.values()} != {low_uid}:
            fail("jobs ran as %s, not as their owners" % owners)
        def third_reason():
            jobs = json.loads(cli(binary, high_env, "jobs", "--all", "--json").stdout)
            return [j["pending_reason"] for j in jobs["jobs"]
                    if j["state"] == "pending"]
        wait_until("the third job's reason", lambda: third_reason() == [
            "qos high: %s's running jobs hold 2 of at most 2 GPUs per user "
            "(needs 1 GPU)" % users[1]])
        listed = cli(binary, low_env, "qos", "list")
        row = [line.split() for line in listed.stdout.splitlines()
               if line.startswith("high ")]
        if row != [["high", "10", "-", "2", "2", "1", "2", users[1]]]:
            fail("qos list: %s %s" % (listed.stdout, listed.stderr))
        print(listed.stdout)
        shown = cli(binary, high_env, "jobs", "--all", "--format", "id,qos,state")
        if shown.stdout.count(" high ") != 3:
            fail("jobs --format id,qos,state: %s" % shown.stdout)
        r = cli(binary, high_env, "submit", "--no-preempt", "--qos", "urgent",
                "--gpus", "1", "--", "/bin/true")
        if r.returncode != 0:
            fail("--no-preempt under QOS urgent: %s" % r.stderr)


def main():
    run_as_throwaway_users(run, ["tiresias-qa", "tiresias-qb"])
    print("QOS: a higher level preempts, its per-user limit holds, only "
          "its users may use it")


if __name__ == "__main__":
    main()
