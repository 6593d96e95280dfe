#!/usr/bin/python3
"""End to end, standby masters: two secure `tiresias master`s (TLS and
tokens) on one state dir, on two ports; two agents started as an
operator would (each its own certificate) and a throwaway Unix user's CLI
with its own token, all given both addresses. The first master leads, the
second waits (it does not listen). While the user's long jobs run and a
client submits short ones, the leader is killed (SIGKILL) three times;
each time the standby takes over and the killed one is started again as
the new standby. Judged from the jobs' own records, not the master's word:

- a standby never answers (its port refuses connections) and `status`
  names the leader, its epoch (one more at every takeover) and the
  standby;
- a new leader answers within 10 s of the kill;
- the long jobs' processes were never restarted: each wrote exactly one
  start line, attempt 1, and ends with exit 0 under the last leader;
- every submission the client was answered for exists once (its name
  once among the jobs), and runs to its end once; none was lost, and none
  started twice (a launch whose task started just before a kill, its
  report not yet on disk, is adopted by the new leader:
  JobRecord::live_attempt).

Needs root: exit 77 (skipped) otherwise.
Usage: standby_test.py TIRESIAS_BINARY
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (cli, fail, free_port,  # noqa: E402
                           read_lines, run_as_throwaway_user,
                           start_operator_agent, user_session, wait_up)

KILLS = int(os.environ.get("TIRESIAS_STANDBY_KILLS", "3"))
TAKEOVER_S = 10
LONG_S = 15 + 8 * KILLS  # spans every kill and takeover
# Writes one line per start (its attempt and pid) to $PWD/ran-NAME, then
# sleeps; an end line when it exits on its own.
JOB = r'''
echo "start $TIRESIAS_ATTEMPT $$ $(date +%s.%N)" >> "$PWD/ran-$1"
sleep "$2"
echo "end $(date +%s.%N)" >> "$PWD/ran-$1"
'''


def main():
    run_as_throwaway_user(run, "tiresias-standby")


class Masters:
    """The two masters of workdir/state, each on its own port."""

    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir
        self.state = os.path.join(workdir, "state")
        self.ports = [free_port(), free_port()]
        self.procs = [None, None]
        self.offsets = [0, 0]  # where each one's latest run's log begins
        self.addresses = ",".join("127.0.0.1:%d" % p for p in self.ports)

    def start(self, i, leading):
        path = os.path.join(self.workdir, "master%d.err" % i)
        self.offsets[i] = os.path.getsize(path) if os.path.exists(path) else 0
        err = open(path, "a")
        proc = subprocess.Popen(
            [self.binary, "master", "--listen",
             "127.0.0.1:%d" % self.ports[i], "--state-dir", self.state,
             "--init-ca", os.path.join(self.state, "tls"),
             "--policy", "yarn-cs", "--node-timeout", "10",
             "--checkpoint-base", os.path.join(self.workdir, "ckpt")],
            stdout=subprocess.PIPE, stderr=err, text=True)
        self.procs[i] = proc
        if leading:
            line = proc.stdout.readline()
            if "listening on" not in line:
                fail("master %d did not lead: %r\n%s" %
                     (i, line, self.tail(i)))
        return proc

    def wait_standby(self, i):
        deadline = time.time() + 10
        while "standby: another master leads" not in self.since_start(i):
            if time.time() > deadline or self.procs[i].poll() is not None:
                fail("master %d is no standby:\n%s" % (i, self.tail(i)))
            time.sleep(0.1)
        if accepts(self.ports[i]):
            fail("the standby master %d listens on its port" % i)

    def since_start(self, i):
        with open(os.path.join(self.workdir, "master%d.err" % i)) as f:
            f.seek(self.offsets[i])
            return f.read()

    def tail(self, i):
        with open(os.path.join(self.workdir, "master%d.err" % i)) as f:
            return f.read()[-3000:]

    def stop(self):
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def accepts(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def status(binary, env):
    r = cli(binary, env, "status", "--json", timeout=30)
    return json.loads(r.stdout) if r.returncode == 0 else None


def run(binary, workdir, user):
    masters = Masters(binary, workdir)
    agents = []
    try:
        masters.start(0, leading=True)
        masters.start(1, leading=False)
        masters.wait_standby(1)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("TIRESIAS_")}
        base["TIRESIAS_MASTER"] = masters.addresses
        admin = dict(base,
                     TIRESIAS_CA=os.path.join(masters.state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(masters.state,
                                                      "admin-token"))
        for name in ("node-a", "node-b"):
            agents.append(start_operator_agent(
                binary, workdir, base, admin, name, ["--gpus", "2"]))
        wait_up(binary, admin, workdir, ["node-a", "node-b"])
        env, uid, home = user_session(binary, admin, workdir, user)
        try:
            check(binary, masters, env, uid, home)
        except SystemExit:
            keep = os.environ.get("TIRESIAS_KEEP_LOGS")
            if keep:  # the logs outlive the test's folder, to look into
                shutil.copytree(workdir, keep, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.sock"))
                print("logs kept in %s" % keep)
            raise
    finally:
        for agent in agents:
            agent.terminate()
            agent.wait(timeout=30)
        masters.stop()
    print("standby masters: %d takeovers by SIGKILL, running jobs kept, "
          "no submission lost or doubled" % KILLS)


def submit(binary, env, home, name, seconds):
    r = cli(binary, env, "submit", "--gpus", "1", "--name", name,
            "--chdir", home, "--", "/bin/sh", "-c", JOB, "job", name,
            str(seconds), timeout=90)
    if r.returncode != 0:
        return None, r.stderr
    return r.stdout.strip().split()[-1], ""


def check(binary, masters, env, uid, home):
    first = status(binary, env)
    leader = first and first.get("leader")
    if not leader or leader["epoch"] != 1 or len(leader["standbys"]) != 1:
        fail("status of the first leader: %s" % first)
    long_jobs = {}
    for i in range(2):
        job, why = submit(binary, env, home, "long%d" % i, LONG_S)
        if job is None:
            fail("submit long%d: %s" % (i, why))
        long_jobs["long%d" % i] = job
    wait_started(home, list(long_jobs))

    # A client submitting all along, through the kills.
    answered, refused, stop = {}, [], threading.Event()

    def submitter():
        n = 0
        while not stop.is_set():
            name = "short%d" % n
            n += 1
            job, why = submit(binary, env, home, name, 1)
            if job is None:
                refused.append((name, why))
            else:
                answered[name] = job
            time.sleep(0.5)  # about 2 GPUs' worth of 1 s jobs
    thread = threading.Thread(target=submitter)
    thread.start()
    leading = 0
    takeovers = []
    try:
        for kill in range(KILLS):
            time.sleep(2)
            masters.procs[leading].send_signal(signal.SIGKILL)
            masters.procs[leading].wait(timeout=10)
            killed_at = time.time()
            standby = 1 - leading
            while True:
                now = status(binary, env)
                if now and now["leader"]["epoch"] == kill + 2:
                    break
                if time.time() - killed_at > TAKEOVER_S:
                    fail("no new leader %d s after killing master %d:\n%s" %
                         (TAKEOVER_S, leading, masters.tail(standby)))
                time.sleep(0.2)
            print("takeover %d: master %d leads (epoch %d) %.1f s after "
                  "the kill" % (kill + 1, standby, kill + 2,
                                time.time() - killed_at))
            takeovers.append((killed_at, time.time()))
            masters.start(leading, leading=False)
            masters.wait_standby(leading)
            leading = standby
    finally:
        stop.set()
        thread.join(timeout=120)
    if refused:
        fail("submissions refused through the takeovers: %s" % refused[:3])
    now = status(binary, env)
    if now["leader"]["epoch"] != KILLS + 1 or \
            len(now["leader"]["standbys"]) != 1:
        fail("status after the takeovers: %s" % now["leader"])

    # Every job ends; each started once, the long ones never restarted.
    names = dict(long_jobs, **answered)
    deadline = time.time() + LONG_S + 60
    while True:
        listed = json.loads(cli(binary, env, "jobs", "--all", "--json",
                                timeout=30).stdout)
        jobs = listed["jobs"]
        by_name = {}
        for j in jobs:
            by_name.setdefault(j["name"], []).append(j)
        doubled = [n for n, js in by_name.items() if len(js) > 1]
        if doubled:
            fail("submissions made twice: %s" % doubled[:5])
        missing = [n for n in names if n not in by_name]
        if missing:
            fail("answered submissions lost: %s" % missing[:5])
        if all(j["state"] in ("finished", "failed", "cancelled")
               for j in jobs):
            break
        if time.time() > deadline:
            fail("jobs not ended: %s" %
                 [(j["name"], j["state"]) for j in jobs
                  if j["state"] not in ("finished",)][:5])
        time.sleep(1)
    for j in jobs:
        if j["state"] != "finished":
            fail("job %s (%s) ended %s" % (j["id"], j["name"], j["state"]))
        lines = read_lines(os.path.join(home, "ran-" + j["name"]))
        starts = [l for l in lines if l.startswith("start ")]
        ends = [l for l in lines if l.startswith("end ")]
        if len(starts) != 1 or len(ends) != 1:
            shown = json.loads(cli(binary, env, "job", str(j["id"]),
                                   "--json").stdout)
            fail("job %s (%s) started %d and ended %d times: %s; its "
                 "events: %s; takeovers at %s" %
                 (j["id"], j["name"], len(starts), len(ends), lines,
                  [(e["kind"], e.get("time"), e.get("detail", ""))
                   for e in shown.get("events", [])], takeovers))
        if j["name"] in long_jobs and starts[0].split()[1] != "1":
            fail("long job %s ran again (attempt %s)" %
                 (j["name"], starts[0].split()[1]))
    print("%d short jobs submitted through %d takeovers, each created, "
          "started and ended once" % (len(answered), KILLS))


def wait_started(home, names, timeout_s=30):
    deadline = time.time() + timeout_s
    while not all(read_lines(os.path.join(home, "ran-" + n)) for n in names):
        if time.time() > deadline:
            fail("jobs %s did not start" % names)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
