#!/usr/bin/python3
"""What a container costs a job's start: `tiresias run --gpus 1 -- id` against
`tiresias run --gpus 1 --image IMAGE -- id` on a secure `tiresias
up` (TLS and tokens, 1 agent), N of each, alternating, each timed from
run's start to its exit (queueing, the scheduling pass, the start, the
exit's report). IMAGE is the e2e test's (tests/e2e/container_test.py: dash
and a few tools, 3.5 MB), imported into podman's store first and prepared
by the agent before the first timed run. Needs root, podman and crun.

Usage: bench/container_start.py build/src/cli/tiresias [N]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "e2e"))
from container_test import (build_image, free_cgroup2_controllers,  # noqa
                            restore_cgroup_mounts)
from local_cluster import admin_env, free_port, secure_up  # noqa: E402

IMAGE = "localhost/tiresias-bench-%d:1" % os.getpid()


def timed(argv, env):
    start = time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s: rc %d: %s" % (argv, r.returncode, r.stderr))
    return (time.perf_counter() - start) * 1000


def summary(times):
    times = sorted(times)
    return "p50 %.0f ms, p90 %.0f ms, min %.0f ms" % (
        times[len(times) // 2], times[len(times) * 9 // 10], times[0])


def main():
    binary = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with tempfile.TemporaryDirectory(prefix="cbench-") as workdir:
        os.chmod(workdir, 0o755)
        build_image(workdir, IMAGE)
        mounted = free_cgroup2_controllers()
        state = os.path.join(workdir, "state")
        address = "127.0.0.1:%d" % free_port()
        try:
            with secure_up(binary, workdir, state, address, agents=1):
                env = admin_env(state, address)
                # `id`: in the image as on the host (it has no `true`).
                plain = [binary, "run", "--gpus", "1", "--chdir", workdir,
                         "--", "id"]
                contained = plain[:2] + ["--image", IMAGE] + plain[2:]
                first = timed(contained, env)  # the image is exported here
                ours, base = [], []
                for _ in range(n):
                    base.append(timed(plain, env))
                    ours.append(timed(contained, env))
        finally:
            subprocess.run(["podman", "rmi", "--force", IMAGE],
                           capture_output=True)
            restore_cgroup_mounts(mounted)
    print("run -- id:               %s" % summary(base))
    print("run --image IMAGE -- id: %s" % summary(ours))
    print("difference of medians: %.0f ms; ratio %.2fx; the first run, "
          "exporting the image: %.0f ms" % (
              statistics.median(ours) - statistics.median(base),
              statistics.median(ours) / statistics.median(base), first))


if __name__ == "__main__":
    main()
