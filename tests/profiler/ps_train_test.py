#!/usr/bin/python3
"""End-to-end tests of examples/ps_train.py and of `tiresias profile` on it:
real processes, real gloo on 127.0.0.1, the real preloaded profiler.

Usage: ps_train_test.py CASE   (run from the repository root; ctest does)
CASE: skew_vgg16 | skew_resnet50 | on_off | preempt | bad_flags | rank_per_gpu

Exits 0 on success, 1 on failure, 77 (ctest SKIP_RETURN_CODE) when
$TRAIN_PYTHON (default /usr/bin/python3) cannot import torch and
torchvision. $TIRESIAS is the built `tiresias` binary.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
PYTHON = os.environ.get("TRAIN_PYTHON", "/usr/bin/python3")
TIRESIAS = os.environ.get("TIRESIAS", "build/src/cli/tiresias")
SCRIPT = os.path.abspath(os.path.join("examples", "ps_train.py"))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def clean_env(**extra):
    env = dict(os.environ)
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
              "TIRESIAS_RESTART_COUNT", "TIRESIAS_JOB_ID",
              "TIRESIAS_CHECKPOINT_DIR", "LD_PRELOAD"):
        env.pop(k, None)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.update(extra)
    return env


def expected_skew(model):
    """The model's largest parameter tensor over all its parameters."""
    code = ("import torch, torchvision\n"
            f"m = torchvision.models.{model}(weights=None)\n"
            "n = [p.numel() for p in m.parameters()]\n"
            "print(max(n) / sum(n))\n")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return float(out.stdout.strip())


def profile(workdir, args, timeout=120):
    """`tiresias profile --json -- ps_train.py args`: (exit code, JSON,
    stderr)."""
    cmd = [TIRESIAS, "profile", "--json", "--", PYTHON, SCRIPT] + args
    run = subprocess.run(cmd, cwd=workdir, env=clean_env(), capture_output=True,
                         text=True, timeout=timeout)
    try:
        data = json.loads(run.stdout)
    except ValueError:
        raise Failure(f"not JSON on stdout (exit {run.returncode}):\n"
                      f"{run.stdout[-2000:]}\nstderr:\n{run.stderr[-3000:]}")
    return run.returncode, data, run.stderr


def check_skew(workdir, model, args, low, high):
    start = time.monotonic()
    code, data, err = profile(workdir, ["--model", model] + args)
    seconds = time.monotonic() - start
    check(code == 0, f"tiresias profile exited {code}:\n{err[-3000:]}")
    check(data["command"]["exit_code"] == 0, f"ps_train failed: {err[-3000:]}")
    check(data["periodic"] is True,
          f"not periodic: {data.get('not_periodic_reason')}")
    skew = data["tensor_skew"]
    truth = expected_skew(model)
    print(f"{model}: measured tensor skew {skew:.4f}, parameter tensors "
          f"{truth:.4f}, iteration {data['iteration_s']:.3f} s, "
          f"{data['bytes_per_iteration'] / 2**20:.1f} MiB and "
          f"{data['messages_per_iteration']:.0f} messages per iteration; "
          f"{seconds:.1f} s")
    check(low <= skew <= high, f"skew {skew} not in [{low}, {high}]")
    # Each message carries a 48-byte gloo header and there are small control
    # messages: the measured skew is within 1% of the tensors'.
    check(abs(skew - truth) <= 0.01 * truth,
          f"measured skew {skew} is not the model's {truth}")
    shares = data["peer_byte_shares"]
    check(abs(sum(p["share"] for p in shares) - 1) < 1e-9, "shares sum to 1")
    for key in ("iteration_s", "bytes_per_iteration",
                "messages_per_iteration"):
        check(data[key] and data[key] > 0, f"{key}: {data[key]}")
    return data


def case_skew_vgg16(workdir):
    # One worker is enough for the skew (and keeps two cores' loopback
    # traffic at 1.1 GB per step); two servers split its tensors.
    data = check_skew(workdir, "vgg16",
                      ["--workers", "1", "--servers", "2", "--steps", "6",
                       "--compute-time", "0.02"], 0.6, 0.8)
    # Round-robin puts the weights (even tensors: fc6 among them) on server
    # 0 and the biases on server 1: the load skew across servers is extreme.
    servers = sorted(data["peer_byte_shares"], key=lambda p: -p["share"])
    check(servers[0]["share"] > 0.45, f"peer shares: {servers}")


def case_skew_resnet50(workdir):
    check_skew(workdir, "resnet50",
               ["--workers", "2", "--servers", "2", "--steps", "5",
                "--compute-time", "0.02"], 0.0, 0.15)


def run_plain(workdir, args, timeout=120):
    run = subprocess.run([PYTHON, SCRIPT] + args, cwd=workdir, env=clean_env(),
                         capture_output=True, text=True, timeout=timeout)
    check(run.returncode == 0, f"ps_train exited {run.returncode}:\n"
                               f"{run.stderr[-3000:]}{run.stdout[-2000:]}")
    return run


def result(workdir):
    with open(os.path.join(workdir, "checkpoints", "result.json")) as f:
        return json.load(f)


def case_on_off(workdir):
    """The same training with and without the profiler: the same weights."""
    args = ["--model", "resnet50", "--workers", "2", "--servers", "1",
            "--steps", "4", "--compute-time", "0"]
    plain_dir = os.path.join(workdir, "plain")
    profiled_dir = os.path.join(workdir, "profiled")
    os.makedirs(plain_dir)
    os.makedirs(profiled_dir)
    run_plain(plain_dir, args)
    code, data, err = profile(profiled_dir, args)
    check(code == 0, f"tiresias profile exited {code}: {err[-3000:]}")
    plain, profiled = result(plain_dir), result(profiled_dir)
    print(f"param_sum {plain['param_sum']!r} plain, {profiled['param_sum']!r} "
          f"profiled")
    check(plain["steps"] == profiled["steps"] == 4, f"{plain} {profiled}")
    check(plain["param_sum"] == profiled["param_sum"],
          f"results differ: {plain} vs {profiled}")


def case_preempt(workdir):
    """SIGTERM to the launcher: every process stops at the same step, the
    servers checkpoint, all exit 0; run again, it resumes and ends with the
    weights of an uninterrupted run."""
    args = ["--model", "resnet50", "--workers", "2", "--servers", "2",
            "--steps", "12", "--compute-time", "0.1", "--log-every", "1"]
    straight = os.path.join(workdir, "straight")
    interrupted = os.path.join(workdir, "interrupted")
    os.makedirs(straight)
    os.makedirs(interrupted)
    run_plain(straight, args)
    log_path = os.path.join(interrupted, "first.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([PYTHON, SCRIPT] + args, cwd=interrupted,
                                env=clean_env(), stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with open(log_path) as f:
            if "step 3 " in f.read():
                break
        check(proc.poll() is None, "ps_train ended before step 3")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=90)
    with open(log_path) as f:
        first = f.read()
    check(rc == 0, f"exit {rc} after SIGTERM:\n{first[-3000:]}")
    # Four processes share the log: two lines can land on one, so each
    # process's line is found in the whole text, not line by line.
    stops = re.findall(r"\[(\w+ \d+/\d+)\] stopped at step (\d+) ", first)
    check(len({who for who, _ in stops}) == len(stops) == 4,
          f"every process stops: {stops}\n{first[-3000:]}")
    steps = {step for _, step in stops}
    check(len(steps) == 1, f"all at the same step: {stops}")
    stopped_at = int(steps.pop())
    check(3 <= stopped_at < 12, f"stopped at {stopped_at}")
    for s in (0, 1):
        check(os.path.exists(os.path.join(interrupted, "checkpoints",
                                          f"server-{s}.pt")),
              f"server {s} checkpoint")
    check(not os.path.exists(os.path.join(interrupted, "checkpoints",
                                          "result.json")),
          "no result.json before the end")
    second = run_plain(interrupted, args).stdout
    check(f"resumed from step {stopped_at}" in second,
          f"resumes from {stopped_at}:\n{second[-2000:]}")
    a, b = result(straight), result(interrupted)
    print(f"stopped at step {stopped_at}; param_sum {a['param_sum']!r} "
          f"straight, {b['param_sum']!r} preempted and resumed")
    check(a["steps"] == b["steps"] == 12, f"{a} {b}")
    check(a["param_sum"] == b["param_sum"], f"{a} vs {b}")


def case_bad_flags(workdir):
    for args, text in (
            (["--steps", "1", "--workers", "0"], "--workers"),
            (["--steps", "1", "--model", "lenet"], "--model"),
            (["--steps", "x"], "--steps")):
        run = subprocess.run([PYTHON, SCRIPT] + args, cwd=workdir,
                             env=clean_env(), capture_output=True, text=True,
                             timeout=60)
        check(run.returncode == 2, f"{args}: exit {run.returncode}")
        check(text in run.stderr and "Traceback" not in run.stderr,
              f"{args}: {run.stderr}")
    run = subprocess.run(
        [PYTHON, SCRIPT, "--steps", "1", "--workers", "2", "--servers", "1"],
        cwd=workdir, env=clean_env(WORLD_SIZE="2", RANK="0"),
        capture_output=True, text=True, timeout=60)
    check(run.returncode == 2 and "WORLD_SIZE (2) must be --workers + "
          "--servers" in run.stderr, f"world size: {run.stderr}")


def node_tasks(workdir, args, gpus_per_node, port):
    """Runs ps_train.py as an agent would with --rank-per-gpu: one task per
    node (WORLD_SIZE = nodes), each granted gpus_per_node[i] GPUs. Returns
    [(exit code, stderr)] per node."""
    procs = []
    for rank, gpus in enumerate(gpus_per_node):
        env = clean_env(WORLD_SIZE=str(len(gpus_per_node)), RANK=str(rank),
                        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                        CUDA_VISIBLE_DEVICES=",".join(map(str, range(gpus))),
                        TIRESIAS_CHECKPOINT_DIR=os.path.join(workdir,
                                                             "checkpoints"))
        procs.append(subprocess.Popen(
            [PYTHON, SCRIPT, "--rank-per-gpu"] + args, cwd=workdir, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return [(p.wait(timeout=120), p.communicate()[1]) for p in procs]


def case_rank_per_gpu(workdir):
    """Two node tasks of 1 and 2 GPUs start one rank per GPU (1 server, 2
    workers) and train to the weights of the same job on one machine; a
    job whose GPUs do not number W + P is refused in one line."""
    args = ["--model", "resnet50", "--workers", "2", "--servers", "1",
            "--steps", "3", "--compute-time", "0.05"]
    plain = os.path.join(workdir, "plain")
    nodes = os.path.join(workdir, "nodes")
    os.makedirs(plain)
    os.makedirs(nodes)
    run_plain(plain, args)
    port = 20000 + os.getpid() % 20000
    runs = node_tasks(nodes, args, [1, 2], port)
    for rank, (code, err) in enumerate(runs):
        check(code == 0, f"node task {rank} exited {code}:\n{err[-3000:]}")
    a, b = result(plain), result(nodes)
    print(f"param_sum {a['param_sum']!r} on one machine, {b['param_sum']!r} "
          f"as 1 + 2 GPUs; step_s {b['step_s']}")
    check(a["param_sum"] == b["param_sum"] and b["steps"] == 3, f"{a} {b}")
    check(b["step_s"] > 0 and b["timed_steps"] == 2, f"step_s: {b}")
    wrong = os.path.join(workdir, "wrong")
    os.makedirs(wrong)
    runs = node_tasks(wrong, args, [1, 1], port + 2)
    for code, err in runs:
        check(code == 2 and "--rank-per-gpu needs --workers" in err and
              "Traceback" not in err and len(err.strip().splitlines()) == 1,
              f"2 GPUs for 3 ranks: exit {code}: {err[-2000:]}")


CASES = {
    "rank_per_gpu": case_rank_per_gpu,
    "skew_vgg16": case_skew_vgg16,
    "skew_resnet50": case_skew_resnet50,
    "on_off": case_on_off,
    "preempt": case_preempt,
    "bad_flags": case_bad_flags,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: {sys.argv[0]} {{{'|'.join(CASES)}}}", file=sys.stderr)
        return 2
    probe = subprocess.run([PYTHON, "-c", "import torch, torchvision"],
                           capture_output=True)
    if probe.returncode != 0:
        print(f"SKIP: {PYTHON} cannot import torch and torchvision "
              f"(apt-get install python3-torch python3-torchvision)")
        return SKIP
    workdir = tempfile.mkdtemp(prefix="tiresias-ps-train-test-")
    try:
        CASES[sys.argv[1]](workdir)
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
