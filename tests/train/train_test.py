#!/usr/bin/python3
"""End-to-end tests of examples/train.py: real processes, real gloo on
127.0.0.1, real checkpoint files in a fresh temporary folder.

Usage: train_test.py CASE   (run from the repository root; ctest does)
CASE: single | ddp | preempt | preempt_ddp | preempt_one_rank | bad_flags

Exits 0 on success, 1 on failure, 77 (ctest SKIP_RETURN_CODE) when the
interpreter that runs the script cannot import torch. train.py is run with
$TRAIN_PYTHON, default /usr/bin/python3 (Debian's, with python3-torch).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
PYTHON = os.environ.get("TRAIN_PYTHON", "/usr/bin/python3")
SCRIPT = os.path.abspath(os.path.join("examples", "train.py"))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    """One train.py process, its output in a log file."""

    def __init__(self, workdir, name, args, env=None, pgid=None):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        full_env = dict(os.environ)
        for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR",
                  "MASTER_PORT", "TIRESIAS_RESTART_COUNT", "TIRESIAS_JOB_ID",
                  "TIRESIAS_CHECKPOINT_DIR", "CUDA_VISIBLE_DEVICES"):
            full_env.pop(k, None)
        full_env["CUDA_VISIBLE_DEVICES"] = ""
        full_env["PYTHONFAULTHANDLER"] = "1"  # SIGABRT dumps the stacks
        full_env.update(env or {})
        self.log = open(self.log_path, "wb")
        # A new process group (pgid None), or joins pgid's. A new session
        # would not do: a process can only join a group of its own session.
        group = 0 if pgid is None else pgid
        kwargs = {}
        if sys.version_info >= (3, 11):
            kwargs["process_group"] = group
        else:
            kwargs["preexec_fn"] = lambda: os.setpgid(0, group)
        self.proc = subprocess.Popen(
            [PYTHON, SCRIPT] + args, cwd=workdir, env=full_env,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            **kwargs)
        self.pid = self.proc.pid

    def text(self):
        with open(self.log_path, "r", errors="replace") as f:
            return f.read()

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # Hung: have it print where (faulthandler), then report.
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            raise Failure(f"{self.name} still running after {timeout} s")
        finally:
            self.log.close()
        return rc

    def wait_for(self, pattern, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text())
            if m:
                return m
            if self.proc.poll() is not None:
                raise Failure(f"{self.name} exited ({self.proc.returncode}) "
                              f"before printing /{pattern}/")
            time.sleep(0.05)
        raise Failure(f"{self.name} did not print /{pattern}/ in {timeout} s")

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait()


def dist_env(world, rank, port, ckpt, restarts=0):
    return {"WORLD_SIZE": str(world), "RANK": str(rank), "LOCAL_RANK": str(rank),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            "TIRESIAS_CHECKPOINT_DIR": ckpt, "TIRESIAS_JOB_ID": "test-job",
            "TIRESIAS_RESTART_COUNT": str(restarts)}


def start_group(t, name, world, ckpt, args, restarts=0):
    """world ranks of one job, all in one process group (rank 0 leads it),
    as a Tiresias agent starts a task."""
    port = free_port()
    runs = []
    for rank in range(world):
        runs.append(t.start(f"{name}.rank{rank}", args,
                            dist_env(world, rank, port, ckpt, restarts),
                            pgid=runs[0].pid if runs else None))
    return runs


def read_result(ckpt):
    path = os.path.join(ckpt, "result.json")
    check(os.path.exists(path), f"no {path}")
    with open(path) as f:
        return json.load(f)


def final_line(run):
    m = re.search(r"final step (\d+) loss (\S+) param_sum (\S+)", run.text())
    check(m, f"{run.name}: no 'final step' line")
    return m.group(0)


class Test:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tiresias-train-")
        self.runs = []

    def start(self, name, args, env=None, pgid=None):
        run = Run(self.dir, name, args, env, pgid)
        self.runs.append(run)
        return run

    def dump_logs(self):
        for run in self.runs:
            print(f"----- {run.name} (exit {run.proc.returncode}) -----")
            print(run.text(), end="")
        print("-----")

    def cleanup(self):
        for run in self.runs:
            run.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- cases ------------------------------------------------------------------

def case_single(t):
    ckpt = os.path.join(t.dir, "ckpt")
    run = t.start("single", ["--steps", "20", "--batch-size", "16"],
                  {"TIRESIAS_CHECKPOINT_DIR": ckpt})
    rc = run.wait(60)
    check(rc == 0, f"exit {rc}")
    result = read_result(ckpt)
    check(result["steps"] == 20, f"result steps {result['steps']} != 20")
    check(result["restarts"] == 0, f"result restarts {result['restarts']}")
    check(isinstance(result["loss"], float) and result["loss"] == result["loss"],
          f"bad loss {result['loss']}")
    check("final step 20 loss" in run.text(), "no 'final step 20' line")

    # A checkpoint that is not one: a one-line error, no traceback.
    bad = os.path.join(t.dir, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "checkpoint.pt"), "wb") as f:
        f.write(b"not a checkpoint")
    run = t.start("corrupt", ["--steps", "5"], {"TIRESIAS_CHECKPOINT_DIR": bad})
    rc = run.wait(60)
    check(rc == 1, f"corrupt checkpoint: exit {rc}, want 1")
    check("train.py: error: cannot load checkpoint" in run.text(),
          "corrupt checkpoint: no clear error")
    check("Traceback" not in run.text(), "corrupt checkpoint: traceback")


def case_ddp(t):
    ckpt = os.path.join(t.dir, "ckpt")
    runs = start_group(t, "ddp", 2, ckpt, ["--steps", "20", "--batch-size", "16"])
    for run in runs:
        rc = run.wait(15)
        check(rc == 0, f"{run.name}: exit {rc}")
    lines = [final_line(r) for r in runs]
    check(lines[0] == lines[1], f"ranks disagree: {lines}")
    result = read_result(ckpt)
    check(result["steps"] == 20 and result["world_size"] == 2,
          f"result {result}")
    check(f"loss {result['loss']:.9g} " in lines[0],
          f"result.json loss {result['loss']} != {lines[0]}")


def _preempt(t, world, signal_ranks):
    """Starts a slow run of N steps (plus an uninterrupted reference run),
    SIGTERMs it about 2 s after launch (to the whole process group, or to
    signal_ranks only), checks the checkpoint, restarts it with
    TIRESIAS_RESTART_COUNT=1 and checks it finishes N steps exactly as the
    reference did."""
    n = 40
    ckpt = os.path.join(t.dir, "ckpt")
    args = ["--steps", str(n), "--batch-size", "16", "--checkpoint-every", "5"]
    slow = args + ["--step-time", "0.1"]

    first = start_group(t, "first", world, ckpt, slow)
    ref = start_group(t, "reference", world, os.path.join(t.dir, "ref"), args)

    launched = time.monotonic()
    first[0].wait_for(r"step 1 loss", 30)
    time.sleep(max(0.5, 2.0 - (time.monotonic() - launched)))
    sent = time.monotonic()
    if signal_ranks is None:
        os.killpg(first[0].pid, signal.SIGTERM)  # rank 0 leads the group
    else:
        for r in signal_ranks:
            os.kill(first[r].pid, signal.SIGTERM)
    for run in first:
        rc = run.wait(30)
        check(rc == 0, f"{run.name}: exit {rc} after SIGTERM, want 0")
    took = time.monotonic() - sent
    check(took < 10, f"took {took:.1f} s to stop after SIGTERM")

    m = re.search(r"saved checkpoint at step (\d+) \(stop requested\)",
                  first[0].text())
    check(m, "rank 0 did not save a checkpoint on SIGTERM")
    k = int(m.group(1))
    check(0 < k < n, f"checkpoint at step {k}, want 0 < k < {n}")
    for run in first:
        check(f"stopped at step {k} of {n}" in run.text(),
              f"{run.name} did not stop at step {k}")
        check("Traceback" not in run.text(), f"{run.name}: traceback")
    check(os.path.exists(os.path.join(ckpt, "checkpoint.pt")), "no checkpoint.pt")
    check(not os.path.exists(os.path.join(ckpt, "result.json")),
          "result.json written by a preempted run")
    check(not [f for f in os.listdir(ckpt) if ".tmp" in f],
          f"temporary files left: {os.listdir(ckpt)}")

    second = start_group(t, "second", world, ckpt, args, restarts=1)
    for run in second + ref:
        rc = run.wait(60)
        check(rc == 0, f"{run.name}: exit {rc}")
    for run in second:
        check(f"resumed from step {k}\n" in run.text(),
              f"{run.name}: no 'resumed from step {k}'")
    result = read_result(ckpt)
    check(result["steps"] == n, f"result steps {result['steps']} != {n}")
    check(result["restarts"] == 1, f"result restarts {result['restarts']} != 1")
    lines = [final_line(r) for r in second]
    check(len(set(lines)) == 1, f"ranks disagree: {lines}")
    # Same data per step, model, optimizer and RNG restored: the preempted
    # run ends exactly where the uninterrupted one does.
    ref_result = read_result(os.path.join(t.dir, "ref"))
    check(result["loss"] == ref_result["loss"],
          f"loss {result['loss']} after resume != {ref_result['loss']} "
          f"uninterrupted")
    check(final_line(ref[0]) == lines[0],
          f"final state differs: {lines[0]} vs {final_line(ref[0])}")
    print(f"preempted at step {k} of {n}; stopped {took:.2f} s after SIGTERM")


def case_preempt(t):
    _preempt(t, 1, None)


def case_preempt_ddp(t):
    _preempt(t, 2, None)


def case_preempt_one_rank(t):
    # The signal reaches rank 1 only: rank 0 must still stop at the same step.
    _preempt(t, 2, [1])


def case_bad_flags(t):
    cases = [
        ([], {}, "--steps"),
        (["--steps", "0"], {}, "--steps"),
        (["--steps", "ten"], {}, "--steps"),
        (["--steps", "5", "--batch-size", "0"], {}, "--batch-size"),
        (["--steps", "5", "--step-time", "-1"], {}, "--step-time"),
        (["--steps", "5", "--step-time", "nan"], {}, "--step-time"),
        (["--steps", "5", "--checkpoint-every", "x"], {}, "--checkpoint-every"),
        (["--steps", "5", "--frobnicate"], {}, "--frobnicate"),
        (["--steps", "5"], {"WORLD_SIZE": "two"}, "WORLD_SIZE"),
        (["--steps", "5"], {"WORLD_SIZE": "0"}, "WORLD_SIZE"),
        (["--steps", "5"], {"WORLD_SIZE": "2", "RANK": "2"}, "RANK"),
        (["--steps", "5"], {"MASTER_PORT": "70000"}, "MASTER_PORT"),
        (["--steps", "5"], {"TIRESIAS_RESTART_COUNT": "-1"},
         "TIRESIAS_RESTART_COUNT"),
    ]
    for i, (args, env, word) in enumerate(cases):
        run = t.start(f"bad{i}", args, env)
        rc = run.wait(30)
        out = run.text()
        what = f"{args} {env}"
        check(rc == 2, f"{what}: exit {rc}, want 2")
        check("Traceback" not in out, f"{what}: traceback")
        errors = [l for l in out.splitlines() if l.startswith("train.py: error:")]
        check(len(errors) == 1 and word in errors[0],
              f"{what}: want one 'train.py: error:' line naming {word}")


CASES = {
    "single": case_single,
    "ddp": case_ddp,
    "preempt": case_preempt,
    "preempt_ddp": case_preempt_ddp,
    "preempt_one_rank": case_preempt_one_rank,
    "bad_flags": case_bad_flags,
}


def torch_missing():
    if not os.path.exists(PYTHON):
        return f"{PYTHON} does not exist"
    p = subprocess.run(
        [PYTHON, "-c", "import torch, torch.distributed as d; "
                       "assert d.is_available() and d.is_gloo_available()"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return f"{PYTHON} cannot import torch with gloo ({last})"
    return None


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} {{{'|'.join(CASES)}}}", file=sys.stderr)
        return 2
    name = sys.argv[1]
    if not os.path.exists(SCRIPT):
        print(f"FAIL: {SCRIPT} not found (run from the repository root)")
        return 1
    if name == "bad_flags":
        # Flags and environment are checked before torch is imported.
        if not os.path.exists(PYTHON):
            print(f"SKIP: {PYTHON} does not exist")
            return SKIP
    else:
        why = torch_missing()
        if why:
            print(f"SKIP: {why}; install python3-torch (scripts/setup.sh)")
            return SKIP
    t = Test()
    start = time.monotonic()
    try:
        CASES[name](t)
    except Failure as e:
        t.dump_logs()
        print(f"FAIL {name}: {e}")
        return 1
    except Exception as e:  # noqa: BLE001 -- a harness error is a failure too
        t.dump_logs()
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        return 1
    finally:
        t.cleanup()
    print(f"PASS {name} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
