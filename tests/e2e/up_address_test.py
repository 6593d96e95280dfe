#!/usr/bin/python3
"""End to end, a restarted `tiresias up --listen 127.0.0.1:0` (secure, its
default) keeps the address its users exported: it listens on its previous
port again when that is free, and when another program has taken it, says
so and writes the new one to <state>/public/env for a shell to source. Judged
from outside: which port answers `tiresias nodes` with the exports a user
sourced.

Usage: up_address_test.py TIRESIAS_BINARY.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail  # noqa: E402


def start_up(binary, state, workdir, n):
    """`up` on any free port; (process, address, its stdout) once it has
    printed its exports."""
    out_path = os.path.join(workdir, "up-%d.out" % n)
    out = open(out_path, "w")
    up = subprocess.Popen(
        [binary, "up", "--listen", "127.0.0.1:0", "--agents", "1",
         "--grace", "1", "--state-dir", state],
        stdout=out, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        with open(out_path) as f:
            text = f.read()
        found = re.search(r"tiresias up: master on (\S+),", text)
        if found and "Ctrl-C" in text:
            return up, found.group(1), text
        if up.poll() is not None:
            fail("up exited: %s" % text)
        time.sleep(0.1)
    fail("up did not start")


def stop(up):
    up.send_signal(signal.SIGINT)
    try:
        up.wait(timeout=30)
    except subprocess.TimeoutExpired:
        up.kill()
        fail("up did not stop within 30 s of SIGINT")


def nodes_with_sourced_env(binary, state):
    """`tiresias nodes` in a shell that sourced <state>/public/env, without the
    caller's TIRESIAS_*."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TIRESIAS_")}
    return subprocess.run(
        ["/bin/sh", "-c", '. "$1/public/env" && "$2" nodes', "sh", state,
         binary],
        env=env, capture_output=True, text=True, timeout=60)


def main():
    binary = sys.argv[1]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="tiresias-up-address-") as workdir:
        state = os.path.join(workdir, "state")
        up, first, _ = start_up(binary, state, workdir, 1)
        r = nodes_with_sourced_env(binary, state)
        stop(up)
        if r.returncode != 0 or "node-0" not in r.stdout:
            fail("nodes with the sourced env: rc %d %s%s" %
                 (r.returncode, r.stdout, r.stderr))
        # Restarted: the same address, so the exports still hold.
        up, second, _ = start_up(binary, state, workdir, 2)
        stop(up)
        if second != first:
            fail("restarted on %s, not on its previous %s (free again)" %
                 (second, first))
        # Its port taken by another program: a new one, said and sourced.
        host, port = first.rsplit(":", 1)
        squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind((host, int(port)))
        squatter.listen(1)
        try:
            up, third, text = start_up(binary, state, workdir, 3)
            try:
                if third == first:
                    fail("listening on a port another program holds")
                if "its previous address, %s, is taken now" % first \
                        not in text:
                    fail("no word that the address moved:\n%s" % text)
                r = nodes_with_sourced_env(binary, state)
                if r.returncode != 0 or "node-0" not in r.stdout:
                    fail("nodes with the env after the move: rc %d %s%s" %
                         (r.returncode, r.stdout, r.stderr))
            finally:
                stop(up)
        finally:
            squatter.close()
        print("restart kept %s; with it taken, moved to %s and said so" %
              (first, third))
    print("PASS in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
