#!/usr/bin/python3
"""End to end, per-user fair share (`master --fair-share user`): a secure
`tiresias up` (TLS and tokens, 2 agents x 2 emulated GPUs, agents as root
running jobs as their owners, `--thresholds 20 --fair-share user
--fair-quantum 10`), and two throwaway Unix users with tokens of their own.
The first submits 8 long 1-GPU jobs, the second 2 (issue 24's repro: with
per-job Tiresias-L, after 150 s the first had 560 GPU-seconds and the
second 40). Judged from what each job wrote about itself (its start and,
on SIGTERM, its stop, in its owner's folder, as its owner):

- over the 80 s after both submitted, the two users' GPU-seconds are
  within 20% of each other;
- every job ran as its owner;
- `--no-preempt` is refused to a user who is not an admin (naming the
  master's `--no-preempt-for`), and accepted from the admin.

Needs root: exit 77 (skipped) otherwise.
Usage: fair_share_test.py TIRESIAS_BINARY
"""
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (SKIP, cli, fail, free_port,  # noqa: E402
                           secure_up, user_session)

WINDOW_S = 80

# $1: its log. A start line now, a stop line on SIGTERM (a preemption).
JOB = r'''
log="$1"
echo "start $(date +%s.%N)" >> "$log"
trap 'echo "stop $(date +%s.%N)" >> "$log"; exit 143' TERM
while :; do sleep 0.2; done
'''


def gpu_seconds(home, since, until):
    """Seconds the jobs logged in `home` ran within [since, until], and the
    owners of their logs."""
    total, owners = 0.0, set()
    for name in os.listdir(home):
        if not name.startswith("log-"):
            continue
        path = os.path.join(home, name)
        owners.add(os.stat(path).st_uid)
        start = None
        with open(path) as f:
            for line in f:
                what, at = line.split()
                at = float(at)
                if what == "start":
                    start = at
                elif start is not None:
                    total += max(0.0, min(at, until) - max(start, since))
                    start = None
        if start is not None:
            total += max(0.0, until - max(start, since))
    return total, owners


def submit(binary, env, home, n, tag):
    for i in range(n):
        r = cli(binary, env, "submit", "--gpus", "1", "--name",
                "%s-%d" % (tag, i), "--", "/bin/sh", "-c", JOB, "job",
                os.path.join(home, "log-%s-%d" % (tag, i)))
        if r.returncode != 0:
            fail("submit as %s: %s" % (tag, r.stderr))


def run(binary, workdir, users):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    extra = ["--thresholds", "20", "--fair-share", "user", "--fair-quantum",
             "10"]
    with secure_up(binary, workdir, state, address, agents=2, extra=extra):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("TIRESIAS_")}
        base["TIRESIAS_MASTER"] = address
        admin = dict(base, TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
        deadline = time.time() + 20
        while "node-1" not in cli(binary, admin, "nodes").stdout:
            if time.time() > deadline:
                fail("the two agents did not come up")
            time.sleep(0.2)
        many_env, many_uid, many_home = user_session(
            binary, admin, workdir, users[0], "many")
        few_env, few_uid, few_home = user_session(
            binary, admin, workdir, users[1], "few")

        refused = cli(binary, few_env, "submit", "--gpus", "1",
                      "--no-preempt", "--", "/bin/true")
        if refused.returncode == 0 or "--no-preempt-for" not in refused.stderr:
            fail("a user's --no-preempt job: rc %d, %s" %
                 (refused.returncode, refused.stderr))
        allowed = cli(binary, admin, "submit", "--gpus", "1", "--no-preempt",
                      "--", "/bin/true")
        if allowed.returncode != 0:
            fail("the admin's --no-preempt job: %s" % allowed.stderr)

        submit(binary, many_env, many_home, 8, "many")
        submit(binary, few_env, few_home, 2, "few")
        since = time.time()
        time.sleep(WINDOW_S)
        until = time.time()
        many, many_owners = gpu_seconds(many_home, since, until)
        few, few_owners = gpu_seconds(few_home, since, until)
        print("GPU-seconds over %d s: %s (8 jobs) %.1f, %s (2 jobs) %.1f" %
              (WINDOW_S, users[0], many, users[1], few))
        if many_owners != {many_uid} or few_owners != {few_uid}:
            fail("jobs ran as %s and %s, not as their owners %d and %d" %
                 (many_owners, few_owners, many_uid, few_uid))
        if min(many, few) < 0.8 * max(many, few):
            fail("GPU-seconds %.1f and %.1f are not within 20%% of each "
                 "other" % (many, few))
        if many + few < 0.8 * 4 * WINDOW_S:
            fail("the 4 GPUs were busy only %.1f of %d GPU-seconds" %
                 (many + few, 4 * WINDOW_S))


def main():
    if os.geteuid() != 0:
        print("skipped: needs root to create throwaway users")
        sys.exit(SKIP)
    binary = sys.argv[1]
    users = ["tiresias-fa-%d" % os.getpid(), "tiresias-fb-%d" % os.getpid()]
    started = time.time()
    try:
        for user in users:
            subprocess.run(["useradd", "--system", "--no-create-home",
                            "--user-group", user], check=True)
        with tempfile.TemporaryDirectory(prefix="tiresias-fair-") as workdir:
            os.chmod(workdir, 0o755)
            run(binary, workdir, users)
    finally:
        for user in users:
            subprocess.run(["userdel", user], capture_output=True)
            subprocess.run(["groupdel", user], capture_output=True)
    print("per-user fair share: each user's GPU-seconds within 20%% of the "
          "other's, jobs as their owners; PASS in %.1f s" %
          (time.time() - started))


if __name__ == "__main__":
    main()
