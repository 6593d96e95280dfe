#!/usr/bin/python3
"""End to end (issue 21): a job never gets the agent's environment.

A root `tiresias up` (secure, the default: TLS and tokens) is started from a
shell that holds a token (TIRESIAS_TOKEN) and a cloud key
(AWS_SECRET_ACCESS_KEY), as an admin's shell does. A throwaway Unix user
with a token of its own submits jobs (with `--export NONE` and with the
default export) that write their environment to a file. Neither value is
there; USER, LOGNAME and HOME are the user's, PATH a fixed default unless
exported; and `up` says in its log that it dropped the client credential.

Needs root (it creates a throwaway Unix user): exit 77 (skipped) otherwise.
Usage: agent_env_test.py TIRESIAS_BINARY
"""
import json
import os
import pwd
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (fail, free_port,  # noqa: E402
                           run_as_throwaway_user, secure_up)

# What the shell that started `up` held: an admin's token and a cloud key.
AGENT_TOKEN = "tsk_1_%032x" % (os.getpid() * 7919)
AGENT_KEY = "aws-secret-%d" % os.getpid()
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def main():
    run_as_throwaway_user(run, "tiresias-env")


def cli(binary, env, *args):
    return subprocess.run([binary] + list(args), env=env,
                          capture_output=True, text=True, timeout=30)


def run(binary, workdir, user):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    up_env = dict(os.environ, TIRESIAS_TOKEN=AGENT_TOKEN,
                  AWS_SECRET_ACCESS_KEY=AGENT_KEY, PYENV_ROOT="/root/.pyenv")
    up_env.pop("TIRESIAS_TOKEN_FILE", None)
    err_path = os.path.join(workdir, "up.err")
    with secure_up(binary, workdir, state, address, env=up_env):
        submit_and_check(binary, workdir, state, address, user)
    with open(err_path) as f:
        log = f.read()
    if not re.search(r"dropped TIRESIAS_TOKEN\b", log):
        fail("up does not say it dropped TIRESIAS_TOKEN:\n" + log[-2000:])
    if AGENT_TOKEN in log:
        fail("up's log holds the token's value")


def submit_and_check(binary, workdir, state, address, user):
    ca = os.path.join(state, "tls", "ca.pem")
    # The submitter's own shell holds none of what up's held (else the
    # default export would rightly take it along).
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("TIRESIAS_")
            and k not in ("AWS_SECRET_ACCESS_KEY", "PYENV_ROOT")}
    base["TIRESIAS_MASTER"] = address
    admin = dict(base, TIRESIAS_CA=ca,
                 TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
    r = cli(binary, admin, "admin", "token", "create", "--user", user)
    if r.returncode != 0:
        fail("token create: %s" % r.stderr)
    as_user = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=r.stdout.strip())
    pw = pwd.getpwnam(user)
    ckpt = os.path.join(workdir, "ckpt-" + user)
    os.makedirs(ckpt)
    os.chown(ckpt, pw.pw_uid, pw.pw_gid)
    jobs = {}
    for name, export in (("none", ["--export", "NONE"]), ("all", [])):
        r = cli(binary, as_user, "submit", "--gpus", "1", "--checkpoint-dir",
                ckpt, "--chdir", ckpt, *export, "--", "/bin/sh", "-c",
                'env > "$TIRESIAS_CHECKPOINT_DIR/env-%s.txt"' % name)
        if r.returncode != 0:
            fail("the user's submit (%s): %s" % (name, r.stderr))
        jobs[name] = r.stdout.strip()
    for name, job in jobs.items():
        deadline = time.time() + 30
        while True:
            state_of = json.loads(cli(binary, as_user, "job", job,
                                      "--json").stdout or "{}")
            if state_of.get("state") in ("finished", "failed", "cancelled"):
                break
            if time.time() > deadline:
                fail("job %s (%s) did not end: %s" % (job, name, state_of))
            time.sleep(0.3)
        if state_of.get("state") != "finished":
            fail("job %s (%s) failed: %s" %
                 (job, name, cli(binary, as_user, "logs", job).stdout))
        check_env(os.path.join(ckpt, "env-%s.txt" % name), name, pw)


def check_env(path, name, pw):
    with open(path) as f:
        text = f.read()
    env = dict(line.split("=", 1) for line in text.splitlines()
               if "=" in line)
    where = "the job's environment (--export %s)" % name.upper()
    if AGENT_TOKEN in text or "TIRESIAS_TOKEN" in env:
        fail("the agent's TIRESIAS_TOKEN reached %s" % where)
    if AGENT_KEY in text or "AWS_SECRET_ACCESS_KEY" in env:
        fail("the agent's AWS_SECRET_ACCESS_KEY reached %s" % where)
    if "PYENV_ROOT" in env:
        fail("the agent's PYENV_ROOT reached %s" % where)
    for var, want in (("USER", pw.pw_name), ("LOGNAME", pw.pw_name),
                      ("HOME", pw.pw_dir)):
        if env.get(var) != want:
            fail("%s in %s is %r, not the user's %r" %
                 (var, where, env.get(var), want))
    if name == "none" and env.get("PATH") != DEFAULT_PATH:
        fail("PATH in %s is %r, not %r" % (where, env.get("PATH"),
                                           DEFAULT_PATH))


if __name__ == "__main__":
    main()
