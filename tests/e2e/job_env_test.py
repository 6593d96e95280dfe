#!/usr/bin/python3
"""End to end, where a job runs and what it gets (submit --chdir, --export,
--output, --error): a `tiresias master` and one `tiresias agent` as real
processes; the CLI is run from a temporary folder with variables of its
own. Judged from ground truth, the files the jobs themselves write:

- a job submitted from that folder starts there (its `pwd`, and a file it
  writes by a relative name lands there), sees the caller's MYVAR, not
  TIRESIAS_TOKEN nor the caller's HOSTNAME, and the CUDA_VISIBLE_DEVICES
  the agent gave it, not the caller's;
- --export NONE passes nothing, --export MYVAR only MYVAR;
- --output out-%j-%r.txt --error err-%j.txt: the files hold exactly the
  job's stdout and stderr lines, and `tiresias logs` still shows both;
  --output alone gets both streams in the order written;
- --chdir to a folder missing on the node: the job fails to start (exit
  code 127, after its three tries) and its log says why; no file appears;
- bad flags are refused before anything is sent, naming the flag.

Usage: job_env_test.py TIRESIAS_BINARY. Real processes, gRPC, SQLite.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import events, fail, run_with_cluster  # noqa: E402

PROBE = ('echo "cwd=$(pwd)"; echo "MYVAR=${MYVAR-unset}"; '
         'echo "OTHER=${OTHER-unset}"; '
         'echo "TOKEN=${TIRESIAS_TOKEN-unset}"; '
         'echo "HOSTNAME=${HOSTNAME-unset}"; '
         'echo "CVD=${CUDA_VISIBLE_DEVICES-unset}"')


def main():
    run_with_cluster(run, "tiresias-jobenv-", node_timeout=30)


def read(path):
    with open(path) as f:
        return f.read()


def fields(text):
    return dict(line.split("=", 1) for line in text.splitlines()
                if "=" in line)


def run(cluster):
    cluster.start_master()
    cluster.start_agent("nodeA", gpus=2)
    cluster.wait_nodes_up(["nodeA"])
    here = os.path.realpath(os.path.join(cluster.workdir, "caller dir"))
    os.makedirs(here)
    caller_env = dict(os.environ, TIRESIAS_MASTER=cluster.address,
                      MYVAR="hello from the caller", OTHER="other",
                      TIRESIAS_TOKEN="tsk_not_for_jobs",
                      HOSTNAME="callers-laptop", CUDA_VISIBLE_DEVICES="7")

    def submit(*args, expect_ok=True):
        out = subprocess.run([cluster.binary, "submit", "--wait"] +
                             list(args), cwd=here, env=caller_env,
                             capture_output=True, text=True, timeout=90)
        if expect_ok and out.returncode != 0:
            fail("submit %s: exit %d, stderr %r\nmaster log:\n%s" %
                 (" ".join(args), out.returncode, out.stderr,
                  cluster.tail("master.log")))
        return out

    # 1. Where it runs and what it sees.
    job = submit("--gpus", "1", "--", "/bin/sh", "-c",
                 "{ %s; } > probe.txt" % PROBE).stdout.strip()
    probe = os.path.join(here, "probe.txt")
    if not os.path.exists(probe):
        fail("the job's probe.txt is not in the caller's folder %s" % here)
    seen = fields(read(probe))
    want = {"cwd": here, "MYVAR": "hello from the caller",
            "OTHER": "other", "TOKEN": "unset"}
    for key, value in want.items():
        if seen.get(key) != value:
            fail("job %s saw %s=%r, want %r (all: %r)" %
                 (job, key, seen.get(key), value, seen))
    if seen.get("HOSTNAME") == "callers-laptop":
        fail("the caller's HOSTNAME reached the job")
    if seen.get("CVD") not in ("0", "1"):
        fail("CUDA_VISIBLE_DEVICES=%r in the job: not the agent's GPU "
             "(the caller had 7)" % seen.get("CVD"))

    # 2. --export NONE and a list.
    submit("--export", "NONE", "--gpus", "1", "--", "/bin/sh", "-c",
           "{ %s; } > none.txt" % PROBE)
    seen = fields(read(os.path.join(here, "none.txt")))
    if seen.get("MYVAR") != "unset" or seen.get("OTHER") != "unset":
        fail("--export NONE: the job saw %r" % seen)
    submit("--export", "MYVAR", "--gpus", "1", "--", "/bin/sh", "-c",
           "{ %s; } > list.txt" % PROBE)
    seen = fields(read(os.path.join(here, "list.txt")))
    if seen.get("MYVAR") != "hello from the caller" or \
            seen.get("OTHER") != "unset":
        fail("--export MYVAR: the job saw %r" % seen)

    # 3. Output and error files.
    split = submit("--output", "out-%j-%r.txt", "--error", "err-%j.txt",
                   "--gpus", "1", "--", "/bin/sh", "-c",
                   "echo out-1; echo err-1 >&2; echo out-2; "
                   "echo err-2 >&2").stdout.strip()
    out_file = os.path.join(here, "out-%s-0.txt" % split)
    err_file = os.path.join(here, "err-%s.txt" % split)
    for path, text in ((out_file, "out-1\nout-2\n"),
                       (err_file, "err-1\nerr-2\n")):
        if not os.path.exists(path):
            fail("no %s; the folder has %r" % (path, os.listdir(here)))
        if read(path) != text:
            fail("%s holds %r, want %r" % (path, read(path), text))
    logs = cluster.cli("logs", split)
    if sorted(logs.splitlines()) != ["err-1", "err-2", "out-1", "out-2"]:
        fail("tiresias logs %s printed %r, want the four lines" %
             (split, logs))
    both = submit("--output", "both-%j.txt", "--gpus", "1", "--", "/bin/sh",
                  "-c", "echo a; echo b >&2; echo c").stdout.strip()
    text = read(os.path.join(here, "both-%s.txt" % both))
    if text != "a\nb\nc\n":
        fail("--output alone: the file holds %r, want 'a\\nb\\nc\\n'" % text)
    if cluster.cli("logs", both) != "a\nb\nc\n":
        fail("tiresias logs %s: %r" % (both, cluster.cli("logs", both)))

    # 4. A working dir the node does not have.
    missing = os.path.join(cluster.workdir, "not-there")
    out = submit("--chdir", missing, "--output", "never.txt", "--gpus", "1",
                 "--", "/bin/sh", "-c", "touch started", expect_ok=False)
    bad = out.stdout.strip()
    if out.returncode != 127:
        fail("--chdir %s: submit --wait exit %d (stderr %r), want 127" %
             (missing, out.returncode, out.stderr))
    logs = cluster.cli("logs", bad, "--attempt", "1")
    if "chdir to %s: No such file or directory" % missing not in logs:
        fail("the log of job %s does not say why it did not start: %r" %
             (bad, logs))
    kinds = [kind for kind, _ in events(cluster.job(bad))]
    if "start_failed" not in kinds or kinds[-1] != "failed":
        fail("job %s events %r: want start_failed ... failed" % (bad, kinds))
    if os.path.exists(os.path.join(here, "started")) or \
            os.path.exists(os.path.join(here, "never.txt")):
        fail("the job with a missing working dir ran somewhere")

    # 5. Bad flags: refused before sending, naming the flag.
    for args, says in ((["--output", "o-%x.txt"], "--output"),
                       (["--error", "e-%"], "--error"),
                       (["--export", "MY-VAR"], "--export"),
                       (["--export", "TIRESIAS_TOKEN"], "never exported")):
        out = submit(*(args + ["--gpus", "1", "--", "true"]),
                     expect_ok=False)
        if out.returncode == 0 or says not in out.stderr:
            fail("submit %s: exit %d, stderr %r; want a refusal naming %s" %
                 (" ".join(args), out.returncode, out.stderr, says))
    print("job env: cwd, env (deny-list, NONE, list), output/error files, "
          "missing chdir (127), bad flags")


if __name__ == "__main__":
    main()
