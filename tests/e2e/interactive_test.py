#!/usr/bin/python3
"""End to end, interactive jobs on the default a user gets: a secure
`tiresias up` (TLS and tokens, agents as root running jobs as their
owners) and two throwaway Unix users, judged from what the jobs and the
terminal show:

- `echo hello | tiresias run -- sh -c 'cat; id -u; exit 3'`: the job reads
  the caller's stdin, runs as its owner, and run exits 3;
- in tmux (send-keys, capture-pane), `tiresias run --pty --gpus 1 -- bash`
  gives a prompt on the node as the user; `stty size` follows a resize;
  Ctrl-C stops a foreground sleep and the shell goes on; `exit 3` makes
  run exit 3;
- `attach` shows a running batch job's output live; `port-forward` reaches
  an HTTP server the job started;
- the other user may not attach to the first one's job nor reach its
  ports, not even through a job of their own; an admin may watch an
  interactive job (--read-only) but not type into it;
- an interactive job nobody is attached to is hung up after its --grace.

Needs root: exit 77 (skipped) otherwise; tmux for the terminal part.
Usage: interactive_test.py TIRESIAS_BINARY
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (admin_env, cli, fail, free_port,  # noqa: E402
                           run_as_throwaway_users, secure_up,
                           user_session)
from local_cluster import wait_until  # noqa: E402


def job_state(binary, env, job):
    r = cli(binary, env, "job", str(job), "--json")
    return json.loads(r.stdout)["state"] if r.returncode == 0 else None


def submit(binary, env, home, *command):
    r = cli(binary, env, "submit", "--gpus", "1", "--chdir", home, "--",
            *command)
    if r.returncode != 0:
        fail("submit %s: %s" % (command, r.stderr))
    job = int(r.stdout.strip())
    wait_until("job %d to run" % job,
               lambda: job_state(binary, env, job) == "running")
    return job


def forward(binary, env, job, port):
    """`port-forward --once JOB 0:PORT`: (process, local port)."""
    p = subprocess.Popen([binary, "port-forward", "--once", str(job),
                          "0:%d" % port], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> job", line)
    if not m:
        p.kill()
        fail("port-forward said %r, %s" % (line, p.stderr.read()))
    return p, int(m.group(1))


def pipes(binary, env, home, uid):
    r = subprocess.run([binary, "run", "--chdir", home, "--", "sh", "-c",
                        "cat; id -u; exit 3"], env=env, input="hello\n",
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 3 or r.stdout != "hello\n%d\n" % uid:
        fail("run with pipes: rc %d, stdout %r, stderr %s" %
             (r.returncode, r.stdout, r.stderr))
    # A command that ends before run can join it: its output all the same.
    for i in range(3):
        r = subprocess.run([binary, "run", "--chdir", home, "--", "echo",
                            "short-%d" % i], env=env, capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0 or r.stdout != "short-%d\n" % i:
            fail("a short run: rc %d, stdout %r, stderr %s" %
                 (r.returncode, r.stdout, r.stderr))
    print("run with pipes: stdin reached the job, as uid %d, exit 3; short "
          "commands' output arrives" % uid)


class Tmux:
    def __init__(self, workdir, env, command):
        self.name = "tiresias-test-%d" % os.getpid()
        script = os.path.join(workdir, "tmux.sh")
        with open(script, "w") as f:
            for k, v in env.items():
                if k.startswith("TIRESIAS_"):
                    f.write("export %s='%s'\n" % (k, v))
            f.write("%s\necho \"EXIT=$?\" > %s/tmux.exit\nsleep 600\n" %
                    (command, workdir))
        self.exit_file = os.path.join(workdir, "tmux.exit")
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x",
                        "100", "-y", "30", "sh " + script], check=True)

    def keys(self, *keys):
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys],
                       check=True)

    def screen(self):
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name],
                              capture_output=True, text=True).stdout

    def wait_screen(self, pattern, what, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if re.search(pattern, self.screen(), re.M):
                return
            time.sleep(0.1)
        fail("%s: the terminal shows:\n%s" % (what, self.screen()))

    def close(self):
        subprocess.run(["tmux", "kill-session", "-t", self.name],
                       capture_output=True)


def terminal(binary, workdir, env, admin, home, uid):
    tmux = Tmux(workdir, env, "%s run --pty --gpus 1 --chdir %s -- bash "
                "--norc --noprofile -i" % (binary, home))
    try:
        tmux.wait_screen(r"\$\s*$", "a prompt")
        tmux.keys("id -u; echo at-$((6*7))", "Enter")
        tmux.wait_screen(r"^%d$" % uid, "id -u as the job's owner")
        tmux.wait_screen(r"^at-42$", "a command's output")
        tmux.keys("stty size", "Enter")
        tmux.wait_screen(r"^30 100$", "the terminal's size")
        subprocess.run(["tmux", "resize-window", "-t", tmux.name, "-x", "120",
                        "-y", "40"], check=True)
        time.sleep(0.5)
        tmux.keys("clear; stty size", "Enter")
        tmux.wait_screen(r"^40 120$", "the size after a resize")
        tmux.keys("clear; sleep 300; echo after-sleep", "Enter")
        time.sleep(1)
        started = time.time()
        tmux.keys("C-c")
        tmux.keys("echo still-$((1+1))", "Enter")
        # Typed before the shell drew its next prompt, the output follows
        # that prompt on its line.
        tmux.wait_screen(r"^(\S*[$#] )?still-2$", "the shell after Ctrl-C",
                         timeout=10)
        if re.search(r"^after-sleep$", tmux.screen(), re.M):
            fail("Ctrl-C did not stop the sleep (it printed after-sleep)")
        print("Ctrl-C stopped the foreground sleep in %.2f s; the shell "
              "goes on" % (time.time() - started))
        # An admin may watch, not type.
        jobs = json.loads(cli(binary, env, "jobs", "--all", "--json").stdout)["jobs"]
        job = [j["id"] for j in jobs if j["state"] == "running" and
               j["name"] == "bash"][0]
        r = cli(binary, admin, "attach", str(job), timeout=10)
        if r.returncode == 0 or "only its owner may type" not in r.stderr:
            fail("an admin typed into a user's shell: rc %d, %s" %
                 (r.returncode, r.stderr))
        watcher = subprocess.Popen([binary, "attach", "--read-only",
                                    str(job)], env=admin,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        tmux.keys("echo watched-$((2+3))", "Enter")
        time.sleep(1)
        watcher.terminate()
        out, err = watcher.communicate(timeout=10)
        if "watched-5" not in out:
            fail("an admin's read-only attach saw %r (%s)" % (out, err))
        tmux.keys("exit 3", "Enter")
        wait_until("run to exit", lambda: os.path.exists(tmux.exit_file))
        with open(tmux.exit_file) as f:
            code = f.read().strip()
        if code != "EXIT=3":
            fail("run --pty ended with %s, not 3:\n%s" % (code, tmux.screen()))
        print("run --pty: a prompt as uid %d, stty size follows a resize, "
              "exit 3 is run's exit code" % uid)
    finally:
        tmux.close()


def attach_and_forward(binary, workdir, env, other_env, home, other_home):
    ticker = submit(binary, env, home, "sh", "-c",
                    "i=0; while true; do echo tick-$i; i=$((i+1)); "
                    "sleep 0.2; done")
    p = subprocess.Popen([binary, "attach", str(ticker)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(2)
    p.terminate()
    out, err = p.communicate(timeout=10)
    ticks = [int(t) for t in re.findall(r"^tick-(\d+)$", out, re.M)]
    if len(ticks) < 4 or ticks != list(range(ticks[0], ticks[0] + len(ticks))):
        fail("attach showed %r (%s)" % (out, err))
    print("attach: %d lines live (tick-%d..%d)" % (len(ticks), ticks[0],
                                                   ticks[-1]))
    r = cli(binary, other_env, "attach", str(ticker), timeout=10)
    if r.returncode == 0 or "only its owner or an admin" not in r.stderr:
        fail("another user attached: rc %d, %s" % (r.returncode, r.stderr))

    port = free_port()
    with open(os.path.join(home, "hello.txt"), "w") as f:
        f.write("hello from the job\n")
    server = submit(binary, env, home, "/usr/bin/python3", "-m",
                    "http.server", str(port), "--bind", "127.0.0.1")

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_until("the job's HTTP server", listening)
    p, local = forward(binary, env, server, port)
    body = urllib.request.urlopen("http://127.0.0.1:%d/hello.txt" % local,
                                  timeout=10).read().decode()
    p.wait(timeout=10)
    if body != "hello from the job\n":
        fail("port-forward fetched %r" % body)
    # A client that half-closes after its request still gets the reply.
    p, local = forward(binary, env, server, port)
    with socket.create_connection(("127.0.0.1", local), timeout=10) as s:
        s.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
        s.shutdown(socket.SHUT_WR)
        reply = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    p.wait(timeout=10)
    if not reply.endswith(b"hello from the job\n"):
        fail("port-forward after a half-close: %r" % reply)
    print("port-forward: fetched the job's file through local port %d, "
          "also after a half-close" % local)
    # The other user: not to the first one's job, nor to its port from a
    # job of their own.
    for job, why in ((server, "only its owner"),
                     (submit(binary, other_env, other_home, "sleep", "300"),
                      "no process of job")):
        p, local = forward(binary, other_env, job, port)
        with socket.create_connection(("127.0.0.1", local), timeout=10) as s:
            try:
                s.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
                got = s.recv(1000)
            except ConnectionResetError:
                got = b""  # closed unread: refused
        p.wait(timeout=10)
        err = p.stderr.read()
        if got or why not in err:
            fail("the other user reached port %d of job %d: %r, %s" %
                 (port, job, got, err))
    print("the other user reached neither the job nor its port")


def grace(binary, env, home):
    p = subprocess.Popen([binary, "run", "--grace", "2", "--chdir", home,
                          "--", "sleep", "300"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    job = int(re.match(r"tiresias: job (\d+) submitted",
                       p.stderr.readline()).group(1))
    wait_until("job %d to run" % job,
               lambda: job_state(binary, env, job) == "running")
    time.sleep(0.5)
    p.kill()  # a dropped connection
    dropped = time.time()
    wait_until("the job to be hung up",
               lambda: job_state(binary, env, job) not in ("running", None),
             timeout=20)
    took = time.time() - dropped
    detail = json.loads(cli(binary, env, "job", str(job), "--json").stdout)
    if detail["state"] != "failed" or detail.get("exit_code") != 129:
        fail("a job nobody attached to ended %s (exit %s)" %
             (detail["state"], detail.get("exit_code")))
    if took < 1.5:
        fail("hung up %.1f s after the drop, before its 2 s grace" % took)
    print("a dropped run was hung up %.1f s later (grace 2 s): exit 129" %
          took)


def preempted(binary, env, admin, home):
    """A requeued interactive job: run shows a notice, waits, and joins the
    next attempt; a cancel ends run with 125."""
    p = subprocess.Popen([binary, "run", "--chdir", home, "--", "sh", "-c",
                          "echo up-$TIRESIAS_RESTART_COUNT; trap 'exit 143' "
                          "TERM; sleep 300 & wait"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    job = int(re.match(r"tiresias: job (\d+) submitted",
                       p.stderr.readline()).group(1))
    if p.stdout.readline() != "up-0\n":
        fail("the interactive job's first output")
    r = cli(binary, admin, "requeue", str(job))
    if r.returncode != 0:
        fail("requeue: %s" % r.stderr)
    if p.stdout.readline() != "up-1\n":
        fail("run did not join the job's next attempt")
    cli(binary, env, "cancel", str(job))
    out, err = p.communicate(timeout=30)
    if "is being stopped (preempt)" not in err or p.returncode != 125:
        fail("a requeued run: rc %d, stderr %s" % (p.returncode, err))
    print("a requeued run said so, joined the next attempt, and exited 125 "
          "on cancel")


def run(binary, workdir, users):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    with secure_up(binary, workdir, state, address, agents=2, extra=[]):
        admin = admin_env(state, address)
        wait_until("the two agents",
                   lambda: "node-1" in cli(binary, admin, "nodes").stdout)
        env, uid, home = user_session(binary, admin, workdir, users[0], "a")
        other_env, _, other_home = user_session(binary, admin, workdir,
                                                users[1], "b")
        pipes(binary, env, home, uid)
        if shutil.which("tmux"):
            terminal(binary, workdir, env, admin, home, uid)
        else:
            print("no tmux: the terminal part is skipped")
        attach_and_forward(binary, workdir, env, other_env, home, other_home)
        for job in json.loads(cli(binary, admin, "jobs", "--all", "--json")
                              .stdout)["jobs"]:
            if job["state"] == "running":
                cli(binary, admin, "cancel", str(job["id"]))
        preempted(binary, env, admin, home)
        grace(binary, env, home)


if __name__ == "__main__":
    run_as_throwaway_users(run, ["tio-a", "tio-b"])
