#!/usr/bin/python3
"""End to end, `submit --begin` and `tiresias update` (Slurm's `scontrol
update`) on the default a user gets: a secure `tiresias up` (TLS, tokens,
one agent as root with 2 emulated GPUs) and two throwaway Unix users, each
with their own token. Judged from what the jobs' own processes write
(start time, uid, CUDA_VISIBLE_DEVICES) and whether they are still alive:

- a job submitted with `--begin now+6` starts no process before 6 s have
  passed, says why it waits (begin_time), then runs as its owner;
- another user cannot `update` the owner's held job (refused, the job
  unchanged); the owner changes it from 2 GPUs to 1 and gives it a 4 s
  limit: released, it runs on one GPU and is stopped at its limit
  (timeout);
- `update --gpus` of a running job, another user's update of it, of an
  ended one, to a QOS that does not exist, and a bad `--begin` are
  refused with the reason, and the master stays up;
- a running job's time limit changes: shortened below what it has run,
  it ends timeout and its process is gone; extended from 10 s, a 15 s
  job finishes;
- bash completes `cancel ` with the ids of the jobs not yet ended and
  `node drain ` with the node's name, asked of the master as the user.

Usage: update_test.py TIRESIAS_BINARY. Needs root (throwaway users): exit
77 otherwise.
"""
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (admin_env, alive, cli, fail,  # noqa: E402
                           free_port, run_as_throwaway_users, secure_up,
                           user_session, wait_until)

# Appends "START <unix time> <pid> <uid> <CUDA_VISIBLE_DEVICES>" to $1,
# then runs the rest of the arguments with exec.
RECORD = ('echo "START $(date +%s.%N) $$ $(id -u) $CUDA_VISIBLE_DEVICES" '
          '>> "$1"; shift; exec "$@"')


def starts(path):
    """[(time, pid, uid, gpus)] of every start recorded in `path`."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                words = line.split()
                if len(words) >= 4 and words[0] == "START":
                    out.append((float(words[1]), int(words[2]),
                                int(words[3]),
                                words[4] if len(words) > 4 else ""))
    return out


def submit(binary, env, home, tag, *flags, seconds=60):
    r = cli(binary, env, "submit", "--chdir", home, "--name", tag, *flags,
            "--", "/bin/sh", "-c", RECORD, "job",
            os.path.join(home, tag + ".log"), "sleep", str(seconds))
    if r.returncode != 0:
        fail("submit %s: %s" % (tag, r.stderr))
    return int(r.stdout.split()[-1])


def job(binary, env, job_id):
    r = cli(binary, env, "job", str(job_id), "--json")
    if r.returncode != 0:
        fail("job %d: %s" % (job_id, r.stderr))
    return json.loads(r.stdout)


def complete(binary, env, words):
    """What bash completes for `tiresias WORDS` (the last one under the
    cursor), with the script `tiresias completion bash` prints."""
    script = ('source <("$0" completion bash) && COMP_WORDS=("$0" "$@") && '
              'COMP_CWORD=$# && _tiresias && printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", script,
                        binary] + words, env=env, capture_output=True,
                       text=True, timeout=30)
    return sorted(w for w in r.stdout.split("\n") if w)


def refused(r, words, what):
    if r.returncode == 0 or words not in r.stderr:
        fail("%s: rc %d, stderr %r (want %r)" % (what, r.returncode,
                                                 r.stderr, words))


def run(binary, workdir, users):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=1):
        admin = admin_env(state, address)
        wait_until("the agent up",
                   lambda: "node-0" in cli(binary, admin, "nodes").stdout)
        alice, alice_uid, alice_home = user_session(binary, admin, workdir,
                                                    users[0], "alice")
        bob, _, _ = user_session(binary, admin, workdir, users[1], "bob")

        # --begin: nothing runs before the time, then it runs as alice.
        submitted = time.time()
        later = submit(binary, alice, alice_home, "later", "--gpus", "2",
                       "--begin", "now+6", seconds=1)
        shown = job(binary, alice, later)
        if shown["pending_reason_kind"] != "begin_time":
            fail("a job to begin later waits for %r (%s)" %
                 (shown["pending_reason_kind"], shown["pending_reason"]))
        time.sleep(4)
        if starts(os.path.join(alice_home, "later.log")):
            fail("the --begin now+6 job started after 4 s")
        wait_until("the --begin job to start",
                   lambda: starts(os.path.join(alice_home, "later.log")),
                   timeout=20)
        began, _, uid, _ = starts(os.path.join(alice_home, "later.log"))[0]
        if began < submitted + 5.5 or uid != alice_uid:
            fail("the --begin now+6 job started %.1f s after its submission "
                 "as uid %d (want >= 6 s, as %d)" %
                 (began - submitted, uid, alice_uid))
        print("--begin now+6: started %.1f s after submission, as %s" %
              (began - submitted, users[0]))
        wait_until("the --begin job to end",
                   lambda: job(binary, alice, later)["state"] == "finished")

        # Another user cannot change it; its owner can.
        held = submit(binary, alice, alice_home, "held", "--gpus", "2",
                      "--hold")
        refused(cli(binary, bob, "update", str(held), "--gpus", "1"),
                "only its owner or an admin", "bob's update of alice's job")
        if job(binary, alice, held)["gpus"] != 2:
            fail("bob's refused update changed alice's job")
        r = cli(binary, alice, "update", str(held), "--gpus", "1", "--time",
                "0:04")
        if r.returncode != 0 or "1 GPU, time limit 0:00:04" not in r.stdout:
            fail("alice's update: rc %d, %s%s" % (r.returncode, r.stdout,
                                                   r.stderr))
        events = [e["kind"] for e in job(binary, alice, held)["events"]]
        if "modified" not in events:
            fail("no modified event: %s" % events)
        if cli(binary, alice, "release", str(held)).returncode != 0:
            fail("release of the updated job")
        path = os.path.join(alice_home, "held.log")
        wait_until("the updated job to start", lambda: starts(path))
        _, pid, uid, gpus = starts(path)[0]
        if uid != alice_uid or len(gpus.split(",")) != 1:
            fail("the updated job ran as uid %d on GPUs %r (want %d, one)" %
                 (uid, gpus, alice_uid))
        wait_until("the updated job to time out",
                   lambda: job(binary, alice, held)["state"] == "timeout",
                   timeout=30)
        if alive(pid):
            fail("the timed-out job's process %d still runs" % pid)
        print("update --gpus 1 --time 0:04: ran on GPU %s, ended timeout" %
              gpus)

        # Refusals, with the reason.
        refused(cli(binary, alice, "update", str(held), "--gpus", "2"),
                "has already ended", "update of an ended job")
        running = submit(binary, alice, alice_home, "running", "--gpus", "1")
        wait_until("a job to run",
                   lambda: starts(os.path.join(alice_home, "running.log")))
        refused(cli(binary, alice, "update", str(running), "--gpus", "2"),
                "only its time limit can change", "update --gpus of a running "
                "job")
        refused(cli(binary, bob, "update", str(running), "--time", "0:02"),
                "only its owner or an admin", "bob's update of alice's "
                "running job")
        waiting = submit(binary, alice, alice_home, "waiting", "--gpus", "1",
                         "--hold")
        refused(cli(binary, alice, "update", str(waiting), "--priority",
                    "nosuch"), 'no QOS "nosuch"', "update to an unknown QOS")
        refused(cli(binary, alice, "update", str(waiting)),
                "nothing to change", "update with nothing to change")

        # Completion asks the master: the jobs not yet ended, node names.
        if complete(binary, alice, ["cancel", ""]) != \
                sorted([str(running), str(waiting)]):
            fail("completion of `cancel ` as %s: %s (want %d and %d)" %
                 (users[0], complete(binary, alice, ["cancel", ""]),
                  running, waiting))
        if complete(binary, alice, ["node", "drain", "no"]) != ["node-0"]:
            fail("completion of `node drain no`: %s" %
                 complete(binary, alice, ["node", "drain", "no"]))
        refused(cli(binary, alice, "submit", "--gpus", "1", "--begin", "later",
                    "--",
                    "/bin/true"), "--begin later: expected now",
                "submit --begin later")
        if cli(binary, admin, "cancel", str(waiting)).returncode != 0:
            fail("cancel after the refusals: the master is not answering")

        # A running job's time limit: shortened below what it has run, it
        # ends timeout at once and its process is gone; extended, it runs
        # past its old limit to its own end.
        r = cli(binary, alice, "update", str(running), "--time", "0:02")
        if r.returncode != 0:
            fail("update --time of a running job: %s" % r.stderr)
        wait_until("the shortened job to time out",
                   lambda: job(binary, alice, running)["state"] == "timeout",
                   timeout=30)
        _, pid, _, _ = starts(os.path.join(alice_home, "running.log"))[0]
        if alive(pid):
            fail("the shortened job's process %d still runs" % pid)
        long = submit(binary, alice, alice_home, "long", "--gpus", "1",
                      "--time", "0:10", seconds=15)
        path = os.path.join(alice_home, "long.log")
        wait_until("the job to extend to start", lambda: starts(path))
        r = cli(binary, alice, "update", str(long), "--time", "1:00")
        if r.returncode != 0:
            fail("update --time 1:00 of a running job: %s" % r.stderr)
        wait_until("the extended job to end",
                   lambda: job(binary, alice, long)["state"] in
                   ("finished", "timeout", "failed"), timeout=30)
        shown = job(binary, alice, long)
        if shown["state"] != "finished":
            fail("the job extended from 10 s to 1 min ended %s" %
                 shown["state"])
        print("update --time of running jobs: shortened ended timeout, "
              "extended from 0:10 ran its 15 s and finished")


def main():
    run_as_throwaway_users(run, ["tua", "tub"])


if __name__ == "__main__":
    main()
