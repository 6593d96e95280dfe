#!/usr/bin/python3
"""The emulated testbed really puts a network between servers.

scripts/testbed.sh makes two namespaces ("servers") of one emulated GPU
each, with links shaped to RATE, a master that consolidates, and an agent
in each. A 2-GPU job must then span both servers: its last rank sends
MB MiB to rank 0 (transfer_job.py). A 1-GPU job sends the same bytes to its
own server's address. Checked:
  - the 2-GPU job's ranks ran on the two servers, and rank 0 saw the bytes
    come from the other server's address;
  - the transfer between servers ran at no more than the shaped rate (plus
    a margin) and at least a third of it, and crossed the links (tc's byte
    counters of the sending server's link grew by the bytes sent);
  - the transfer within one server was at least 3x faster and left the
    links alone (they grew by less than a tenth of the bytes);
  - bad flags are refused in one line with exit 2; `down` removes the
    namespaces and links.
Exit 77 (ctest's skip) where namespaces cannot be made (not root, no ip/tc,
a sandbox): scripts/testbed.sh check exits 3 there.

Usage: testbed_test.py TIRESIAS_BINARY   (from the repository root)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTBED = os.path.join(ROOT, "scripts", "testbed.sh")
JOB = os.path.join(ROOT, "tests", "testbed", "transfer_job.py")
RATE_MBIT = 100
MB = 8
NAME = "tt%d" % (os.getpid() % 100000)
SUBNET = "10.79.%d" % (os.getpid() % 250 + 1)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def sh(*args, check=True):
    out = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(args), out.returncode, out.stderr))
    return out


def link_bytes(dev, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["tc", "-s", "qdisc", "show", "dev", dev]
    for line in sh(*cmd).stdout.splitlines():
        if line.strip().startswith("Sent "):
            return int(line.split()[1])
    fail("no byte counter for %s: %s" % (dev, sh(*cmd).stdout))


def counters():
    """Bytes out of each server (its namespace end) and into it."""
    return {i: (link_bytes("tb0", "%s-%d" % (NAME, i)), link_bytes("%s-h%d" % (NAME, i)))
            for i in (0, 1)}


def main():
    binary = os.path.abspath(sys.argv[1])
    check = sh(TESTBED, "check", "--name", NAME, check=False)
    if check.returncode == 3:
        print("SKIP: " + check.stderr.strip())
        sys.exit(SKIP)
    if check.returncode != 0:
        fail("testbed.sh check exited %d: %s" % (check.returncode, check.stderr))
    bad = sh(TESTBED, "up", "--rate", "fast", check=False)
    if bad.returncode != 2 or len(bad.stderr.strip().splitlines()) != 1 or "--rate" not in bad.stderr:
        fail("a bad --rate gave exit %d and %r" % (bad.returncode, bad.stderr))
    with tempfile.TemporaryDirectory(prefix="testbed-test-") as workdir:
        flags = ["--name", NAME, "--dir", workdir]
        try:
            run(binary, workdir, flags)
        finally:
            sh(TESTBED, "down", *flags, check=False)
        left = [l for l in sh("ip", "netns", "list").stdout.splitlines()
                if l.startswith(NAME + "-")]
        links = [l for l in sh("ip", "-o", "link", "show").stdout.splitlines()
                 if (": %s-" % NAME) in l]
        if left or links:
            fail("down left namespaces %s and links %s" % (left, links))
    print("PASS")


def wait_done(cli, job_id, timeout_s=90):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        job = json.loads(cli("job", job_id, "--json"))
        if job["state"] in ("finished", "failed", "cancelled"):
            if job["state"] != "finished":
                fail("job %s ended %s: %s" % (job_id, job["state"], cli("logs", job_id)))
            return job
        time.sleep(0.3)
    fail("job %s did not finish in %d s" % (job_id, timeout_s))


def run(binary, workdir, flags):
    up = sh(TESTBED, "up", *flags, "--servers", "2", "--gpus", "1", "--subnet", SUBNET,
            "--rate", "%dmbit" % RATE_MBIT, "--placement", "consolidate",
            "--tiresias", binary, check=False)
    if up.returncode != 0:
        fail("testbed.sh up exited %d: %s" % (up.returncode, up.stderr))
    master = sh(TESTBED, "env", *flags).stdout.strip().split("=", 1)[1]

    def cli(*args):
        return sh(binary, *args, "--master", master).stdout if args[0] != "submit" else \
            sh(binary, "submit", "--master", master, *args[1:]).stdout

    nodes = {n["name"]: n["address"] for n in json.loads(cli("nodes", "--json"))["nodes"]}
    want = {"%s-0" % NAME: SUBNET + ".10", "%s-1" % NAME: SUBNET + ".11"}
    if nodes != want:
        fail("nodes %s, expected %s" % (nodes, want))

    def transfer(gpus, name):
        before = counters()
        job_id = cli("submit", "--gpus", str(gpus), "--name", name, "--",
                     "/usr/bin/python3", JOB, "--mb", str(MB)).strip()
        job = wait_done(cli, job_id)
        after = counters()
        # --checkpoint-base DIR/checkpoints: <owner>/<cluster id>/job-N.
        found = glob.glob(os.path.join(workdir, "checkpoints", "*", "*", "job-" + job_id,
                                       "transfer.json"))
        if len(found) != 1:
            fail("expected one transfer.json of job %s, found %s" % (job_id, found))
        with open(found[0]) as f:
            res = json.load(f)
        grew = {i: (after[i][0] - before[i][0], after[i][1] - before[i][1]) for i in after}
        return job, res, grew

    job, cross, grew = transfer(2, "cross")
    if sorted(job["nodes"]) != sorted(want):
        fail("the 2-GPU job ran on %s, expected both servers" % job["nodes"])
    receiver = cross["node"]
    sender = [n for n in want if n != receiver][0]
    if cross["peer"] != want[sender]:
        fail("rank 0 on %s got the bytes from %s, expected the other server %s"
             % (receiver, cross["peer"], want[sender]))
    rate = cross["bytes"] / cross["seconds"] * 8 / 1e6
    s = int(sender.rsplit("-", 1)[1])
    print("between servers: %d MiB in %.3f s = %.1f Mbit/s (link %d Mbit/s); "
          "link bytes out of %s +%d, into %s +%d" %
          (MB, cross["seconds"], rate, RATE_MBIT, sender, grew[s][0], receiver, grew[1 - s][1]))
    if not (RATE_MBIT / 3 <= rate <= RATE_MBIT * 1.15):
        fail("the transfer between servers ran at %.1f Mbit/s, expected at most "
             "the shaped %d Mbit/s (+15%%) and at least a third of it" % (rate, RATE_MBIT))
    if grew[s][0] < MB << 20 or grew[1 - s][1] < MB << 20:
        fail("the links carried %s bytes, less than the %d sent" % (grew, MB << 20))

    job, local, grew = transfer(1, "local")
    local_rate = local["bytes"] / local["seconds"] * 8 / 1e6
    print("within a server: %d MiB in %.3f s = %.1f Mbit/s; links grew by %s bytes" %
          (MB, local["seconds"], local_rate, grew))
    if local_rate < 3 * rate:
        fail("within a server %.1f Mbit/s, not 3x the %.1f between servers"
             % (local_rate, rate))
    if max(max(v) for v in grew.values()) > (MB << 20) // 10:
        fail("a transfer within one server went over a link: %s" % grew)


if __name__ == "__main__":
    main()
