#!/usr/bin/env python3
"""The Debian packages, built and run as they install.

Builds tiresias, tiresias-master and tiresias-agent with CPack, checks
what each holds (the binaries, the systemd units, the default
configuration as conffiles, the maintainer scripts), checks the units with
`systemd-analyze verify` (when there is one), and the packaged configuration
files with `tiresias config check`. Then it runs the units' ExecStart lines
from the unpacked files as the units would: the master as an unprivileged
account of its own (the unit's User=), with flags that move its state into
a temporary folder (flags win over the file), and two agents as root, each
from a configuration file alone (its own certificate, name and GPUs). A
throwaway non-root user with a token submits two jobs; they run as that
user (seen from inside the jobs), one on each agent, and a webhook receiver
on loopback gets the first job's begin and end, signed with the user's
key from `admin notify-key` and not with the cluster's key (a host the
operator did not allow is refused at submission);
an agent stopped, the admins' webhook is told its node is lost.

Usage: package_test.py BINARY BUILD_DIR (root: skipped otherwise)."""
import hashlib
import hmac
import http.server
import json
import os
import threading
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (cli, fail, free_port,  # noqa: E402
                           run_as_throwaway_users, wait_until)

PACKAGES = ["tiresias", "tiresias-master", "tiresias-agent"]


class Hooks:
    """A webhook receiver on loopback: every POST it gets, with headers."""

    def __init__(self):
        self.got = []
        hooks = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hooks.got.append((self.path, dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def signed_with(self, key, path):
        """Whether every POST to `path` is signed under `key`."""
        for got_path, headers, body in list(self.got):
            if got_path != path:
                continue
            signed = headers["X-Tiresias-Timestamp"].encode() + b"." + body
            want = "sha256=" + hmac.new(key.encode(), signed,
                                        hashlib.sha256).hexdigest()
            if not hmac.compare_digest(want,
                                       headers["X-Tiresias-Signature"]):
                return False
        return True

    def events(self, key, path):
        """(event, parsed body) of the POSTs to `path`, each signature
        checked against `key`."""
        if not self.signed_with(key, path):
            fail("a webhook to %s with a bad signature" % path)
        return [(headers["X-Tiresias-Event"], json.loads(body))
                for got_path, headers, body in list(self.got)
                if got_path == path]


def sh(*args, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True,
                          **kwargs)


def build_packages(build_dir, out):
    r = sh("cpack", "--config", os.path.join(build_dir, "CPackConfig.cmake"),
           "-B", out, timeout=600)
    if r.returncode != 0:
        fail("cpack: %s%s" % (r.stdout[-2000:], r.stderr[-2000:]))
    debs = {}
    for name in os.listdir(out):
        m = re.match(r"^(tiresias(?:-master|-agent)?)_([^_]+)_(\w+)\.deb$",
                     name)
        if m:
            debs[m.group(1)] = os.path.join(out, name)
    if sorted(debs) != sorted(PACKAGES):
        fail("cpack made %s, want %s" % (sorted(debs), PACKAGES))
    return debs


def field(deb, name):
    return sh("dpkg-deb", "-f", deb, name).stdout.strip()


def files_of(deb):
    listing = sh("dpkg-deb", "-c", deb).stdout.splitlines()
    return {line.split()[5].lstrip(".") for line in listing}


def check_contents(debs, work):
    files = {p: files_of(d) for p, d in debs.items()}
    want = {
        "tiresias": ["/usr/bin/tiresias", "/usr/bin/tiresias-full",
                     "/usr/lib/tiresias/libtiresias_profiler.so",
                     "/usr/lib/tiresias/tiresias-container-init",
                     "/usr/share/man/man1/tiresias-master.1",
                     "/usr/share/bash-completion/completions/tiresias"],
        "tiresias-master": ["/usr/lib/systemd/system/tiresias-master.service",
                            "/etc/tiresias/master.toml"],
        "tiresias-agent": ["/usr/lib/systemd/system/tiresias-agent.service",
                           "/etc/tiresias/agent.toml"],
    }
    for package, paths in want.items():
        for path in paths:
            if path not in files[package]:
                fail("%s has no %s" % (package, path))
    version = field(debs["tiresias"], "Version")
    for package in ("tiresias-master", "tiresias-agent"):
        depends = field(debs[package], "Depends")
        if "tiresias (= %s)" % version not in depends:
            fail("%s depends on %r, not on tiresias %s" %
                 (package, depends, version))
        control = os.path.join(work, "control-" + package)
        sh("dpkg-deb", "-e", debs[package], control)
        component = package.split("-")[1]
        with open(os.path.join(control, "conffiles")) as f:
            if f.read().split() != ["/etc/tiresias/%s.toml" % component]:
                fail("%s: conffiles is not its configuration file" % package)
        for script in ("postinst", "prerm"):
            path = os.path.join(control, script)
            if not os.access(path, os.X_OK):
                fail("%s: %s is not executable" % (package, script))
            r = sh("sh", "-n", path)
            if r.returncode != 0:
                fail("%s: %s: %s" % (package, script, r.stderr))
    if "libgrpc" not in field(debs["tiresias"], "Depends"):
        fail("tiresias does not depend on the libraries it links: %s" %
             field(debs["tiresias"], "Depends"))


def unit_exec(root, unit):
    with open(os.path.join(root, "usr/lib/systemd/system", unit)) as f:
        text = f.read()
    m = re.search(r"^ExecStart=(.*)$", text, re.M)
    if not m:
        fail("%s has no ExecStart" % unit)
    return text, m.group(1).split()


def verify_units(root, work):
    if shutil.which("systemd-analyze") is None:
        print("systemd-analyze not found: unit files not verified")
        return
    for unit in ("tiresias-master.service", "tiresias-agent.service"):
        text, _ = unit_exec(root, unit)
        # The unit as installed, but for where its binary is here.
        copy = os.path.join(work, unit)
        with open(copy, "w") as f:
            f.write(text.replace("/usr/bin/tiresias",
                                 root + "/usr/bin/tiresias"))
        r = sh("systemd-analyze", "verify", copy,
               env=dict(os.environ, MANPATH=root + "/usr/share/man"))
        if r.returncode != 0 or r.stderr.strip():
            fail("systemd-analyze verify %s: %s" % (unit, r.stderr))
        for directive in ("Restart=on-failure", "ProtectSystem="):
            if directive not in text:
                fail("%s has no %s" % (unit, directive))
    master, _ = unit_exec(root, "tiresias-master.service")
    for directive in ("User=tiresias", "NoNewPrivileges=yes",
                      "ProtectSystem=strict", "ProtectHome=yes"):
        if directive not in master:
            fail("the master's unit has no %s" % directive)


def localize(argv, root):
    """A unit's ExecStart run from the unpacked files."""
    return [a.replace("/usr/bin/", root + "/usr/bin/")
             .replace("/etc/tiresias/", root + "/etc/tiresias/")
            for a in argv]


def agent_config(root, work, name, port, certs):
    """The packaged agent.toml, set for this test as an operator would."""
    with open(os.path.join(root, "etc/tiresias/agent.toml")) as f:
        text = f.read()
    text = text.replace('master = "127.0.0.1:50051"',
                        'master = "127.0.0.1:%d"' % port)
    text = text.replace('tls-dir = "/etc/tiresias/agent"',
                        'tls-dir = "%s"' % certs)
    text = text.replace('state-dir = "/var/lib/tiresias-agent"',
                        'state-dir = "%s"' % os.path.join(work, "st-" + name))
    text += 'name = "%s"\ngpus = 2\ngrace = 2\n' % name
    path = os.path.join(work, name + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run(binary, workdir, users):
    service_user, user = users
    build_dir = sys.argv[2]
    debs = build_packages(build_dir, os.path.join(workdir, "debs"))
    check_contents(debs, workdir)
    root = os.path.join(workdir, "root")
    for deb in debs.values():
        sh("dpkg-deb", "-x", deb, root)
    verify_units(root, workdir)
    tiresias = root + "/usr/bin/tiresias"
    for conf in ("master.toml", "agent.toml"):
        r = sh(tiresias, "config", "check", root + "/etc/tiresias/" + conf)
        if r.returncode != 0:
            fail("the packaged %s: %s" % (conf, r.stderr))

    import pwd
    svc = pwd.getpwnam(service_user)
    state = os.path.join(workdir, "state")
    os.makedirs(state, mode=0o700)
    os.chown(state, svc.pw_uid, svc.pw_gid)
    port = free_port()
    _, master_argv = unit_exec(root, "tiresias-master.service")
    procs = []
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("TIRESIAS_")}
    hooks = Hooks()
    try:
        with open(os.path.join(workdir, "master.err"), "w") as err:
            procs.append(subprocess.Popen(
                localize(master_argv, root) +
                ["--listen", "127.0.0.1:%d" % port, "--state-dir", state,
                 "--init-ca", os.path.join(state, "tls"),
                 "--notify-hosts", "127.0.0.1:%d" % hooks.port,
                 "--notify-admin",
                 "http://127.0.0.1:%d/admin" % hooks.port],
                stdout=subprocess.DEVNULL, stderr=err, env=base,
                user=svc.pw_uid, group=svc.pw_gid, cwd="/"))
        token_file = os.path.join(state, "admin-token")
        wait_until("the packaged master's admin token",
                   lambda: os.path.exists(token_file) or
                   procs[0].poll() is not None, timeout=30)
        if procs[0].poll() is not None:
            with open(os.path.join(workdir, "master.err")) as f:
                fail("the master from the package exited: " + f.read())
        base["TIRESIAS_MASTER"] = "127.0.0.1:%d" % port
        ca = os.path.join(state, "tls", "ca.pem")
        admin = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN_FILE=token_file)
        _, agent_argv = unit_exec(root, "tiresias-agent.service")
        names = ["pkg-a", "pkg-b"]
        for name in names:
            certs = os.path.join(workdir, name + "-tls")
            r = cli(tiresias, admin, "admin", "agent-cert", "issue", name,
                    "--ca-dir", os.path.join(state, "tls"), "--out", certs)
            if r.returncode != 0:
                fail("agent-cert issue: %s" % r.stderr)
            conf = agent_config(root, workdir, name, port, certs)
            argv = [a if a != "/etc/tiresias/agent.toml" else conf
                    for a in agent_argv]
            with open(os.path.join(workdir, name + ".err"), "w") as err:
                procs.append(subprocess.Popen(
                    localize(argv, root), stdout=subprocess.DEVNULL,
                    stderr=err, env=base))

        def nodes_up():
            listed = json.loads(cli(tiresias, admin, "nodes",
                                    "--json").stdout)["nodes"]
            return sorted((n["name"], n["gpus"]) for n in listed
                          if n["state"] == "up") == [(n, 2) for n in names]
        wait_until("both agents up, named and sized by their files",
                   nodes_up, timeout=30)
        for name in names:
            if not os.path.isdir(os.path.join(workdir, "st-" + name)):
                fail("agent %s did not use its file's state-dir" % name)

        r = cli(tiresias, admin, "admin", "token", "create", "--user", user)
        if r.returncode != 0:
            fail("token create: %s" % r.stderr)
        as_user = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=r.stdout.strip())
        account = pwd.getpwnam(user)
        out = os.path.join(workdir, "out")
        os.makedirs(out)
        os.chown(out, account.pw_uid, account.pw_gid)
        # A webhook only to the hosts the operator allowed.
        r = cli(tiresias, as_user, "submit", "--gpus", "1", "--notify",
                "http://127.0.0.1:1/x", "--", "/bin/true")
        if r.returncode == 0 or "not a host this master sends webhooks " \
                "to" not in r.stderr:
            fail("a webhook to a host not allowed was taken: %s" % r.stderr)
        jobs = []
        for i in range(2):
            notify = ["--notify", "http://127.0.0.1:%d/job" % hooks.port,
                      "--notify-on", "begin,end"] if i == 0 else []
            r = cli(tiresias, as_user, "submit", "--gpus", "2",
                    "--checkpoint-dir", out, *notify, "--", "/bin/sh", "-c",
                    "id -u > %s/uid-%d; sleep 2" % (out, i))
            if r.returncode != 0:
                fail("the user's submit: %s" % r.stderr)
            jobs.append(r.stdout.strip())

        def finished():
            states = [json.loads(cli(tiresias, as_user, "job", j,
                                     "--json").stdout)["state"]
                      for j in jobs]
            if any(s in ("failed", "cancelled") for s in states):
                fail("a job failed: %s" % states)
            return states == ["finished", "finished"]
        wait_until("the user's jobs to finish", finished, timeout=60)
        for i in range(2):
            with open(os.path.join(out, "uid-%d" % i)) as f:
                uid = f.read().strip()
            if uid != str(account.pw_uid):
                fail("job %d ran as uid %s, not %s's %d" %
                     (i, uid, user, account.pw_uid))
        ran_on = set()
        for j in jobs:
            job = json.loads(cli(tiresias, as_user, "job", j,
                                 "--json").stdout)
            ran_on.update(job.get("nodes") or [])
        if sorted(ran_on) != names:
            fail("the 2-GPU jobs ran on %s, want one on each of %s" %
                 (sorted(ran_on), names))

        # The job's begin and end reached the receiver, signed with its
        # owner's key (`admin notify-key`, from the master's state dir),
        # not the cluster's key, which signs the admins' notices.
        with open(os.path.join(state, "notify-key")) as f:
            key = f.read().strip()
        r = sh(tiresias, "admin", "notify-key", "--user", user,
               "--state-dir", state)
        user_key = r.stdout.strip()
        if r.returncode != 0 or len(user_key) != 64:
            fail("admin notify-key --user %s: %s%s" % (user, r.stdout,
                                                         r.stderr))
        wait_until("the job's begin and end webhooks",
                   lambda: len(hooks.events(user_key, "/job")) >= 2,
                   timeout=15)
        got = hooks.events(user_key, "/job")
        if hooks.signed_with(key, "/job"):
            fail("a job's webhook verifies under the cluster's key")
        if [(e, b["job_id"], b["kind"]) for e, b in got] != \
                [("begin", int(jobs[0]), "started"),
                 ("end", int(jobs[0]), "finished")] or \
                got[1][1]["user"] != user:
            fail("the job's webhooks: %s" % got)
        # An agent that stops: its node is lost, and the admins are told.
        procs[-1].terminate()
        procs[-1].wait(timeout=30)
        wait_until("the admins' node_down webhook",
                   lambda: hooks.events(key, "/admin"), timeout=15)
        event, body = hooks.events(key, "/admin")[0]
        if event != "node_down" or body["node"] != names[-1]:
            fail("the admins' webhook: %s %s" % (event, body))
    finally:
        hooks.server.shutdown()
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    run_as_throwaway_users(run, ["tir-svc", "tir-user"])
