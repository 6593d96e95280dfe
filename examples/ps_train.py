#!/usr/bin/python3
"""Parameter-server training of a real model, for Tiresias's traffic profiler.

W workers and P parameter servers, each a separate process of one PyTorch
process group over gloo. The model's parameter tensors are assigned to the
servers round-robin in creation order (tensor i lives on server i mod P, as
TensorFlow's round-robin device chooser places variables). Every step each
worker computes a gradient for every tensor, pushes each one to its server
and pulls the updated tensor back; a server averages the workers' gradients
and applies SGD. So every iteration sends each tensor, whole, W times each
way: the traffic a PS job of the paper makes, and what `tiresias profile`
measures (the largest tensor's share of a worker's bytes is the model's
tensor skew).

Models come from torchvision, built without downloading weights: vgg11,
vgg16, vgg19, alexnet, resnet50, resnet101, resnet152, inception_v3,
googlenet.

  ps_train.py --model vgg16 --workers 2 --servers 2 --steps 100
  ps_train.py --model resnet50 --compute-time 0.05 --steps 20

Run by itself (no WORLD_SIZE/RANK in the environment) it starts its W + P
processes on this machine (127.0.0.1, a free port) and waits for them. Under
a Tiresias agent each task is one of them, configured like examples/train.py:
WORLD_SIZE (must be W + P), RANK (ranks 0..P-1 are the servers, P..P+W-1 the
workers), MASTER_ADDR, MASTER_PORT, TIRESIAS_CHECKPOINT_DIR,
TIRESIAS_RESTART_COUNT, TIRESIAS_JOB_ID.

--compute-time S replaces the forward and backward pass by a sleep of S
seconds and uses fixed synthetic gradients, so that on a small machine a run
measures communication, not CPU speed (the traffic is the same).

SIGTERM (or a first Ctrl-C): every rank agrees, at the next step boundary,
to stop (one all-reduce of a stop flag per step); each server saves its
shard, the step and its optimizer state atomically
($TIRESIAS_CHECKPOINT_DIR/server-S.pt) and all exit 0. On start the servers
load their shards, agree on the step, and the run continues up to --steps.
At the end rank 0 writes result.json: {"steps": N, "param_sum": x, ...},
the same with or without a preemption in between (and with or without the
profiler).

Run it with Debian's /usr/bin/python3 (packages python3-torch and
python3-torchvision).
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

import gpu_ranks
from job_common import (UsageError, atomic_write, hard_exit, int_type,
                        read_env as common_read_env, run_main, seconds)

PROG = "ps_train.py"
MODELS = ("vgg11", "vgg16", "vgg19", "alexnet", "resnet50", "resnet101",
          "resnet152", "inception_v3", "googlenet")

# --- signals (installed before the slow torch import) ----------------------

_stop_requested = False
_interrupts = 0
_children = []  # the launcher's processes


def _on_signal(signum, frame):
    global _stop_requested, _interrupts
    _stop_requested = True
    if signum == signal.SIGINT:
        _interrupts += 1
        if _interrupts > 1:  # a second Ctrl-C: give up at once
            for child in _children:
                try:
                    child.kill()
                except OSError:
                    pass
            os._exit(130)
    for child in _children:  # the launcher passes the request on
        try:
            child.send_signal(signal.SIGTERM)
        except OSError:
            pass


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


# --- flags and environment --------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Parameter-server training of a torchvision model over "
                    "gloo: W workers, P servers, tensors assigned to servers "
                    "round-robin. Checkpoints on SIGTERM, resumes.")
    p.add_argument("--model", choices=MODELS, default="resnet50",
                   help="torchvision model, built without weights "
                        "(default resnet50)")
    p.add_argument("--workers", type=int_type(1), default=2,
                   help="worker processes (default 2)")
    p.add_argument("--servers", type=int_type(1), default=1,
                   help="parameter-server processes (default 1)")
    p.add_argument("--steps", type=int_type(1), required=True,
                   help="total steps to reach, counting steps done before a "
                        "preemption")
    p.add_argument("--batch", type=int_type(1), default=8,
                   help="images per step per worker (default 8; ignored with "
                        "--compute-time)")
    p.add_argument("--compute-time", type=seconds, default=None,
                   help="replace forward and backward by a sleep of this many "
                        "seconds and fixed synthetic gradients")
    p.add_argument("--lr", type=float, default=0.01,
                   help="SGD learning rate (default 0.01)")
    p.add_argument("--seed", type=int_type(0), default=0,
                   help="seed of the model and the data (default 0)")
    p.add_argument("--log-every", type=int_type(1), default=10,
                   help="print progress every K steps (default 10)")
    p.add_argument("--rank-per-gpu", action="store_true",
                   help="under a Tiresias agent (one task per node), start "
                        "one rank per granted GPU on this node: the job's "
                        "GPUs must number --workers + --servers; servers are "
                        "dealt round-robin over the nodes (gpu_ranks.py)")
    p.add_argument("--dist-timeout", type=seconds, default=300.0,
                   help="seconds rendezvous and each transfer may wait for "
                        "the other ranks (default 300)")
    return p.parse_args(argv)


def read_env(args):
    world = args.workers + args.servers
    env = common_read_env(default_world=world)
    if env["world"] != world:
        raise UsageError(
            f"WORLD_SIZE ({env['world']}) must be --workers + --servers "
            f"({args.workers} + {args.servers} = {world})")
    return env


# --- the launcher -------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_envs(args):
    """The W + P ranks' environments on this machine, with a free port."""
    world = args.workers + args.servers
    port = free_port()
    envs = []
    for rank in range(world):
        env = dict(os.environ)
        env.update({"WORLD_SIZE": str(world), "RANK": str(rank),
                    "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port)})
        envs.append(env)
    return envs


def launch(argv, envs):
    """Starts one copy of this script per environment and waits; returns
    the first failure's code (stopping the others), else 0."""
    for env in envs:
        _children.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)] + argv, env=env))
    if _stop_requested:  # a signal that came while starting them
        for child in _children:
            child.send_signal(signal.SIGTERM)
    code = 0
    pending = list(_children)
    while pending:
        for child in list(pending):
            try:
                rc = child.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                continue
            pending.remove(child)
            if rc != 0 and code == 0:
                code = rc if rc > 0 else 128 - rc
                for other in pending:  # no one waits for a dead peer
                    other.send_signal(signal.SIGTERM)
    return code


# --- one process -----------------------------------------------------------------

def build_model(name, skip_init):
    """The torchvision model. skip_init: parameters are left uninitialized
    (a worker's are overwritten by its first pull), which is much faster."""
    import torch
    import torchvision
    kwargs = {}
    if name in ("inception_v3", "googlenet"):
        kwargs["init_weights"] = not skip_init
    saved = {}
    if skip_init:
        def keep(tensor, *a, **k):
            return tensor
        for fn in ("kaiming_normal_", "kaiming_uniform_", "normal_", "uniform_",
                   "constant_", "zeros_", "ones_", "trunc_normal_",
                   "xavier_uniform_", "xavier_normal_"):
            saved[fn] = getattr(torch.nn.init, fn)
            setattr(torch.nn.init, fn, keep)
    try:
        return torchvision.models.__dict__[name](weights=None, **kwargs)
    finally:
        for fn, original in saved.items():
            setattr(torch.nn.init, fn, original)


def run(args, env):
    rank, world = env["rank"], env["world"]
    servers, workers = args.servers, args.workers
    is_server = rank < servers
    role = (f"server {rank}/{servers}" if is_server
            else f"worker {rank - servers}/{workers}")

    def log(msg):
        print(f"[{role}] {msg}", flush=True)

    try:
        import torch
        import torch.distributed as dist
        import torchvision  # noqa: F401 -- fail here, with a clear message
    except ImportError as e:
        raise UsageError(
            f"cannot import PyTorch and torchvision with {sys.executable} "
            f"({e}); on Debian install python3-torch and python3-torchvision "
            f"and run this with /usr/bin/python3")
    import datetime

    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = env["master_addr"]
    os.environ["MASTER_PORT"] = str(env["master_port"])
    dist.init_process_group(
        "gloo", init_method="env://", world_size=world, rank=rank,
        timeout=datetime.timedelta(seconds=args.dist_timeout))

    torch.manual_seed(args.seed)
    model = build_model(args.model, skip_init=not is_server)
    params = [p.detach() for p in model.parameters()]
    owner = [i % servers for i in range(len(params))]  # round-robin
    ckpt_dir = env["ckpt_dir"]

    def all_reduce(values, op):
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=op)
        return t.tolist()

    # --- state: a server keeps its shard (and momentum-free SGD: nothing
    # else); a worker keeps the whole model, refreshed by each pull.
    step = 0
    if is_server:
        mine = [i for i in range(len(params)) if owner[i] == rank]
        shard = {i: params[i].clone() for i in mine}
        del model, params
        path = os.path.join(ckpt_dir, f"server-{rank}.pt")
        loaded = None
        if os.path.exists(path):
            try:
                with open(path, "rb") as f:
                    state = torch.load(f, map_location="cpu")
                if state.get("model") != args.model or \
                        sorted(state["shard"]) != mine:
                    raise ValueError(
                        "a checkpoint of another model or layout (remove "
                        f"{ckpt_dir}, or set TIRESIAS_CHECKPOINT_DIR, to start "
                        "afresh)")
                loaded = state
            except Exception as e:  # noqa: BLE001 -- reported, collectively
                loaded = {"error": f"cannot load checkpoint {path}: {e}"}
        mine_step = None if loaded is None else loaded.get("step")
        error = None if loaded is None else loaded.get("error")
    else:
        mine, shard, mine_step, error = [], {}, None, None
    # Every server must resume from the same step (or none at all).
    views = [None] * world
    dist.all_gather_object(views, (is_server, mine_step, error))
    errors = [e for s, _, e in views if e]
    steps = {st for s, st, _ in views if s}
    if errors:
        raise RuntimeError(errors[0])
    if len(steps) != 1:
        raise RuntimeError(f"the servers' checkpoints disagree: steps {sorted(steps, key=str)}")
    start_step = steps.pop()
    if start_step is not None:
        step = int(start_step)
        if is_server:
            shard = {int(i): t for i, t in loaded["shard"].items()}
        log(f"resumed from step {step}")

    def checkpoint(reason):
        error = ""
        if is_server:
            state = {"step": step, "model": args.model, "shard": shard,
                     "workers": workers, "servers": servers}
            try:
                os.makedirs(ckpt_dir, exist_ok=True)
                atomic_write(os.path.join(ckpt_dir, f"server-{rank}.pt"),
                             lambda f: torch.save(state, f))
            except (OSError, RuntimeError) as e:
                error = f"cannot save checkpoint: {e}"
        failed, = all_reduce([1.0 if error else 0.0], dist.ReduceOp.MAX)
        if failed:
            raise RuntimeError(error or "a server could not save its checkpoint")
        if rank == 0:
            log(f"saved checkpoint at step {step} ({reason})")

    def wait(requests):
        for r in requests:
            r.wait()

    # --- the initial pull: workers get the current parameters.
    worker_ids = list(range(servers, world))
    if is_server:
        wait([dist.isend(shard[i], dst=w, tag=i)
              for i in mine for w in worker_ids])
    else:
        wait([dist.irecv(params[i], src=owner[i], tag=i)
              for i in range(len(params))])

    # --- gradients: fixed synthetic ones with --compute-time, else a real
    # forward and backward pass on seeded random images.
    if not is_server:
        me = rank - servers
        if args.compute_time is not None:
            grads = [torch.full_like(p, 1e-3 * (me + 1)) for p in params]
        else:
            model.train()
            size = 299 if args.model == "inception_v3" else 224
            loss_fn = torch.nn.CrossEntropyLoss()
    else:
        received = {i: [torch.empty_like(shard[i]) for _ in worker_ids]
                    for i in mine}

    def compute_grads():
        if args.compute_time is not None:
            deadline = time.monotonic() + args.compute_time
            while not _stop_requested:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                time.sleep(min(left, 0.05))
            return grads
        g = torch.Generator().manual_seed(
            (args.seed * 1_000_003 + step) * 1_009 + rank)
        x = torch.randn(args.batch, 3, size, size, generator=g)
        y = torch.randint(0, 1000, (args.batch,), generator=g)
        model.zero_grad()
        out = model(x)
        loss = loss_fn(out.logits if hasattr(out, "logits") else out, y)
        loss.backward()
        return [p.grad if p.grad is not None else torch.zeros_like(p)
                for p in model.parameters()]

    if step < args.steps:
        log(f"training {args.model} from step {step} to {args.steps}: "
            f"{len(mine) if is_server else len(params)} tensors")
    t0 = time.monotonic()
    t_first = None  # after this run's first step: warm-up excluded
    first_step = step
    stopped = False
    while True:
        stop, = all_reduce([1.0 if _stop_requested else 0.0], dist.ReduceOp.MAX)
        if stop:
            stopped = True
            break
        if step >= args.steps:
            break
        if is_server:
            wait([dist.irecv(received[i][k], src=w, tag=i)
                  for i in mine for k, w in enumerate(worker_ids)])
            for i in mine:
                total = received[i][0].clone()
                for buf in received[i][1:]:
                    total.add_(buf)
                shard[i].sub_(total, alpha=args.lr / workers)
            wait([dist.isend(shard[i], dst=w, tag=i)
                  for i in mine for w in worker_ids])
        else:
            g = compute_grads()
            pushes = [dist.isend(g[i], dst=owner[i], tag=i)
                      for i in range(len(params))]
            pulls = [dist.irecv(params[i], src=owner[i], tag=i)
                     for i in range(len(params))]
            wait(pushes)
            wait(pulls)
        step += 1
        if t_first is None:
            t_first = time.monotonic()
        if step % args.log_every == 0 or step == 1:
            log(f"step {step} ({(time.monotonic() - t0) / max(step, 1):.3f} s/step)")

    t_end = time.monotonic()
    checkpoint("stop requested" if stopped else "finished")
    if stopped:
        log(f"stopped at step {step} of {args.steps}; exiting")
    else:
        local = sum(float(t.double().sum()) for t in shard.values())
        param_sum, = all_reduce([local], dist.ReduceOp.SUM)
        if rank == 0:
            timed = step - first_step - 1  # steps after this run's first
            step_s = ((t_end - t_first) / timed
                      if timed > 0 else None)
            result = {"steps": step, "model": args.model, "workers": workers,
                      "servers": servers, "param_sum": param_sum,
                      "step_s": step_s, "timed_steps": max(timed, 0),
                      "restarts": env["restarts"], "job_id": env["job_id"]}
            atomic_write(os.path.join(ckpt_dir, "result.json"),
                         lambda f: f.write((json.dumps(result) + "\n").encode()))
            log(f"final step {step} param_sum {param_sum:.9g}")
    dist.barrier()
    hard_exit(0)


def main(argv):
    args = parse_args(argv)
    if "WORLD_SIZE" not in os.environ and "RANK" not in os.environ:
        hard_exit(launch(argv, local_envs(args)))
    if args.rank_per_gpu and not os.environ.get(gpu_ranks.CHILD_VAR):
        # A node task: start this node's ranks, keep the store while they run.
        local = os.environ.get("LOCAL_WORLD_SIZE", "1")
        if local != "1":
            raise UsageError(
                f"--rank-per-gpu starts this node's ranks itself, but the "
                f"agent already started {local} processes here (one per "
                f"GPU): submit with --tasks-per-node 1, or drop "
                f"--rank-per-gpu")
        node_env = common_read_env()
        store, envs = gpu_ranks.child_envs(node_env, args, args.dist_timeout)
        code = launch(argv, envs)
        del store
        hard_exit(code)
    run(args, read_env(args))


if __name__ == "__main__":
    run_main(main, PROG)
