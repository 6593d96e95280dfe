"""Helpers for the whole-system failure tests: a `tiresias master` and
`tiresias agent`s as separate real processes on loopback, the CLI as the
client, and /bin/sh jobs that leave a start marker so a test can tell how
many times each job's process was started.

Not a test itself; imported by restart_test.py, agent_failure_test.py,
logs_follow_test.py (and preemption_test.py for wait_follower).
"""
import contextlib
import json
import os
import pwd
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
FINAL = ("finished", "failed", "cancelled")

# A job: appends "start <pid> <attempt-env>" to its marker file, then sleeps
# (in the background, so the TERM trap runs at once) and exits 0. Agents
# start each task in its own process group (led by the task's shim), so
# os.getpgid of the pid in the marker lets a test kill the whole task.
#   $1 marker file, $2 seconds to run on a first start, $3 seconds to run
#   on any later start (when the marker already has a line).
JOB_SCRIPT = r'''
marker=$1; first=$2; later=$3
if [ -s "$marker" ]; then secs=$later; else secs=$first; fi
echo "start $$ restart=${TIRESIAS_RESTART_COUNT:-?}" >> "$marker"
trap 'echo "term $$" >> "$marker.term"; exit 143' TERM
sleep "$secs" &
wait $!
echo "end $$" >> "$marker.end"
'''


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def alive(pid):
    """Whether process `pid` runs (a zombie counts as dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def run_with_cluster(run, prefix, **cluster_options):
    """The body of a test's main(): `run(cluster)` on a fresh Cluster in a
    temporary folder (binary from argv[1]), everything stopped after."""
    binary = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        cluster = Cluster(binary, workdir, **cluster_options)
        try:
            run(cluster)
        finally:
            cluster.stop()
    print("PASS in %.1f s" % (time.time() - started))


def run_as_throwaway_user(run, prefix):
    """The body of a test's main() that needs a second Unix user: skipped
    (exit 77) unless root; makes a throwaway system user (no home) named
    after `prefix` and a temporary folder it may enter, calls
    run(binary, workdir, user) with the binary from argv[1], and removes
    the user again, whatever happened."""
    run_as_throwaway_users(lambda b, w, users: run(b, w, users[0]), [prefix])


def run_as_throwaway_users(run, prefixes):
    """run_as_throwaway_user with one throwaway user per prefix: calls
    run(binary, workdir, users), users in the order of `prefixes`."""
    if os.geteuid() != 0:
        print("skipped: needs root to create throwaway users")
        sys.exit(SKIP)
    binary = sys.argv[1]
    users = ["%s-%d" % (prefix, os.getpid()) for prefix in prefixes]
    started = time.time()
    try:
        for user in users:
            subprocess.run(["useradd", "--system", "--no-create-home",
                            "--user-group", user], check=True)
        with tempfile.TemporaryDirectory(prefix=prefixes[0] + "-") as workdir:
            os.chmod(workdir, 0o755)  # the users' jobs may enter it
            run(binary, workdir, users)
    finally:
        for user in users:
            subprocess.run(["userdel", user], capture_output=True)
            subprocess.run(["groupdel", user], capture_output=True)
    print("PASS in %.1f s" % (time.time() - started))


@contextlib.contextmanager
def secure_up(binary, workdir, state, address, env=None, agents=1,
              extra=()):
    """A secure `tiresias up` (TLS and tokens, its default: `agents` agents
    of 2 emulated GPUs, grace 2 s) on `address` with `state`, its output in
    workdir/up.out and up.err; ready once its admin token is written (plus
    a second for the agent); `extra`: more of its flags. Stopped with
    SIGINT (killed after 30 s) when the block ends."""
    with open(os.path.join(workdir, "up.out"), "w") as out, \
            open(os.path.join(workdir, "up.err"), "w") as err:
        up = subprocess.Popen(
            [binary, "up", "--agents", str(agents), "--gpus", "2", "--listen",
             address, "--state-dir", state, "--grace", "2", *extra],
            stdout=out, stderr=err, text=True, env=env)
        try:
            deadline = time.time() + 20
            while not os.path.exists(os.path.join(state, "admin-token")):
                if time.time() > deadline or up.poll() is not None:
                    err.flush()
                    with open(os.path.join(workdir, "up.err")) as why:
                        fail("tiresias up did not start (exit %s): %s" %
                             (up.poll(), why.read()[-2000:]))
                time.sleep(0.1)
            time.sleep(1)
            yield up
        finally:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(timeout=30)
            except subprocess.TimeoutExpired:
                up.kill()


def admin_env(state, address):
    """The environment of the admin of a secure `up` on `address` with
    `state` (its CA and admin token), without the caller's TIRESIAS_*."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("TIRESIAS_")}
    base["TIRESIAS_MASTER"] = address
    return dict(base, TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))


def cli(binary, env, *args, timeout=60):
    """The real CLI run with `env`: its CompletedProcess (text)."""
    return subprocess.run([binary] + list(args), env=env,
                          capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def secure_up_and_agent(binary, workdir, name, agent_flags):
    """secure_up in workdir/state (one agent, node-0) and a second agent
    `name` started as an operator would: its own certificate from `admin
    agent-cert issue`, `agent_flags` (2 s grace), its stderr in
    workdir/agent.err. Yields (base, admin): the caller's environment
    without TIRESIAS_* but for TIRESIAS_MASTER, and that with the CA and
    the admin token."""
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=1):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("TIRESIAS_")}
        base["TIRESIAS_MASTER"] = address
        admin = dict(base, TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
        agent = start_operator_agent(binary, workdir, base, admin, name,
                                     agent_flags)
        try:
            yield base, admin
        finally:
            agent.terminate()
            agent.wait(timeout=30)


def user_session(binary, admin, workdir, user, home_name="u"):
    """A token for throwaway `user` (`admin token create`) and a home
    folder of theirs, workdir/HOME_NAME: (env with that token instead of
    the admin's, uid, home)."""
    r = cli(binary, admin, "admin", "token", "create", "--user", user)
    if r.returncode != 0:
        fail("admin token create: %s" % r.stderr)
    env = dict(admin, TIRESIAS_TOKEN=r.stdout.strip())
    del env["TIRESIAS_TOKEN_FILE"]
    account = pwd.getpwnam(user)
    home = os.path.join(workdir, home_name)
    os.makedirs(home)
    os.chown(home, account.pw_uid, account.pw_gid)
    return env, account.pw_uid, home


def wait_up(binary, admin, workdir, names, timeout_s=20):
    """Waits until the nodes up (`nodes --json` with `admin`) are `names`;
    their listings by name. Fails with what the operator's agent said
    (workdir/agent.err) if they never are."""
    deadline = time.time() + timeout_s
    nodes = {}
    while time.time() < deadline:
        listed = json.loads(cli(binary, admin, "nodes", "--json").stdout)
        nodes = {n["name"]: n for n in listed["nodes"] if n["state"] == "up"}
        if sorted(nodes) == sorted(names):
            return nodes
        time.sleep(0.2)
    with open(os.path.join(workdir, "agent.err")) as f:
        fail("nodes up: %s, want %s; the agent started by hand said:\n%s" %
             (sorted(nodes), sorted(names), f.read()[-2000:]))


def start_operator_agent(binary, workdir, base, admin, name, agent_flags):
    """An agent `name` started as an operator would, beside a secure_up in
    workdir/state (base and admin: as secure_up_and_agent yields them): its
    own certificate from `admin agent-cert issue`, `agent_flags` (2 s
    grace), its stderr in workdir/agent.err (the first's; a later one's in
    workdir/agent-NAME.err). The caller stops it."""
    state = os.path.join(workdir, "state")
    certs = os.path.join(workdir, name + "-tls")
    r = cli(binary, admin, "admin", "agent-cert", "issue", name,
            "--ca-dir", os.path.join(state, "tls"), "--out", certs)
    if r.returncode != 0:
        fail("admin agent-cert issue: %s" % r.stderr)
    err_path = os.path.join(workdir, "agent.err")
    if os.path.exists(err_path):
        err_path = os.path.join(workdir, "agent-%s.err" % name)
    with open(err_path, "w") as err:
        return subprocess.Popen(
            [binary, "agent", "--master", base["TIRESIAS_MASTER"],
             "--tls-dir", certs, "--name", name, "--grace", "2",
             *agent_flags,
             "--state-dir", os.path.join(workdir, "agent-" + name)],
            stdout=subprocess.DEVNULL, stderr=err, env=base)


def wait_follower(proc, timeout_s=30):
    """Waits for a `tiresias logs -f` process to end on its own; fails the
    test if it does not or exits non-zero. Returns (stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("tiresias logs -f did not end when the job did")
    if proc.returncode != 0:
        fail("tiresias logs -f exited %d: %s" % (proc.returncode, err))
    return out, err


def free_port():
    """A loopback port free now (a restarted master must reuse it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A job's body for `/bin/sh -c LOGGING_JOB job LOG`: a start line in LOG
# now, a stop line on SIGTERM (a preemption), running until then.
LOGGING_JOB = r'''
log="$1"
echo "start $(date +%s.%N)" >> "$log"
trap 'echo "stop $(date +%s.%N)" >> "$log"; exit 143' TERM
while :; do sleep 0.2; done
'''


def log_words(path):
    """LOGGING_JOB's log as lists of words (["start", "1700000000.1"]...);
    empty if it is not there yet."""
    try:
        with open(path) as f:
            return [line.split() for line in f]
    except FileNotFoundError:
        return []


def wait_until(what, check, timeout=30):
    """Polls check() every 0.1 s until it is true; fails naming `what`
    after `timeout` seconds."""
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            fail("timed out waiting for " + what)
        time.sleep(0.1)


def read_lines(path):
    try:
        with open(path) as f:
            return [l for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def read_task_records(ground):
    """The records chaos_task.py tasks left in `ground`, by start: dicts of
    job, attempt, rank, pid, node, gpus, start and last (unix s: its first
    and last sign of life) and code (its exit code; None if it was
    killed)."""
    tasks = []
    for name in os.listdir(ground):
        if not name.startswith("task-"):
            continue
        job, attempt, rank, pid = name[len("task-"):].split("-")
        with open(os.path.join(ground, name)) as f:
            lines = f.read().splitlines()
        start = lines[0].split()
        last, code = float(start[1]), None
        for line in lines[1:]:
            parts = line.split()
            if parts and parts[0] in ("alive", "end"):
                last = max(last, float(parts[1]))
            if parts and parts[0] == "end":
                code = int(parts[2])
        tasks.append({"job": job, "attempt": int(attempt), "rank": rank,
                      "pid": pid, "node": start[2],
                      "gpus": [] if start[3] == "-" else start[3].split(","),
                      "start": float(start[1]), "last": last, "code": code})
    return sorted(tasks, key=lambda t: t["start"])


class Cluster:
    # An agent's lease is node_timeout - grace - 1 s, and must span 3
    # heartbeats (node_timeout / 10 each): the defaults give a 3 s lease.
    def __init__(self, binary, workdir, node_timeout=6, policy="yarn-cs",
                 grace=2, master_args=()):
        self.binary = binary
        self.workdir = workdir
        self.node_timeout = node_timeout
        self.grace = grace
        self.master_args = list(master_args)
        self.agent_args = []  # more flags for every agent started
        self.policy = policy
        self.master_dir = os.path.join(workdir, "master")
        self.master = None
        self.address = None
        self.agents = {}
        self.markers = []
        # Its jobs' ports apart from another test's cluster on this host
        # (each master's job 1 would take 29517) and below the ephemeral
        # ports, as `up` picks them; one value across master restarts.
        self.job_port_base = random.randrange(20000, 22000, 16)

    # --- processes -------------------------------------------------------

    def start_master(self, address="127.0.0.1:0"):
        log = open(os.path.join(self.workdir, "master.log"), "a")
        self.master = subprocess.Popen(
            [self.binary, "master", "--insecure", "--listen", address,
             "--state-dir", self.master_dir,
             # Root's jobs checkpoint in the test's folder, not root's home.
             "--checkpoint-base", os.path.join(self.workdir, "ckpt"),
             "--node-timeout", str(self.node_timeout),
             "--policy", self.policy] +
            ([] if "--job-port-base" in self.master_args
             else ["--job-port-base", str(self.job_port_base)]) +
            self.master_args,
            stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.master.stdout.readline()
        if "listening on " not in line:
            self.master.wait(timeout=10)
            fail("tiresias master did not start (exit %s): %r; log:\n%s" %
                 (self.master.returncode, line, self.tail("master.log")))
        self.address = line.split("listening on ")[1].split()[0]
        return self.address

    def kill_master(self):
        self.master.send_signal(signal.SIGKILL)
        self.master.wait(timeout=10)

    def start_agent(self, name, gpus=2, grace=None):
        grace = self.grace if grace is None else grace
        log = open(os.path.join(self.workdir, name + ".log"), "a")
        # --allow-root-tasks: run as root (as CI does), the test submits its
        # jobs as root, and their tasks write to the test's root-owned
        # folder; an agent that is not root runs them as itself anyway.
        proc = subprocess.Popen(
            [self.binary, "agent", "--insecure", "--master", self.address,
             "--gpus", str(gpus), "--name", name,
             "--state-dir", os.path.join(self.workdir, "agent-" + name),
             "--grace", str(grace), "--allow-root-tasks", *self.agent_args],
            stdout=log, stderr=subprocess.STDOUT, text=True)
        self.agents[name] = proc
        return proc

    def kill_agent(self, name):
        proc = self.agents.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def tail(self, name, n=3000):
        try:
            with open(os.path.join(self.workdir, name)) as f:
                return f.read()[-n:]
        except FileNotFoundError:
            return "(no %s)" % name

    def stop(self):
        """Stops everything this test started: agents, master, and every
        job process group a marker names (agents leave tasks running)."""
        for proc in list(self.agents.values()) + [self.master]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
        self.agents = {}
        for marker in self.markers:
            for line in read_lines(marker):
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    try:
                        os.killpg(os.getpgid(int(parts[1])),
                                  signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass

    # --- client ----------------------------------------------------------

    def cli_raw(self, *args):
        env = dict(os.environ, TIRESIAS_MASTER=self.address)
        return subprocess.run([self.binary] + list(args), env=env,
                              capture_output=True, text=True, timeout=30)

    def cli_raw_timeout(self, timeout_s, *args):
        """cli_raw, but None if it takes longer than timeout_s (killed)."""
        env = dict(os.environ, TIRESIAS_MASTER=self.address)
        try:
            return subprocess.run([self.binary] + list(args), env=env,
                                  capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def cli(self, *args):
        out = self.cli_raw(*args)
        if out.returncode != 0:
            fail("tiresias %s: exit %d: %s\nmaster log:\n%s" %
                 (" ".join(args), out.returncode, out.stderr,
                  self.tail("master.log")))
        return out.stdout

    def submit_sh(self, name, gpus, first_secs, later_secs=None):
        """Submits a JOB_SCRIPT job, one process per node (each start is
        one marker line); returns (id, marker path)."""
        marker = os.path.join(self.workdir, "marker-" + name)
        self.markers.append(marker)
        later = first_secs if later_secs is None else later_secs
        job_id = self.cli("submit", "--gpus", str(gpus), "--tasks-per-node",
                          "1", "--name", name,
                          "--", "/bin/sh", "-c", JOB_SCRIPT, "sh", marker,
                          str(first_secs), str(later)).strip()
        if not job_id.isdigit():
            fail("submit printed %r, not a job id" % job_id)
        return job_id, marker

    def jobs(self):
        # Keyed by the id as `submit` prints it (JSON ids are numbers).
        return {str(j["id"]): j for j in json.loads(self.cli("jobs", "--all", "--json"))
                .get("jobs", [])}

    def job(self, job_id):
        return json.loads(self.cli("job", job_id, "--json"))

    def nodes(self):
        return {n["name"]: n for n in json.loads(self.cli("nodes", "--json"))
                .get("nodes", [])}

    def wait(self, predicate, what, timeout_s=30, source=None):
        source = source or self.jobs
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            value = source()
            if predicate(value):
                return value
            time.sleep(0.2)
        fail("timed out after %d s waiting for %s\njobs:\n%s\nnodes:\n%s\n"
             "master log:\n%s" % (timeout_s, what, self.cli("jobs", "--all"),
                                  self.cli("nodes"),
                                  self.tail("master.log")))

    def wait_nodes_up(self, names, timeout_s=15):
        return self.wait(
            lambda n: all(name in n and n[name]["state"] == "up"
                          for name in names),
            "nodes %s up" % ",".join(names), timeout_s, source=self.nodes)


def events(job):
    return [(e["kind"], e.get("detail", "")) for e in job.get("events", [])]


LAUNCH_EVENTS = ("started", "resumed", "preempted")


def launch_events(job):
    """(kind, attempt) of a job's started, resumed and preempted events
    (`tiresias job --json`), oldest first."""
    return [(e["kind"], e.get("attempt")) for e in job.get("events", [])
            if e["kind"] in LAUNCH_EVENTS]


def expected_launch_events(runs):
    """The launch events that task runs (attempt, ended by SIGTERM), in
    start order, call for: the first "started", each later one "resumed",
    and a "preempted" after each run its stop ended (143)."""
    out = []
    for i, (attempt, stopped) in enumerate(runs):
        out.append(("started" if i == 0 else "resumed", attempt))
        if stopped:
            out.append(("preempted", attempt))
    return out
