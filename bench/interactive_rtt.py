#!/usr/bin/python3
"""Keystroke-to-echo round trip of `tiresias run --pty` on loopback: a
secure `tiresias up` (TLS and tokens, 1 agent), `run --pty -- cat` in a
pseudo-terminal of this script's, and N single keystrokes, each timed from
its write to its echo (the task's terminal echoes it: client -> master ->
agent -> pty -> agent -> master -> client). Beside it, the same keystrokes
to `cat` in a local pseudo-terminal (what a terminal costs without us), as
a ratio in the same run.

Usage: bench/interactive_rtt.py build/src/cli/tiresias [N]
"""
import os
import pty
import select
import signal
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "e2e"))
from local_cluster import admin_env, free_port, secure_up  # noqa: E402


def read_until(fd, wanted, timeout=20):
    got = b""
    deadline = time.time() + timeout
    while wanted not in got:
        if time.time() > deadline:
            raise SystemExit("no %r in %r" % (wanted, got[-200:]))
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            got += os.read(fd, 4096)
    return got


def keystrokes(argv, env, n):
    """Round trips of n keystrokes to `argv` (a cat) in a new pty, in ms."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, env)
    read_until(fd, b"ready")
    times = []
    for i in range(n):
        key = bytes([ord("a") + i % 26])
        start = time.perf_counter()
        os.write(fd, key)
        got = b""
        while key not in got:
            got += os.read(fd, 64)
        times.append((time.perf_counter() - start) * 1000)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return times


def summary(times):
    times = sorted(times)
    return "p50 %.2f ms, p90 %.2f ms, p99 %.2f ms" % (
        times[len(times) // 2], times[len(times) * 9 // 10],
        times[len(times) * 99 // 100])


def main():
    binary = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    # `cat` behind a prompt word, so both runs start the same way.
    task = ["/bin/sh", "-c", "echo ready; exec cat"]
    with tempfile.TemporaryDirectory(prefix="rtt-") as workdir:
        state = os.path.join(workdir, "state")
        address = "127.0.0.1:%d" % free_port()
        with secure_up(binary, workdir, state, address, agents=1):
            env = admin_env(state, address)
            local = keystrokes(task, env, n)
            started = time.perf_counter()
            ours = keystrokes([binary, "run", "--pty", "--gpus", "1", "--"] +
                              task, env, n)
            print("tiresias run --pty (%d keystrokes): %s" %
                  (n, summary(ours)))
            print("a local pty, same keystrokes:       %s" % summary(local))
            print("ratio of medians: %.1fx; %.1f s in all" % (
                statistics.median(ours) / statistics.median(local),
                time.perf_counter() - started))


if __name__ == "__main__":
    main()
