#!/usr/bin/python3
"""End to end, the scheduler's settings changed at run time, on the default
a user gets: a secure `tiresias up` (TLS and tokens, 2 agents x 2 emulated
GPUs, agents as root running jobs as their owners) and a throwaway Unix
user. Judged from what the jobs wrote (their starts and, on SIGTERM, their
stops) and from the master's answers:

- the user can change nothing: `admin tuning set` and `tune --apply` are
  refused, and the settings stay the flags';
- four 1-GPU jobs run for a few seconds in Q0 and a fifth waits behind
  them (running jobs keep their place); `admin tuning set --thresholds 2`
  puts the four in Q1 at once and the fifth starts, one of the four
  stopped for it, after the change and not before;
- `tune --apply` on the master's own jobs (40 short 1-GPU jobs) applies
  or keeps its choice and says so; `status` then shows the settings as
  applied by the admin, the note and the drift baseline; the audit log has
  the change;
- 32 jobs of 2 GPUs, each ten times longer, finish: `status` reports drift;
- `tune --auto` tunes at once (drift is then judged from its window) and
  stops on SIGINT;
- a restarted `up` keeps the applied settings over its flags.

Needs root: exit 77 (skipped) otherwise.
Usage: tune_test.py TIRESIAS_BINARY
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (LOGGING_JOB, admin_env, cli, fail,  # noqa: E402
                           free_port, log_words, run_as_throwaway_user,
                           secure_up, user_session, wait_until)

def status(binary, env):
    r = cli(binary, env, "status", "--json")
    if r.returncode != 0:
        fail("status: " + r.stderr)
    return json.loads(r.stdout)["tuning"]


def submit(binary, env, *args):
    r = cli(binary, env, "submit", *args)
    if r.returncode != 0:
        fail("submit %s: %s" % (" ".join(args), r.stderr))
    return int(r.stdout.split()[-1])


def finished(binary, env, ids):
    jobs = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
    done = {j["id"] for j in jobs if j["state"] == "finished"}
    return all(i in done for i in ids)


def run(binary, workdir, user):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=2, extra=[]):
        admin = admin_env(state, address)
        wait_until("the two agents",
                   lambda: "node-1" in cli(binary, admin, "nodes").stdout)
        env, uid, home = user_session(binary, admin, workdir, user)
        before = status(binary, env)
        if before["source"] != "flags" or before["thresholds_gpu_s"] != [3600]:
            fail("the settings before any change: %s" % before)

        # The user may not change them.
        r = cli(binary, env, "admin", "tuning", "set", "--thresholds", "5")
        if r.returncode == 0:
            fail("a user changed the scheduling settings")
        if status(binary, env) != before:
            fail("a refused change changed the settings")

        # Ground truth: a change preempts at once, and only after it.
        logs = {}
        for i in range(4):
            log = os.path.join(home, "long-%d" % i)
            logs[submit(binary, env, "--gpus", "1", "--", "/bin/sh", "-c",
                        LOGGING_JOB, "job", log)] = log
        wait_until("the 4 long jobs to start",
                   lambda: all(log_words(p) for p in logs.values()))
        time.sleep(3)  # over 2 GPU-seconds each
        fifth_log = os.path.join(home, "fifth")
        fifth = submit(binary, env, "--gpus", "1", "--", "/bin/sh", "-c",
                       LOGGING_JOB, "job", fifth_log)
        time.sleep(3)
        if log_words(fifth_log):
            fail("the fifth job started before the change (all in Q0)")
        changed_at = time.time()
        r = cli(binary, admin, "admin", "tuning", "set", "--thresholds", "2",
                "--note", "e2e")
        if r.returncode != 0 or "queues 2 GPU-s" not in r.stdout:
            fail("admin tuning set: %s %s" % (r.stdout, r.stderr))
        applied_by_hand = status(binary, env)["applied_at"]
        wait_until("the fifth job to start", lambda: log_words(fifth_log),
                   timeout=15)
        started = float(log_words(fifth_log)[0][1])
        stops = [float(w[1]) for p in logs.values() for w in log_words(p)
                 if w[0] == "stop"]
        if not stops or min(stops) < changed_at or started < changed_at:
            fail("stops %s, fifth started %.3f, change at %.3f" %
                 (stops, started, changed_at))
        for job in list(logs) + [fifth]:
            cli(binary, env, "cancel", str(job))

        # tune on the master's own jobs.
        short = [submit(binary, env, "--gpus", "1", "--", "/bin/sleep",
                        "0.1") for _ in range(40)]
        wait_until("the 40 short jobs", lambda: finished(binary, env, short),
                   timeout=120)
        # Now that there are jobs to tune on, the user's --apply reaches
        # the master, which refuses it.
        r = cli(binary, env, "tune", "--apply", "--window", "1h",
                "--threads", "1", "--min-gain", "0", timeout=300)
        if r.returncode == 0 or "admin" not in r.stderr.lower():
            fail("a user's tune --apply: rc %d, %s" % (r.returncode, r.stderr))
        if status(binary, env)["applied_at"] != applied_by_hand:
            fail("a user's tune --apply changed the settings")
        r = cli(binary, admin, "tune", "--apply", "--window", "1h",
                "--threads", "1", "--min-gain", "0", "--json",
                timeout=300)
        if r.returncode != 0:
            fail("tune --apply: " + r.stderr)
        result = json.loads(r.stdout)
        if result["jobs"] < 40 or not result["why"]:
            fail("tune --apply answered %s" % r.stdout[-2000:])
        now = status(binary, env)
        sent = result["chosen"] if result["apply"] else result["current"]
        if (now["source"] != "applied" or now["applied_by"] == "" or
                now["thresholds_gpu_s"] != sent["thresholds"] or
                "tune" not in now["note"] or
                now["drift"]["jobs_tuned_on"] < 40 or now["drift"]["drift"]):
            fail("after tune --apply: %s (tune said %s)" % (now, sent))
        audit = cli(binary, admin, "admin", "audit").stdout
        if audit.count("SetTuning") < 2:
            fail("the changes are not in the audit log:\n" + audit[-2000:])

        # Jobs ten times longer, on 2 GPUs: drift.
        long = [submit(binary, env, "--gpus", "2", "--", "/bin/sleep", "1")
                for _ in range(32)]
        wait_until("the 32 longer jobs", lambda: finished(binary, env, long),
                   timeout=180)
        drifted = status(binary, env)
        if not drifted["drift"]["drift"] or \
                drifted["drift"]["jobs_since"] < 32:
            fail("no drift after 32 jobs of another size: %s" % drifted)
        if "DRIFT" not in cli(binary, env, "status").stdout:
            fail("`status` does not say drift")

        # --auto tunes at once, then waits; the first signal stops it.
        auto = subprocess.Popen(
            [binary, "tune", "--auto", "1h", "--window", "1h", "--threads",
             "1", "--min-gain", "0", "--json"], env=admin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until("tune --auto's first round", lambda: status(
                binary, env)["applied_at"] > drifted["applied_at"],
                timeout=120)
        finally:
            auto.send_signal(signal.SIGINT)
            out, err = auto.communicate(timeout=60)
        if auto.returncode != 0 or "tuning" not in err or \
                json.loads(out)["jobs"] < 72:
            fail("tune --auto: rc %s, %s\n%s" % (auto.returncode, err,
                                                 out[-1000:]))
        applied = status(binary, env)
        if applied["drift"]["drift"] or applied["drift"]["jobs_since"] != 0:
            fail("after --auto's round drift is judged from its window: %s"
                 % applied)

    with secure_up(binary, workdir, state, address, agents=2, extra=[]):
        kept = status(binary, env)
        for key in ("thresholds_gpu_s", "promote_knob", "queue_order",
                    "source", "applied_at"):
            if kept[key] != applied[key]:
                fail("after a restart %s is %s, was %s" %
                     (key, kept[key], applied[key]))


def main():
    run_as_throwaway_user(run, "tiresias-tu")


if __name__ == "__main__":
    main()
