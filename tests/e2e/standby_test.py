#!/usr/bin/python3
"""End to end, standby masters: secure `tiresias master`s (TLS and
tokens; two, on one state dir) each on its own port; two agents started
as an operator would (each its own certificate) and a throwaway Unix
user's CLI with its own token, all given every address. The first master
leads, the others wait (they do not listen). While the user's long jobs
run and clients submit short ones, the leader is killed (SIGKILL) three
times; each time a standby takes over and the killed one is started again
as a standby. Judged from the jobs' own records, not the master's word:

- a standby never answers (its port refuses connections) and `status`
  names the leader, its epoch (one more at every takeover) and the
  standbys;
- a new leader answers within 10 s of the kill;
- the long jobs' processes were never restarted: each wrote exactly one
  start line, attempt 1, and ends with exit 0 under the last leader;
- every submission the client was answered for exists once (its name
  once among the jobs), and runs to its end once; none was lost, and none
  started twice (a launch whose task started just before a kill, its
  report not yet on disk, is adopted by the new leader:
  JobRecord::live_attempt).

With --etcd, the masters are on an etcd store instead (--store etcd://,
three etcd members started by the test, each master its own state dir and
copy of the state, one TLS folder), and as the issue asks there are three
of them (two standbys race for each lead) and eight clients submitting at
once (TIRESIAS_STANDBY_MASTERS and TIRESIAS_STANDBY_CLIENTS change either):
the same judgement, with epochs that only need to rise (etcd revisions)
and the new leader any standby, and four more trials:

- first, an etcd follower is killed (SIGKILL; the masters' member when
  it is a follower, so the client must move on): no submission begun
  within 1 s before to 3 s after it takes over 1 s, the lead stays; the
  member is started again and rejoins;
- in the middle, etcd's raft leader is killed (SIGKILL; the members run
  with a 500 ms election timeout): the same master leads (its lease
  renewals outlive the election), submissions go on, none begun within
  1 s before to 3 s after the kill waits over 1.5 s (the longest is
  printed), and `status` shows that member down, the others up;
- the last leader is frozen (SIGSTOP) past its lease instead of killed:
  thawed, it must step down (exit 3) while a standby leads;
- then quorum is lost (a second member frozen, one of three left): the
  leader steps down (exit 3) within its lease, no master leads, and once
  both members are back a master leads again within 20 s; the running
  jobs keep running and nothing answered is lost (a submission made
  during the pause may be refused, none may be lost once answered).

The leader snapshots every 10 log entries (--snapshot-every): a restarted
master's copy is replaced by a snapshot (at least once in the run); at
the end both masters' copies, once stopped, hold the same rows.

Needs root (else exit 77); --etcd needs /usr/bin/etcd (scripts/setup.sh).
Usage: standby_test.py TIRESIAS_BINARY [--etcd]
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
ETCD = "--etcd" in sys.argv[2:]
# On etcd, the setting: three masters (two standbys that race for
# the lead) and eight clients submitting at once; on a state dir, two and
# one.
MASTERS = int(os.environ.get("TIRESIAS_STANDBY_MASTERS",
                             "3" if ETCD else "2"))
CLIENTS = int(os.environ.get("TIRESIAS_STANDBY_CLIENTS",
                             "8" if ETCD else "1"))
LEAD_TTL_S = 3  # --lead-ttl on etcd: a killed leader's lead lasts this
# The agents' leases follow it (less their grace and a margin). A frozen
# leader keeps its port: the agents leave it only when their pings go
# unanswered (about 5 s, security::Dial) and an attempt to connect to it
# again is given up (5 s for agents, agent_dependencies.cc), then wait out
# its lead; 10 s leaves their tasks' leases too short for that.
NODE_TIMEOUT = "20" if ETCD else "10"
TAKEOVER_S = 10
# Snapshots often enough that a restarted master's copy is sometimes
# behind one, and starts from it.
SNAPSHOT_EVERY = 10
QUORUM_BACK_S = 20  # to a leader, from both etcd members being back
LONG_S = 15 + 8 * KILLS + (30 if ETCD else 0)  # spans every trial
# Writes one line per start (its attempt and pid) to $PWD/ran-NAME, then
# sleeps; an end line when it exits on its own.
JOB = r'''
echo "start $TIRESIAS_ATTEMPT $$ $(date +%s.%N)" >> "$PWD/ran-$1"
sleep "$2"
echo "end $(date +%s.%N)" >> "$PWD/ran-$1"
'''


def main():
    run_as_throwaway_user(run, "tiresias-standby")


class Etcd:
    """Three etcd members on loopback, their data in workdir/etcd-N."""

    def __init__(self, workdir, members=3):
        self.workdir = workdir
        self.clients = [free_port() for _ in range(members)]
        peers = [free_port() for _ in range(members)]
        cluster = ",".join("m%d=http://127.0.0.1:%d" % (i, p)
                           for i, p in enumerate(peers))
        self.procs, self.args = [], []
        self.dead = None  # the member killed
        for i in range(members):
            client = "http://127.0.0.1:%d" % self.clients[i]
            peer = "http://127.0.0.1:%d" % peers[i]
            log = open(os.path.join(workdir, "etcd-%d.log" % i), "w")
            self.args.append(
                ["/usr/bin/etcd", "--name", "m%d" % i,
                 "--data-dir", os.path.join(workdir, "etcd-%d" % i),
                 "--listen-client-urls", client,
                 "--advertise-client-urls", client,
                 "--listen-peer-urls", peer,
                 "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", cluster,
                 "--initial-cluster-state", "new",
                 # A raft leader's death costs an election: 0.5-1 s
                 # instead of etcd's default 1-2 s.
                 "--heartbeat-interval", "50", "--election-timeout", "500"])
            self.procs.append(subprocess.Popen(self.args[i], stdout=log,
                                               stderr=log))
        self.url = "etcd://" + ",".join(
            "127.0.0.1:%d" % p for p in self.clients)
        deadline = time.time() + 30
        while not all(accepts(p) for p in self.clients):
            if time.time() > deadline:
                fail("etcd members did not listen")
            time.sleep(0.1)

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait(timeout=10)

    def restart(self, i):
        """Member i again, on its data dir (it rejoins the cluster)."""
        log = open(os.path.join(self.workdir, "etcd-%d.log" % i), "a")
        self.procs[i] = subprocess.Popen(self.args[i], stdout=log, stderr=log)

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)  # a frozen one too
                proc.kill()
                proc.wait(timeout=10)


class Masters:
    """MASTERS masters, each on its own port: of workdir/state, or each of
    its own state dir on the etcd store `etcd`."""

    def __init__(self, binary, workdir, etcd=None):
        self.binary = binary
        self.workdir = workdir
        self.etcd = etcd
        self.state = os.path.join(workdir, "state")
        self.tls = os.path.join(self.state, "tls")
        self.ports = [free_port() for _ in range(MASTERS)]
        self.procs = [None] * MASTERS
        self.offsets = [0] * MASTERS  # where each one's latest run's log begins
        self.addresses = ",".join("127.0.0.1:%d" % p for p in self.ports)

    def state_dir(self, i):
        return self.state if self.etcd is None else "%s%d" % (self.state, i)

    def start(self, i, leading):
        path = os.path.join(self.workdir, "master%d.err" % i)
        self.offsets[i] = os.path.getsize(path) if os.path.exists(path) else 0
        err = open(path, "a")
        store = [] if self.etcd is None else [
            "--store", self.etcd.url, "--lead-ttl", str(LEAD_TTL_S),
            "--snapshot-every", str(SNAPSHOT_EVERY)]
        proc = subprocess.Popen(
            [self.binary, "master", "--listen",
             "127.0.0.1:%d" % self.ports[i], "--state-dir", self.state_dir(i),
             "--init-ca", self.tls,
             "--policy", "yarn-cs", "--node-timeout", NODE_TIMEOUT,
             "--checkpoint-base", os.path.join(self.workdir, "ckpt")] + store,
            stdout=subprocess.PIPE, stderr=err, text=True)
        self.procs[i] = proc
        if leading:
            line = proc.stdout.readline()
            if "listening on" not in line:
                fail("master %d did not lead: %r\n%s" %
                     (i, line, self.tail(i)))
        return proc

    def index_of(self, now):
        """Which master leads in `status` output `now` (by its pid)."""
        pid = ((now or {}).get("leader") or {}).get("pid")
        for i, proc in enumerate(self.procs):
            if proc is not None and proc.pid == pid:
                return i
        fail("status names a leader (pid %s) that is none of the masters: "
             "%s" % (pid, (now or {}).get("leader")))

    def others(self, i):
        return [j for j in range(MASTERS) if j != i]

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

    def tail(self, i, chars=3000):
        with open(os.path.join(self.workdir, "master%d.err" % i)) as f:
            text = f.read()
        return text if chars is None else text[-chars:]

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
    if ETCD and not os.access("/usr/bin/etcd", os.X_OK):
        fail("/usr/bin/etcd is missing: run scripts/setup.sh")
    etcd = Etcd(workdir) if ETCD else None
    masters = Masters(binary, workdir, etcd)
    agents = []
    try:
        masters.start(0, leading=True)
        for i in range(1, MASTERS):
            masters.start(i, leading=False)
            masters.wait_standby(i)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("TIRESIAS_")}
        base["TIRESIAS_MASTER"] = masters.addresses
        admin = dict(base,
                     TIRESIAS_CA=os.path.join(masters.tls, "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(masters.state_dir(0),
                                                      "admin-token"))
        for name in ("node-a", "node-b"):
            agents.append(start_operator_agent(
                binary, workdir, base, admin, name, ["--gpus", "2"]))
        wait_up(binary, admin, workdir, ["node-a", "node-b"])
        env, uid, home = user_session(binary, admin, workdir, user)
        try:
            leading = check(binary, masters, env, uid, home, etcd)
            if etcd is not None:
                # Nothing more to write (an agent's report may still be
                # committed as a master stops): then the copies agree.
                for agent in agents:
                    agent.terminate()
                    agent.wait(timeout=30)
                agents = []
                same_copies(masters, leading)
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
        if etcd is not None:
            etcd.stop()
    print("standby masters%s: %d takeovers by SIGKILL%s, running jobs "
          "kept, no submission lost or doubled" %
          (" on etcd" if ETCD else "", KILLS,
           " (the last by SIGSTOP), an etcd member killed, quorum lost "
           "and back" if ETCD else ""))


def submit(binary, env, home, name, seconds):
    r = cli(binary, env, "submit", "--gpus", "1", "--name", name,
            "--chdir", home, "--", "/bin/sh", "-c", JOB, "job", name,
            str(seconds), timeout=90)
    if r.returncode != 0:
        return None, r.stderr
    return r.stdout.strip().split()[-1], ""


def with_standby(binary, env, epoch=None):
    """`status` once it names every standby (the leader asks etcd for them
    every second), of the leader of `epoch` if given; None if it does not
    within 5 s."""
    deadline = time.time() + 5
    while True:
        now = status(binary, env)
        leader = (now or {}).get("leader")
        if leader and len(leader["standbys"]) == MASTERS - 1 and \
                (epoch is None or leader["epoch"] == epoch):
            return now
        if time.time() > deadline:
            return None
        time.sleep(0.3)


def check(binary, masters, env, uid, home, etcd):
    first = with_standby(binary, env)
    leader = first and first.get("leader")
    if not leader or (etcd is None and leader["epoch"] != 1):
        fail("status of the first leader: %s" % status(binary, env))
    epochs = [leader["epoch"]]
    long_jobs = {}
    for i in range(2):
        job, why = submit(binary, env, home, "long%d" % i, LONG_S)
        if job is None:
            fail("submit long%d: %s" % (i, why))
        long_jobs["long%d" % i] = job
    wait_started(home, list(long_jobs))

    # CLIENTS clients submitting all along, through the kills, together
    # about two 1 s jobs a second (2 of the agents' 4 GPUs).
    answered, refused, stop = {}, [], threading.Event()
    timed = []  # (began, seconds, name) of every submission

    # Each client on a fixed schedule, the clients spread over its period,
    # so that every moment (a kill, an election) finds a submission begun:
    # a client that waited out a takeover skips the slots it missed rather
    # than fall into step with the others.
    period = 0.5 * CLIENTS
    first_slot = time.time()

    def submitter(client):
        n = 0
        slot = first_slot + 0.5 * client
        while not stop.wait(max(0.0, slot - time.time())):
            name = "short%d" % n if CLIENTS == 1 else \
                "short%d-%d" % (client, n)
            n += 1
            began = time.time()
            job, why = submit(binary, env, home, name, 1)
            timed.append((began, time.time() - began, name))
            if job is None:
                refused.append((began, name, why))
            else:
                answered[name] = job
            while slot <= time.time():
                slot += period
    threads = [threading.Thread(target=submitter, args=(c,))
               for c in range(CLIENTS)]
    for thread in threads:
        thread.start()
    leading = 0
    takeovers = []  # (from, to) of every takeover
    pauses = []  # (from, to) of the pause without etcd's quorum
    member_killed_at = None
    follower_killed_at = None

    def wait_leader(since, why, standbys, bound_s=TAKEOVER_S):
        """Until a leader of a newer epoch answers `status` (on a state
        dir, exactly one newer), within `bound_s` of `since`: one of
        `standbys`, whose index it returns."""
        while True:
            now = status(binary, env)
            if now and now["leader"]["epoch"] > epochs[-1] and \
                    (etcd is not None or
                     now["leader"]["epoch"] == len(epochs) + 1):
                epochs.append(now["leader"]["epoch"])
                new = masters.index_of(now)
                if new not in standbys:
                    fail("after %s master %d leads, none of the standbys "
                         "%s" % (why, new, standbys))
                return new
            if time.time() - since > bound_s:
                fail("no new leader %d s after %s:\n%s" %
                     (bound_s, why, "\n".join(masters.tail(i)
                                              for i in standbys)))
            time.sleep(0.2)

    try:
        for kill in range(KILLS):
            time.sleep(2)
            if etcd is not None and kill == 0:
                follower_killed_at = kill_follower(binary, env, etcd,
                                                   epochs[-1])
            if etcd is not None and kill == KILLS // 2:
                # etcd's raft leader, of three: a quorum is left, which
                # elects another; the masters move to another member if
                # they talked to it.
                members = ((status(binary, env) or {}).get("leader", {})
                           .get("store", {}).get("members", []))
                if len(members) != len(etcd.procs):
                    fail("status before killing etcd's raft leader: %s" %
                         members)
                etcd.dead = next((i for i, m in enumerate(members)
                                  if m["raft_leader"]), 0)
                etcd.kill(etcd.dead)
                member_killed_at = time.time()
                print("etcd member %d killed (the raft leader%s)" %
                      (etcd.dead, ", the masters' member"
                       if members[etcd.dead]["in_use"] else ""))
                time.sleep(4)  # submissions around it, before the kill
                store_seen(status(binary, env), etcd, epochs[-1],
                           masters.tail(leading))
            # On etcd the last one is frozen (SIGSTOP) past its lease
            # instead: thawed, it must step down, not command.
            freeze = etcd is not None and kill == KILLS - 1
            masters.procs[leading].send_signal(
                signal.SIGSTOP if freeze else signal.SIGKILL)
            if not freeze:
                masters.procs[leading].wait(timeout=10)
            killed_at = time.time()
            standby = wait_leader(killed_at, "killing master %d" % leading,
                                  masters.others(leading))
            print("takeover %d: master %d leads (epoch %d) %.1f s after "
                  "the kill" % (kill + 1, standby, epochs[-1],
                                time.time() - killed_at))
            takeovers.append((killed_at, time.time()))
            if freeze:
                masters.procs[leading].send_signal(signal.SIGCONT)
                try:
                    code = masters.procs[leading].wait(timeout=10)
                except subprocess.TimeoutExpired:
                    fail("master %d, frozen past its lease and thawed, "
                         "did not step down:\n%s" %
                         (leading, masters.tail(leading)))
                if code != 3 or "stepping down" not in \
                        masters.since_start(leading):
                    fail("master %d thawed: exit %s, not a step-down:\n%s"
                         % (leading, code, masters.tail(leading)))
                print("the frozen leader stepped down once thawed")
            masters.start(leading, leading=False)
            masters.wait_standby(leading)
            leading = standby
        if etcd is not None:
            time.sleep(2)
            lost_at, back_at, new = lose_quorum(etcd, masters, leading,
                                                wait_leader)
            pauses.append((lost_at, back_at))
            masters.start(leading, leading=False)
            masters.wait_standby(leading)
            leading = new
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    # Only a submission begun in the pause (from a second before quorum
    # was lost to a leader answering again) may be refused.
    in_pause = [r for r in refused
                if any(p - 1 <= r[0] <= q for p, q in pauses)]
    if in_pause:
        print("%d submissions refused in the pause without quorum (%s)" %
              (len(in_pause), in_pause[0][2].strip()[-200:]))
    refused = [r[1:] for r in refused if r not in in_pause]
    if refused:
        fail("submissions refused through the takeovers: %s" % refused[:3])
    if with_standby(binary, env, epochs[-1]) is None:
        fail("status after the takeovers: %s" %
             (status(binary, env) or {}).get("leader"))
    # A submission begun in a takeover (from a second before the kill to
    # the new leader's first answer) waits for it; the others should not.
    outside = [(t, n) for began, t, n in timed
               if not any(k - 1 <= began <= d
                          for k, d in takeovers + pauses)]
    if follower_killed_at is not None:
        around = [t for began, t, n in timed
                  if follower_killed_at - 1 <= began <=
                  follower_killed_at + 3]
        print("the longest of %d submissions around the etcd follower's "
              "death: %.2f s" % (len(around), max(around or [0])))
        # No election: a member that refuses at once, the next one tried.
        if len(around) < 2:
            fail("only %d submissions around the etcd follower's death" %
                 len(around))
        if max(around) > 1.0:
            fail("a submission around the etcd follower's death took "
                 "%.2f s" % max(around))
    if member_killed_at is not None:
        around = [t for began, t, n in timed
                  if member_killed_at - 1 <= began <= member_killed_at + 3]
        print("the longest of %d submissions around the etcd member's "
              "death: %.2f s (the median of all: %.2f s)" %
              (len(around), max(around or [0]),
               sorted(t for _, t, _ in timed)[len(timed) // 2]))
        # etcd's election (0.5-1 s at these members' settings) and the
        # write a member took for its dead leader, given up after 250 ms
        # (etcd_client.cc); 1.0-1.5 s before short tries, 0.3-0.8 s since.
        if len(around) < 2:
            fail("only %d submissions around the etcd member's death" %
                 len(around))
        if max(around) > 1.5:
            fail("a submission around the etcd member's death took %.2f s" %
                 max(around))
    if outside:
        print("the longest submission outside the takeovers: %.2f s (%s)" %
              max(outside))
        # Killing one etcd member of three (a quorum left) is no takeover:
        # at most the client's move to the next member.
        if max(outside)[0] > 2.0:
            fail("a submission outside the takeovers took %.2f s (%s)" %
                 max(outside))

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
    print("%d short jobs submitted by %d clients through %d takeovers "
          "among %d masters, each created, started and ended once" %
          (len(answered), CLIENTS, KILLS, MASTERS))
    return leading


def kill_follower(binary, env, etcd, epoch):
    """Kills an etcd follower (the masters' member when it is one), waits
    3 s with submissions going on, checks that the lead stayed, starts the
    member again and waits until `status` shows every member up. Returns
    when it was killed."""
    members = ((status(binary, env) or {}).get("leader", {})
               .get("store", {}).get("members", []))
    followers = [i for i, m in enumerate(members) if not m["raft_leader"]]
    if len(members) != len(etcd.procs) or not followers:
        fail("status before killing an etcd follower: %s" % members)
    used = [i for i in followers if members[i]["in_use"]]
    victim = (used or followers)[0]
    etcd.kill(victim)
    killed_at = time.time()
    print("etcd member %d killed (a follower%s)" %
          (victim, ", the masters' member" if used else ""))
    time.sleep(3)
    leader = (status(binary, env) or {}).get("leader", {})
    if leader.get("epoch") != epoch:
        fail("the lead moved when etcd follower %d died: epoch %s, not %d" %
             (victim, leader.get("epoch"), epoch))
    etcd.restart(victim)
    deadline = time.time() + 20
    while True:
        members = ((status(binary, env) or {}).get("leader", {})
                   .get("store", {}).get("members", []))
        if len(members) == len(etcd.procs) and \
                all(m["error"] is None and m["has_leader"] for m in members):
            break
        if time.time() > deadline:
            fail("etcd member %d started again is not back in `status` "
                 "after 20 s: %s" % (victim, members))
        time.sleep(0.2)
    print("etcd member %d back %.1f s after its restart" %
          (victim, time.time() - killed_at - 3))
    return killed_at


def store_seen(now, etcd, epoch, log):
    """`status` shows the store: etcd, the log the leader holds, the dead
    member down (killed 4 s ago: the leader asks every second), the others
    up, one of them the raft leader and one the masters'. The same leader
    (`epoch`, its log's tail `log`): one member's death moves no lead."""
    leader = (now or {}).get("leader", {})
    if leader.get("epoch") != epoch:
        fail("the lead moved when etcd member %d died: epoch %s, not %d; "
             "the leader's log:\n%s" %
             (etcd.dead, leader.get("epoch"), epoch, log))
    store = leader.get("store", {})
    members = store.get("members", [])
    want = ["127.0.0.1:%d" % p for p in etcd.clients]
    dead = members[etcd.dead] if len(members) == len(want) else {}
    alive = [m for i, m in enumerate(members) if i != etcd.dead]
    if store.get("kind") != "etcd" or store.get("log_index", 0) < 1 or \
            [m["endpoint"] for m in members] != want or \
            dead.get("error") is None or dead["in_use"] or \
            any(m["error"] is not None or not m["has_leader"]
                for m in alive) or \
            sum(m["raft_leader"] for m in alive) != 1 or \
            sum(m["in_use"] for m in alive) != 1:
        fail("status after etcd member %d's death: %s" % (etcd.dead, store))
    print("status: log entry %d, member %d down (%s), the others up" %
          (store["log_index"], etcd.dead, dead["error"][:60]))


def lose_quorum(etcd, masters, leading, wait_leader):
    """One member is dead; freezing another leaves one of three: the leader
    must step down within its lease, no standby may lead; both
    members back, a master leads again. Returns the pause (from, to) and
    which master leads after it."""
    lost_at = time.time()
    frozen = (etcd.dead + 1) % len(etcd.procs)
    etcd.procs[frozen].send_signal(signal.SIGSTOP)
    print("etcd member %d frozen: one member of three left" % frozen)
    try:
        code = masters.procs[leading].wait(timeout=LEAD_TTL_S + 5)
    except subprocess.TimeoutExpired:
        fail("master %d still leads %d s after etcd lost its quorum:\n%s" %
             (leading, LEAD_TTL_S + 5, masters.tail(leading)))
    if code != 3 or "stepping down" not in masters.since_start(leading):
        fail("master %d without quorum: exit %s, not a step-down:\n%s" %
             (leading, code, masters.tail(leading)))
    print("the leader stepped down %.1f s after quorum was lost" %
          (time.time() - lost_at))
    time.sleep(1)
    for standby in masters.others(leading):
        if masters.procs[standby].poll() is not None or \
                accepts(masters.ports[standby]):
            fail("the standby master %d, without quorum, exited or "
                 "leads:\n%s" % (standby, masters.tail(standby)))
    etcd.restart(etcd.dead)
    etcd.procs[frozen].send_signal(signal.SIGCONT)
    back_at = time.time()
    # etcd extends every lease on electing a raft leader: the dead
    # leader's lasts its TTL more, and the restarted member rejoins.
    new = wait_leader(back_at, "etcd's quorum came back",
                      masters.others(leading), bound_s=QUORUM_BACK_S)
    print("quorum back after %.1f s: master %d leads %.1f s later" %
          (back_at - lost_at, new, time.time() - back_at))
    return lost_at, time.time(), new


def same_copies(masters, leading):
    """Every master's copy of the state, once all stopped (the standbys
    first, after two seconds to catch up), holds the same rows."""
    import sqlite3
    time.sleep(2)
    for i in masters.others(leading) + [leading]:
        masters.procs[i].send_signal(signal.SIGINT)
        masters.procs[i].wait(timeout=30)
    dumps = []
    for i in range(MASTERS):
        db = sqlite3.connect(os.path.join(masters.state_dir(i), "state.db"))
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "ORDER BY name")]
        dump = {}
        for t in tables:
            rows = db.execute("SELECT * FROM %s" % t).fetchall()
            if t == "meta":
                rows = [r for r in rows if r[0] != "log_index"]
            dump[t] = sorted(rows, key=repr)
        index = db.execute("SELECT value FROM meta WHERE key = "
                           "'log_index'").fetchone()
        db.close()
        dumps.append((index, dump))
    for other in range(1, MASTERS):
        differ = []
        for t in sorted(set(dumps[0][1]) | set(dumps[other][1])):
            a, b = dumps[0][1].get(t, []), dumps[other][1].get(t, [])
            if a != b:
                differ.append("%s: only in master 0's %s, only in master "
                              "%d's %s" % (t, [r for r in a if r not in b][:3],
                                           other,
                                           [r for r in b if r not in a][:3]))
        if dumps[0][0] != dumps[other][0] or differ:
            fail("the copies of masters 0 and %d stopped at log entries %s "
                 "and %s (master %d led last), differing in %s" %
                 (other, dumps[0][0], dumps[other][0], leading,
                  differ or "no table"))
    print("all %d copies hold the same %d rows at log entry %s" %
          (MASTERS, sum(len(r) for r in dumps[0][1].values()),
           dumps[0][0][0]))
    replaced = sum(masters.tail(i, None).count("replaced by the store's "
                                               "snapshot")
                   for i in range(MASTERS))
    print("copies replaced by a snapshot (restarted or lagging): %d" %
          replaced)
    if replaced < 1 and KILLS >= 2:
        fail("no restarted master's copy was behind a snapshot: the test "
             "did not try what it should")


def wait_started(home, names, timeout_s=30):
    deadline = time.time() + timeout_s
    while not all(read_lines(os.path.join(home, "ran-" + n)) for n in names):
        if time.time() > deadline:
            fail("jobs %s did not start" % names)
        time.sleep(0.2)


if __name__ == "__main__":
    main()
