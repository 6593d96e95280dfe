#!/usr/bin/python3
"""End to end: what the daemons leave on disk is theirs alone, and a second
Unix user's job gets a checkpoint dir of its own.

A secure `tiresias up` (TLS, tokens: its defaults) started as root, with no
--state-dir, and a secure `tiresias master` + `tiresias agent` pair, each
running a job of a throwaway second user whose environment holds a secret:

- every file and folder under each state dir is closed to group and others
  (a folder may be traversable, 0711), except `up`'s public CA copy and
  its exports to source (public/env: no token in it);
- the second user cannot read state.db, state.db-wal, the admin token, a
  private key or the agent's token;
- the public CA copy works for that user's `tiresias whoami`, and `up`
  printed its path and the command that issues the user a token;
- the job's default checkpoint dir is absolute, the user's own (0700), and
  the job ran on its first try; a job 1 of a fresh `up` state does not see
  what the old job 1 left there.

Needs root (it creates throwaway users): exit 77 (skipped) otherwise.
Usage: private_files_test.py TIRESIAS_BINARY
"""
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import SKIP, fail, free_port  # noqa: E402

SECRET = "s3cret-%d-value" % os.getpid()
# Prints where it checkpoints, fails if an earlier job left something
# there, then leaves a file of its own.
JOB = ('d="$TIRESIAS_CHECKPOINT_DIR"; echo "ckpt=$d"; '
       'if [ -e "$d/left-by-job" ]; then echo "stale checkpoint"; exit 3; fi;'
       ' echo "$TIRESIAS_RESTART_COUNT" > "$d/left-by-job"')


def main():
    if os.geteuid() != 0:
        print("skipped: needs root to create throwaway users")
        sys.exit(SKIP)
    binary = os.path.abspath(sys.argv[1])
    started = time.time()
    tag = os.getpid() % 100000
    with tempfile.TemporaryDirectory(prefix="tiresias-priv-") as workdir:
        os.chmod(workdir, 0o755)  # the users' jobs may enter it
        homed = "tir-home-%d" % tag  # has a home: checkpoints under it
        homeless = "tir-nohome-%d" % tag  # has none: the agent's fallback
        home = os.path.join(workdir, "home")
        users = []
        try:
            subprocess.run(["useradd", "--system", "--create-home",
                            "--home-dir", home, "--user-group", homed],
                           check=True)
            users.append(homed)
            subprocess.run(["useradd", "--system", "--no-create-home",
                            "--home-dir", "/nonexistent", "--user-group",
                            homeless], check=True)
            users.append(homeless)
            run_up(binary, workdir, homed, homeless)
            run_pair(binary, workdir, homeless)
        finally:
            for user in users:
                subprocess.run(["userdel", user], capture_output=True)
                subprocess.run(["groupdel", user], capture_output=True)
    print("PASS in %.1f s" % (time.time() - started))


# --- helpers -------------------------------------------------------------

def as_user(user):
    pw = pwd.getpwnam(user)

    def switch():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return switch


def cli(binary, env, *args, user=None):
    return subprocess.run([binary] + list(args), env=env, cwd="/",
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=as_user(user) if user else None)


def clean_env():
    env = dict(os.environ)
    for key in ("TIRESIAS_CA", "TIRESIAS_TOKEN", "TIRESIAS_TOKEN_FILE",
                "TIRESIAS_MASTER", "XDG_RUNTIME_DIR"):
        env.pop(key, None)
    return env


def user_env(base, user, token, ca):
    pw = pwd.getpwnam(user)
    return dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=token, USER=user,
                LOGNAME=user, HOME=pw.pw_dir,
                TIRESIAS_CONTROL_DIR="/tmp/tiresias-ctl-%d" % pw.pw_uid,
                MY_SECRET_VALUE=SECRET)


def wait_for(path, proc, what, timeout=30):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline or proc.poll() is not None:
            fail("%s did not start" % what)
        time.sleep(0.1)
    time.sleep(0.5)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def issue_token(binary, admin, user):
    r = cli(binary, admin, "admin", "token", "create", "--user", user)
    if r.returncode != 0:
        fail("admin token create --user %s: %s" % (user, r.stderr))
    return r.stdout.strip()


def submit_and_wait(binary, env, user, admin):
    """Submits JOB as `user` (its environment holds SECRET), waits for it to
    end and returns (job json, its log)."""
    r = cli(binary, env, "submit", "--gpus", "1", "--", "/bin/sh", "-c", JOB,
            user=user)
    if r.returncode != 0:
        fail("%s's submit: %s" % (user, r.stderr))
    job = r.stdout.strip()
    deadline = time.time() + 40
    while True:
        info = json.loads(cli(binary, env, "job", job, "--json",
                              user=user).stdout or "{}")
        if info.get("state") in ("finished", "failed", "cancelled"):
            break
        if time.time() > deadline:
            fail("%s's job %s did not end: %s" %
                 (user, job, cli(binary, admin, "job", job).stdout))
        time.sleep(0.3)
    log = cli(binary, env, "logs", job, user=user).stdout
    if info.get("state") != "finished":
        fail("%s's job %s did not finish: %s\nlog:\n%s\nevents:\n%s" %
             (user, job, info, log,
              cli(binary, admin, "job", job).stdout))
    return info, log


def check_checkpoint(info, log, user):
    """The job ran on its first try, in an absolute checkpoint dir of the
    user's own (0700). Returns the dir."""
    if info.get("restarts") != 0 or info.get("attempt") != 1:
        fail("%s's job did not run on its first try: %s" % (user, info))
    m = re.search(r"^ckpt=(.*)$", log, re.M)
    if not m or not m.group(1).startswith("/"):
        fail("%s's TIRESIAS_CHECKPOINT_DIR is not absolute: %r" % (user, log))
    ckpt = m.group(1)
    st = os.lstat(ckpt)
    pw = pwd.getpwnam(user)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != pw.pw_uid or \
            stat.S_IMODE(st.st_mode) != 0o700:
        fail("%s's checkpoint dir %s: uid %d mode %o, expected uid %d, 0700"
             % (user, ckpt, st.st_uid, stat.S_IMODE(st.st_mode), pw.pw_uid))
    return ckpt


def check_modes(root, public=(), skip=()):
    """Every file and folder under `root` (itself included): no read or
    write for group or others; folders may be traversable (x). `public`:
    paths that others may read (a file 0644, a folder 0755); certificates
    (*.pem but keys) hold no secret and may be 0644, in their closed
    folder. `skip`: folders not entered (a user's own checkpoints)."""
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if os.path.join(dirpath, d) not in skip]
        for path in [dirpath] + [os.path.join(dirpath, n) for n in filenames]:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            mode = stat.S_IMODE(st.st_mode)
            if path in public:
                continue
            name = os.path.basename(path)
            if stat.S_ISREG(st.st_mode) and name.endswith(".pem") and \
                    not name.endswith("-key.pem") and mode == 0o644:
                continue
            if mode & 0o066:
                bad.append("%s %o" % (path, mode))
    if bad:
        fail("open to group or others under %s:\n  %s" %
             (root, "\n  ".join(bad)))


def check_unreadable(user, paths):
    """`user` can read none of `paths` (each must exist)."""
    for path in paths:
        if not os.path.exists(path):
            fail("expected %s to exist" % path)
    code = ("import sys\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        open(p, 'rb').read(1)\n"
            "        print('READ ' + p)\n"
            "    except OSError:\n"
            "        pass\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code] + list(paths),
                       capture_output=True, text=True, timeout=30,
                       preexec_fn=as_user(user))
    if "READ" in r.stdout or r.returncode != 0:
        fail("%s could read:\n%s%s" % (user, r.stdout, r.stderr))


def grep_secret(paths):
    """Which of `paths` (files) hold SECRET in plain text."""
    found = []
    for path in paths:
        with open(path, "rb") as f:
            if SECRET.encode() in f.read():
                found.append(path)
    return found


# --- tiresias up ---------------------------------------------------------

def start_up(binary, cwd, address):
    """`tiresias up` as root in `cwd`, its state dir the default; returns
    it, its state dir, what it printed at start and its output file."""
    start_up.runs = getattr(start_up, "runs", 0) + 1
    out = open(os.path.join(cwd, "..", "up-%d.out" % start_up.runs), "w")
    up = subprocess.Popen(
        [binary, "up", "--agents", "1", "--gpus", "2", "--listen", address,
         "--grace", "2"],
        stdout=out, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    deadline = time.time() + 30
    while True:
        with open(out.name) as f:
            text = f.read()
        if "Ctrl-C stops the cluster" in text:
            break
        if time.time() > deadline or up.poll() is not None:
            fail("tiresias up did not start:\n" + text)
        time.sleep(0.1)
    return up, os.path.join(cwd, "tiresias-up"), text, out


def run_up(binary, workdir, homed, homeless):
    cwd = os.path.join(workdir, "up-cwd")
    os.mkdir(cwd)
    address = "127.0.0.1:%d" % free_port()
    up, state, text, out = start_up(binary, cwd, address)
    base = dict(clean_env(), TIRESIAS_MASTER=address)
    try:
        # The printed state dir is absolute; a public CA copy and the token
        # command are named.
        m = re.search(r"state in (\S+)", text)
        if not m or m.group(1) != state:
            fail("up does not print its absolute state dir %s:\n%s" %
                 (state, text))
        cas = re.findall(r"TIRESIAS_CA=(\S+)", text)
        public_ca = [p for p in cas if "public" in p]
        if not public_ca:
            fail("up names no public CA copy for other users:\n" + text)
        public_ca = public_ca[0]
        if "admin token create --user" not in text:
            fail("up does not say how another user gets a token:\n" + text)
        admin = dict(base, TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
        # Both users: whoami through the public CA, a job with a secret in
        # its environment.
        ckpts = {}
        for user in (homed, homeless):
            env = user_env(base, user, issue_token(binary, admin, user),
                           public_ca)
            r = cli(binary, env, "whoami", user=user)
            if r.returncode != 0 or user not in r.stdout:
                fail("%s's whoami with the public CA %s: %s %s" %
                     (user, public_ca, r.stdout, r.stderr))
            info, log = submit_and_wait(binary, env, user, admin)
            ckpts[user] = check_checkpoint(info, log, user)
        if not ckpts[homed].startswith(os.path.join(workdir, "home") + "/"):
            fail("%s's checkpoint dir %s is not under their home" %
                 (homed, ckpts[homed]))
        first_homed = ckpts[homed]
        # While the master runs: state.db-wal is there; nobody else reads
        # what the state dir holds.
        secret_in = grep_secret(
            [os.path.join(state, n) for n in ("state.db", "state.db-wal")
             if os.path.exists(os.path.join(state, n))])
        if not secret_in:
            fail("the secret is in neither state.db nor its WAL: the test "
                 "reads the wrong files")
        public_dir = os.path.dirname(public_ca)
        public_env = os.path.join(public_dir, "env")
        with open(public_env) as f:
            exports = f.read()
        with open(os.path.join(state, "admin-token")) as f:
            admin_token = f.read().strip()
        if "TIRESIAS_MASTER=" not in exports or admin_token in exports:
            fail("public/env: no master address, or the admin token:\n" +
                 exports)
        check_modes(state, public=(public_dir, public_ca, public_env),
                    skip=(os.path.dirname(os.path.dirname(ckpts[homeless])),))
        keys = [os.path.join(d, n) for d, _, ns in
                os.walk(os.path.join(state, "tls")) for n in ns
                if n.endswith("-key.pem")]
        if len(keys) < 3:
            fail("expected the CA's, master's and agent's keys: %s" % keys)
        check_unreadable(homeless, [
            os.path.join(state, "state.db"),
            os.path.join(state, "state.db-wal"),
            os.path.join(state, "admin-token"),
            os.path.join(state, "agent-0", "agent-token")] + keys)
    finally:
        stop(up)
        out.close()
    check_modes(state, public=(public_dir, public_ca, public_env),
                skip=(os.path.dirname(os.path.dirname(ckpts[homeless])),))

    # A fresh state: job 1 again, in a checkpoint dir of its own.
    shutil.rmtree(state)
    up, state, text, out = start_up(binary, cwd, address)
    try:
        admin = dict(base, TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
        env = user_env(base, homed, issue_token(binary, admin, homed),
                       public_ca)
        info, log = submit_and_wait(binary, env, homed, admin)
        second = check_checkpoint(info, log, homed)
        if info.get("id") != 1 or second == first_homed:
            fail("job %s of a fresh state checkpoints in %s, as the old "
                 "job 1 did (%s)" % (info.get("id"), second, first_homed))
    finally:
        stop(up)
        out.close()


# --- tiresias master + tiresias agent ------------------------------------

def run_pair(binary, workdir, user):
    mdir = os.path.join(workdir, "master")
    adir = os.path.join(workdir, "agent")
    tls = os.path.join(mdir, "tls")
    address = "127.0.0.1:%d" % free_port()
    mout = open(os.path.join(workdir, "master.out"), "w")
    master = subprocess.Popen(
        [binary, "master", "--listen", address, "--state-dir", mdir,
         "--init-ca", tls, "--node-timeout", "10"],
        stdout=mout, stderr=subprocess.STDOUT, text=True)
    agent = None
    try:
        wait_for(os.path.join(mdir, "admin-token"), master, "tiresias master")
        r = subprocess.run(
            [binary, "admin", "agent-cert", "issue", "node-a", "--ca-dir",
             tls, "--out", os.path.join(workdir, "agent-tls")],
            capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail("agent-cert issue: %s" % r.stderr)
        aout = open(os.path.join(workdir, "agent.out"), "w")
        agent = subprocess.Popen(
            [binary, "agent", "--master", address, "--name", "node-a",
             "--gpus", "1", "--state-dir", adir, "--tls-dir",
             os.path.join(workdir, "agent-tls"), "--grace", "2"],
            stdout=aout, stderr=subprocess.STDOUT, text=True)
        wait_for(os.path.join(adir, "agent-token"), agent, "tiresias agent")
        base = dict(clean_env(), TIRESIAS_MASTER=address)
        admin = dict(base, TIRESIAS_CA=os.path.join(tls, "ca.pem"),
                     TIRESIAS_TOKEN_FILE=os.path.join(mdir, "admin-token"))
        # The user is given the CA certificate by the admin (a copy they
        # can read: the master's tls folder is the admin's).
        ca_copy = os.path.join(workdir, "ca-for-users.pem")
        shutil.copy(os.path.join(tls, "ca.pem"), ca_copy)
        os.chmod(ca_copy, 0o644)
        env = user_env(base, user, issue_token(binary, admin, user), ca_copy)
        info, log = submit_and_wait(binary, env, user, admin)
        ckpt = check_checkpoint(info, log, user)
        user_root = os.path.dirname(os.path.dirname(ckpt))
        for root in (mdir, adir):
            check_modes(root, skip=(user_root,))
        check_unreadable(user, [
            os.path.join(mdir, "state.db"),
            os.path.join(mdir, "state.db-wal"),
            os.path.join(mdir, "admin-token"),
            os.path.join(tls, "ca-key.pem"),
            os.path.join(tls, "master-key.pem"),
            os.path.join(adir, "agent-token")])
    finally:
        if agent is not None:
            stop(agent)
        stop(master)
        mout.close()
    for root in (mdir, adir):
        check_modes(root, skip=(user_root,))


if __name__ == "__main__":
    main()
