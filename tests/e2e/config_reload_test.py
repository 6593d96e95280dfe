#!/usr/bin/env python3
"""A secure master and an agent started from a configuration file, and
SIGHUP.

The master (TLS and tokens, its default) reads `--config FILE` under its
command line. On SIGHUP it reads the file again: new thresholds and
PROMOTEKNOB are in force at once (status --json says so), a changed policy
is reported as waiting for a restart, a flag given on the command line
still wins, a broken file changes nothing and the master keeps running,
and settings an admin applied (`admin tuning set`) stay in force over the
file's. The agent, also from the file, lives through SIGHUP and says that
it reads its file only when it starts. Both end cleanly on SIGTERM.

Usage: config_reload_test.py BINARY."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import cli, fail, free_port, wait_until  # noqa: E402


def main():
    binary = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="config-reload-") as work:
        run(binary, work)
    print("PASS in %.1f s" % (time.time() - started))


def write(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def run(binary, work):
    port = free_port()
    state = os.path.join(work, "state")
    conf = os.path.join(work, "tiresias.toml")
    master_part = ('[master]\nlisten = "127.0.0.1:%d"\nstate-dir = "%s"\n'
                   'init-ca = "%s"\n' % (port, state,
                                         os.path.join(state, "tls")))
    write(conf, master_part + 'thresholds = 3600\nnode-timeout = 20\n')
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("TIRESIAS_")}
    err_path = os.path.join(work, "master.err")
    procs = []

    def master_said(words, timeout=10):
        def said():
            with open(err_path) as f:
                return words in f.read()
        wait_until("the master to say %r" % words, said, timeout=timeout)

    try:
        with open(err_path, "w") as err:
            master = subprocess.Popen(
                [binary, "master", "--config", conf, "--node-timeout", "7"],
                stdout=subprocess.DEVNULL, stderr=err, env=base)
        procs.append(master)
        token = os.path.join(state, "admin-token")
        wait_until("the master's admin token", lambda: os.path.exists(token)
                   or master.poll() is not None, timeout=30)
        if master.poll() is not None:
            with open(err_path) as f:
                fail("the master did not start: " + f.read())
        admin = dict(base, TIRESIAS_MASTER="127.0.0.1:%d" % port,
                     TIRESIAS_CA=os.path.join(state, "tls", "ca.pem"),
                     TIRESIAS_TOKEN_FILE=token)

        def tuning():
            r = cli(binary, admin, "status", "--json")
            if r.returncode != 0:
                fail("status: %s" % r.stderr)
            return json.loads(r.stdout)["tuning"]

        t = tuning()
        if t["thresholds_gpu_s"] != [3600] or t["source"] != "flags":
            fail("the file's thresholds are not in force: %s" % t)

        # The agent, from the same file's [agent] section.
        certs = os.path.join(work, "n1-tls")
        r = cli(binary, admin, "admin", "agent-cert", "issue", "n1",
                "--ca-dir", os.path.join(state, "tls"), "--out", certs)
        if r.returncode != 0:
            fail("agent-cert issue: %s" % r.stderr)
        agent_part = ('[agent]\nmaster = "127.0.0.1:%d"\ntls-dir = "%s"\n'
                      'name = "n1"\ngpus = 2\ngrace = 1\nstate-dir = "%s"\n'
                      % (port, certs, os.path.join(work, "agent")))
        write(conf, master_part + 'thresholds = 3600\nnode-timeout = 20\n\n' +
              agent_part)
        agent_err = os.path.join(work, "agent.err")
        with open(agent_err, "w") as err:
            agent = subprocess.Popen([binary, "agent", "--config", conf],
                                     stdout=subprocess.DEVNULL, stderr=err,
                                     env=base)
        procs.append(agent)

        def node_up():
            nodes = json.loads(cli(binary, admin, "nodes",
                                   "--json").stdout)["nodes"]
            return [(n["name"], n["gpus"], n["state"]) for n in nodes] == \
                [("n1", 2, "up")]
        wait_until("the agent from the file up", node_up, timeout=20)

        # New scheduling settings, a new policy, and node-timeout (given on
        # the command line: it wins, so it did not change).
        write(conf, master_part +
              'thresholds = "100:1000"\npromote-knob = 4\n'
              'policy = "tiresias-g"\nnode-timeout = 30\n\n' + agent_part)
        master.send_signal(signal.SIGHUP)
        master_said("--promote-knob, --thresholds in force now")
        master_said("--policy changed: in force at the next start")
        with open(err_path) as f:
            if "--node-timeout" in f.read():
                fail("node-timeout, given on the command line, was changed "
                     "by the file")
        t = tuning()
        if t["thresholds_gpu_s"] != [100, 1000] or t["promote_knob"] != 4:
            fail("SIGHUP did not put the file's settings in force: %s" % t)

        # A broken file: nothing changes, the master keeps serving.
        write(conf, master_part + 'thresholds = oops\n')
        master.send_signal(signal.SIGHUP)
        master_said(":%d: expected a value" % (master_part.count("\n") + 1))
        master_said("nothing changed")
        if master.poll() is not None or tuning()["thresholds_gpu_s"] != \
                [100, 1000]:
            fail("a broken file changed the master")

        # Settings applied by an admin win over the file's.
        r = cli(binary, admin, "admin", "tuning", "set", "--thresholds",
                "5000")
        if r.returncode != 0:
            fail("admin tuning set: %s" % r.stderr)
        write(conf, master_part + 'thresholds = 200\n\n' + agent_part)
        master.send_signal(signal.SIGHUP)
        master_said("the settings applied with `tune` stay in force")
        if tuning()["thresholds_gpu_s"] != [5000]:
            fail("the file's thresholds replaced the admin's: %s" % tuning())

        # The agent lives through SIGHUP, and says why nothing changed.
        agent.send_signal(signal.SIGHUP)

        def agent_said():
            with open(agent_err) as f:
                return "reads its flags and --config file only when it " \
                       "starts" in f.read()
        wait_until("the agent to answer SIGHUP", agent_said, timeout=10)
        if agent.poll() is not None or not node_up():
            fail("SIGHUP ended the agent")
        for p in (agent, master):
            p.send_signal(signal.SIGTERM)
            if p.wait(timeout=30) != 0:
                fail("a daemon exited %d on SIGTERM" % p.returncode)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
