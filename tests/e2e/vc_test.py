#!/usr/bin/python3
"""End to end, virtual clusters (teams) on the default a user gets: a
secure `tiresias up` (TLS and tokens, 2 agents x 2 emulated GPUs, agents
as root running jobs as their owners) and two throwaway Unix users, each
the only member of a VC owning 2 GPUs (`admin vc create`). Judged from
what each job wrote about itself (its start and, on SIGTERM, its stop, in
its owner's folder, as its owner):

- the second user's 4 one-GPU jobs all run: 2 on its quota, 2 borrowing
  the first VC's idle quota (`jobs --json`: "borrowing");
- the first user's 2-GPU job then runs within 5 s of its submission, and
  the jobs stopped to make room are exactly the 2 borrowers;
- the reclaimed jobs wait with a reason naming their VC's quota, `jobs
  --vc` lists one VC's jobs, and `report usage --by vc,user` has each
  VC's and each user's GPU time;
- a user naming a VC they are not a member of is refused, and so is
  `admin vc create` by a user who is not an admin.

Needs root: exit 77 (skipped) otherwise.
Usage: vc_test.py TIRESIAS_BINARY
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (LOGGING_JOB, admin_env, cli, fail,  # noqa: E402
                           free_port, log_words, run_as_throwaway_users,
                           secure_up, user_session, wait_until)

def submit(binary, env, log, *flags):
    r = cli(binary, env, "submit", *flags, "--", "/bin/sh", "-c",
            LOGGING_JOB, "job", log)
    if r.returncode != 0:
        fail("submit %s: %s" % (" ".join(flags), r.stderr))
    return int(r.stdout.split()[-1])


def run(binary, workdir, users):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=2, extra=[]):
        admin = admin_env(state, address)
        wait_until("the two agents",
                   lambda: "node-1" in cli(binary, admin, "nodes").stdout)
        a_env, a_uid, a_home = user_session(binary, admin, workdir, users[0],
                                            "a")
        b_env, b_uid, b_home = user_session(binary, admin, workdir, users[1],
                                            "b")
        refused = cli(binary, b_env, "admin", "vc", "create", "mine",
                      "--quota", "1x1", "--members", users[1])
        if refused.returncode == 0:
            fail("a user created a VC")
        for name, user in (("team-a", users[0]), ("team-b", users[1])):
            r = cli(binary, admin, "admin", "vc", "create", name, "--quota",
                    "1x2", "--members", user)
            if r.returncode != 0:
                fail("admin vc create %s: %s" % (name, r.stderr))
        r = cli(binary, a_env, "submit", "--vc", "team-b", "--gpus", "1",
                "--", "/bin/true")
        if r.returncode == 0 or "not a member" not in r.stderr:
            fail("a non-member's submission: rc %d, %s" %
                 (r.returncode, r.stderr))

        b_logs = {}
        for i in range(4):
            log = os.path.join(b_home, "log-b-%d" % i)
            b_logs[submit(binary, b_env, log, "--gpus", "1")] = log
        wait_until("team-b's 4 jobs to run",
                   lambda: all(log_words(p) for p in b_logs.values()))
        wait_until("team-b's jobs running in the master", lambda: sum(
            j["state"] == "running" for j in json.loads(
                cli(binary, b_env, "jobs", "--all", "--json").stdout)["jobs"]) == 4)
        jobs = json.loads(cli(binary, b_env, "jobs", "--all", "--json").stdout)["jobs"]
        borrowers = {j["id"] for j in jobs if j["borrowing"]}
        if len(borrowers) != 2 or any(j["vc"] != "team-b" for j in jobs):
            fail("team-b's jobs: %s" % [(j["id"], j["vc"], j["borrowing"])
                                         for j in jobs])

        a_log = os.path.join(a_home, "log-a")
        submitted = time.time()
        submit(binary, a_env, a_log, "--gpus", "2")
        wait_until("team-a's job to start", lambda: log_words(a_log),
                   timeout=20)
        started = float(log_words(a_log)[0][1])
        stopped = {job for job, log in b_logs.items()
                   if any(w == "stop" for w, _ in log_words(log))}
        owners = {os.stat(p).st_uid for p in b_logs.values()}
        print("team-a's 2-GPU job started %.2f s after its submission; "
              "stopped: %s, borrowers: %s" %
              (started - submitted, sorted(stopped), sorted(borrowers)))
        if stopped != borrowers:
            fail("stopped %s, but the borrowers were %s" %
                 (sorted(stopped), sorted(borrowers)))
        if started - submitted > 5:
            fail("team-a's job started %.1f s after submission" %
                 (started - submitted))
        if owners != {b_uid} or os.stat(a_log).st_uid != a_uid:
            fail("jobs ran as %s, not as their owners" % owners)
        # The reclaimed borrowers wait saying why, in their VC's numbers.
        def waiting_reasons():
            return [j["pending_reason"] or "" for j in json.loads(
                cli(binary, b_env, "jobs", "--json", "--vc", "team-b",
                    "--state", "preempted").stdout)["jobs"]]
        wait_until("the reclaimed jobs' reasons", lambda: len([
            r for r in waiting_reasons()
            if "(vc team-b: 2 of 2 GPUs of its quota in use)" in r]) == 2)
        shown = cli(binary, b_env, "vc", "show", "team-b").stdout
        if "2 running (2 GPUs, 0 borrowed), 2 waiting" not in shown:
            fail("vc show team-b: %s" % shown)
        mine = json.loads(cli(binary, b_env, "jobs", "--all", "--json", "--vc",
                              "team-a").stdout)["jobs"]
        if [j["user"] for j in mine] != [users[0]]:
            fail("jobs --vc team-a: %s" % mine)
        r = cli(binary, b_env, "report", "usage", "--by", "vc,user",
                "--since", "1h", "--json")
        if r.returncode != 0:
            fail("report usage: %s" % r.stderr)
        rows = {(row["vc"], row["user"]): row
                for row in json.loads(r.stdout)["rows"]}
        if (set(rows) != {("team-a", None), ("team-a", users[0]),
                          ("team-b", None), ("team-b", users[1])} or
                rows[("team-b", None)]["jobs"] != 4 or
                rows[("team-b", None)]["gpu_s"] <= 0):
            fail("report usage: %s" % r.stdout)
        print(cli(binary, b_env, "report", "usage", "--since", "1h").stdout)
        listed = cli(binary, a_env, "vc", "list")
        if "team-a" not in listed.stdout:
            fail("vc list: %s %s" % (listed.stdout, listed.stderr))
        print(listed.stdout)


def main():
    run_as_throwaway_users(run, ["tiresias-va", "tiresias-vb"])
    print("virtual clusters: borrowers reclaimed for the lender's job, "
          "non-members refused")


if __name__ == "__main__":
    main()
