#!/usr/bin/python3
"""End to end, as an attacker on the same machine and as a user: a secure
`tiresias up` (TLS, tokens; what it makes by default) and the real CLI.

- A client without credentials, and one with the CA but no token, cannot
  submit (`id` used to run as root); nothing is stored.
- An admin issues a token for a Unix user; that user's job runs as that
  user's uid and gid (the agent runs as root), and another user's token
  cannot cancel it or read its log.
- A rogue agent speaking plain text gets nothing.
- Neither the daemons' output nor the agent's logs hold a token's secret
  or a private key.

Needs root (it creates a throwaway Unix user): exit 77 (skipped) otherwise.
Usage: security_test.py TIRESIAS_BINARY
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (fail, free_port,  # noqa: E402
                           run_as_throwaway_user, secure_up)


def main():
    run_as_throwaway_user(run, "tiresias-sec")


def run(binary, workdir, user):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address):
        attack_and_use(binary, workdir, state, address, user)
    check_no_secrets(workdir, state)


def cli(binary, env, *args):
    return subprocess.run([binary] + list(args), env=env,
                          capture_output=True, text=True, timeout=30)


def attack_and_use(binary, workdir, state, address, user):
    ca = os.path.join(state, "tls", "ca.pem")
    base = dict(os.environ)
    for key in ("TIRESIAS_CA", "TIRESIAS_TOKEN", "TIRESIAS_TOKEN_FILE"):
        base.pop(key, None)
    base["TIRESIAS_MASTER"] = address
    admin = dict(base, TIRESIAS_CA=ca,
                 TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))

    # No credentials at all (plain text to a TLS master), then the CA and
    # no token: both refused, with a line saying what is missing.
    # (A plain-text client cannot tell a TLS master from one that is down:
    # submit would retry for its default 30 s.)
    r = cli(binary, base, "submit", "--retry-for", "2", "--gpus", "1", "--",
            "id")
    if r.returncode == 0:
        fail("a client without credentials submitted a job: %s" % r.stdout)
    if "TIRESIAS_CA" not in r.stderr:
        fail("a plain-text client of a TLS master is not told of TIRESIAS_CA:"
             " %s" % r.stderr)
    r = cli(binary, dict(base, TIRESIAS_CA=ca), "submit", "--gpus", "1", "--",
            "id")
    if r.returncode == 0 or "TIRESIAS_TOKEN" not in r.stderr:
        fail("a client without a token: %d %s" % (r.returncode, r.stderr))
    if cli(binary, admin, "jobs", "--all", "--json").stdout.count('"id"') != 0:
        fail("a refused submission was stored")

    # A rogue agent in plain text: never registers.
    rogue = subprocess.run(
        [binary, "agent", "--insecure", "--master", address, "--name",
         "node-0", "--gpus", "8", "--state-dir",
         os.path.join(workdir, "rogue")],
        capture_output=True, text=True, timeout=10,
        preexec_fn=lambda: signal.alarm(3))
    import json
    nodes = json.loads(cli(binary, admin, "nodes", "--json").stdout)
    gpus = [n.get("gpus") for n in nodes.get("nodes", [])]
    if gpus != [2]:
        fail("the rogue agent registered: %s (its output: %s)" %
             (nodes, rogue.stderr[-500:]))

    # A user's token; their job runs as their uid and gid.
    r = cli(binary, admin, "admin", "token", "create", "--user", user)
    if r.returncode != 0:
        fail("token create: %s" % r.stderr)
    token = r.stdout.strip()
    other = cli(binary, admin, "admin", "token", "create", "--user",
                "someone-else").stdout.strip()
    as_user = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=token)
    # Where the user's job checkpoints: theirs (an operator's step; a task
    # cannot create a folder where its user may not).
    import pwd
    pw = pwd.getpwnam(user)
    ckpt = os.path.join(workdir, "ckpt-" + user)
    os.makedirs(ckpt)
    os.chown(ckpt, pw.pw_uid, pw.pw_gid)
    r = cli(binary, as_user, "submit", "--gpus", "1", "--checkpoint-dir",
            ckpt, "--", "/bin/sh", "-c", "id -u; id -g; sleep 1")
    if r.returncode != 0:
        fail("the user's submit: %s" % r.stderr)
    job = r.stdout.strip()
    as_other = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=other)
    r = cli(binary, as_other, "cancel", job)
    if r.returncode == 0 or "not allowed" not in r.stderr:
        fail("another user cancelled the job: %d %s" % (r.returncode,
                                                        r.stderr))
    if cli(binary, as_other, "logs", job).returncode == 0:
        fail("another user read the job's log")
    deadline = time.time() + 30
    while '"finished"' not in cli(binary, as_user, "job", job,
                                            "--json").stdout:
        if time.time() > deadline:
            fail("the user's job did not finish: %s" %
                 cli(binary, admin, "job", job).stdout)
        time.sleep(0.3)
    lines = cli(binary, as_user, "logs", job).stdout.split()
    if lines[:2] != [str(pw.pw_uid), str(pw.pw_gid)]:
        fail("the job ran as uid/gid %s, not %d/%d" %
             (lines[:2], pw.pw_uid, pw.pw_gid))
    # The audit log saw the refusal.
    audit = cli(binary, admin, "admin", "audit").stdout
    if "someone-else" not in audit or "denied" not in audit:
        fail("the refusal is not in the audit log:\n" + audit)
    with open(os.path.join(workdir, "tokens"), "w") as f:
        f.write(token + "\n" + other + "\n")


def check_no_secrets(workdir, state):
    with open(os.path.join(workdir, "tokens")) as f:
        secrets = [t.split("_")[2] for t in f.read().split()]
    with open(os.path.join(state, "admin-token")) as f:
        secrets.append(f.read().strip().split("_")[2])
    places = [os.path.join(workdir, "up.out"), os.path.join(workdir, "up.err")]
    for root, _, files in os.walk(os.path.join(state, "agent-0", "logs")):
        places += [os.path.join(root, name) for name in files]
    for path in places:
        with open(path, errors="replace") as f:
            text = f.read()
        for secret in secrets:
            if secret in text:
                fail("a token's secret is in %s" % path)
        if re.search(r"PRIVATE KEY", text):
            fail("a private key is in %s" % path)


if __name__ == "__main__":
    main()
