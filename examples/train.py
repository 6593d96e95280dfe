#!/usr/bin/python3
"""Example Tiresias training job: a tiny MLP trained on synthetic data.

Runs as one process of a DistributedDataParallel job over gloo, configured
from the environment a Tiresias agent sets (all optional; without them it is a
single process):

  MASTER_ADDR, MASTER_PORT   rendezvous of rank 0 (default 127.0.0.1:29500)
  WORLD_SIZE, RANK           number of processes and this one's index (1, 0)
  LOCAL_RANK                 index on this machine, picks the CUDA device (0)
  CUDA_VISIBLE_DEVICES       GPUs granted; CUDA is used if torch sees one
  TIRESIAS_CHECKPOINT_DIR    where checkpoint.pt and result.json go
                             (default ./checkpoints)
  TIRESIAS_RESTART_COUNT     how many times the job was restarted (0)
  TIRESIAS_JOB_ID            shown in the log and result.json

SIGTERM (or a first Ctrl-C): the current step finishes, every rank agrees to
stop at the same step (the stop flag is all-reduced once per step), rank 0
saves a checkpoint atomically and all ranks exit 0. On start the latest
checkpoint, if any, is loaded by rank 0 and broadcast to the others, and the
run continues up to --steps in total. At the end rank 0 writes result.json:
{"steps": N, "loss": x, "restarts": R, ...}.

Run it with Debian's /usr/bin/python3 (package python3-torch).
"""

import argparse
import json
import os
import random
import signal
import sys
import time

from job_common import (UsageError, atomic_write, hard_exit, int_type,
                        read_env, run_main, seconds)

PROG = "train.py"

# --- signals (installed before the slow torch import) ----------------------

_stop_requested = False
_interrupts = 0


def _on_signal(signum, frame):
    global _stop_requested, _interrupts
    _stop_requested = True
    if signum == signal.SIGINT:
        _interrupts += 1
        if _interrupts > 1:  # a second Ctrl-C: give up at once, no checkpoint
            os._exit(130)
    # Repeated SIGTERMs are ignored: the first already asked for a clean stop.


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def log(rank, world, msg):
    print(f"[rank {rank}/{world}] {msg}", flush=True)


# --- flags and environment --------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Tiny DDP training job for Tiresias: checkpoints on "
                    "SIGTERM, resumes from its latest checkpoint.")
    p.add_argument("--steps", type=int_type(1), required=True,
                   help="total number of training steps to reach, counting "
                        "steps done before a preemption")
    p.add_argument("--batch-size", type=int_type(1), default=32,
                   help="examples per step per process (default 32)")
    p.add_argument("--step-time", type=seconds, default=0.0,
                   help="extra seconds to sleep in each step, to make the "
                        "job last (default 0)")
    p.add_argument("--checkpoint-every", type=int_type(0), default=50,
                   help="also checkpoint every K steps; 0: only on SIGTERM "
                        "and at the end (default 50)")
    p.add_argument("--log-every", type=int_type(1), default=10,
                   help="print the loss every K steps (default 10)")
    p.add_argument("--lr", type=float, default=0.05,
                   help="SGD learning rate (default 0.05)")
    p.add_argument("--seed", type=int_type(0), default=0,
                   help="seed of the model and the synthetic data (default 0)")
    p.add_argument("--dist-timeout", type=seconds, default=300.0,
                   help="seconds a collective (and the rendezvous) may wait "
                        "for the other ranks (default 300)")
    return p.parse_args(argv)


# --- training ---------------------------------------------------------------

IN_FEATURES = 16
HIDDEN = 32


def main(argv):
    args = parse_args(argv)
    env = read_env()
    rank, world = env["rank"], env["world"]

    try:
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError as e:
        raise UsageError(
            f"cannot import PyTorch with {sys.executable} ({e}); on Debian "
            f"install python3-torch and run this with /usr/bin/python3")

    import datetime

    # Tiny model: one thread is faster than many and keeps results bitwise
    # reproducible. OMP_NUM_THREADS overrides.
    if not os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(1)

    if torch.cuda.is_available():
        device = torch.device("cuda", env["local_rank"] % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")

    ckpt_dir = env["ckpt_dir"]
    ckpt_path = os.path.join(ckpt_dir, "checkpoint.pt")
    result_path = os.path.join(ckpt_dir, "result.json")

    distributed = world > 1
    if distributed:
        os.environ["MASTER_ADDR"] = env["master_addr"]
        os.environ["MASTER_PORT"] = str(env["master_port"])
        dist.init_process_group(
            "gloo", init_method="env://", world_size=world, rank=rank,
            timeout=datetime.timedelta(seconds=args.dist_timeout))

    def all_reduce(values, op):
        """values: list of floats, reduced across ranks (CPU tensor: gloo)."""
        t = torch.tensor(values, dtype=torch.float64)
        if distributed:
            dist.all_reduce(t, op=op)
        return t.tolist()

    log(rank, world,
        f"job {env['job_id'] or '-'} restart {env['restarts']} on {device}, "
        f"world size {world}, checkpoints in {ckpt_dir}")

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    # The function to learn: fixed by the seed, the same on every rank.
    target_gen = torch.Generator().manual_seed(args.seed + 7919)
    true_w = torch.randn(IN_FEATURES, 1, generator=target_gen)

    # --- resume: rank 0 reads the checkpoint and broadcasts it, so ranks on
    # machines without the checkpoint folder resume too.
    step, last_loss = 0, float("nan")
    state = None
    if rank == 0 and os.path.exists(ckpt_path):
        try:
            with open(ckpt_path, "rb") as f:
                state = torch.load(f, map_location="cpu")
            if not isinstance(state, dict) or "step" not in state:
                raise ValueError("not a checkpoint of this script")
        except Exception as e:  # noqa: BLE001 -- reported, collectively
            state = {"error": f"cannot load checkpoint {ckpt_path}: {e}"}
    if distributed:
        box = [state]
        dist.broadcast_object_list(box, src=0)
        state = box[0]
    if state is not None and "error" in state:
        raise RuntimeError(state["error"])
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        step, last_loss = int(state["step"]), float(state["loss"])
        log(rank, world, f"resumed from step {step}")

    ddp_model = DDP(model) if distributed else model
    loss_fn = nn.MSELoss()

    def batch(step_index):
        # Each (seed, step, rank) has its own data, so a resumed run sees
        # exactly the batches an uninterrupted one would.
        g = torch.Generator().manual_seed(
            (args.seed * 1_000_003 + step_index) * 1_009 + rank)
        x = torch.randn(args.batch_size, IN_FEATURES, generator=g)
        y = x @ true_w + 0.1 * torch.randn(args.batch_size, 1, generator=g)
        return x.to(device), y.to(device)

    def save_checkpoint(reason):
        """Collective: rank 0 writes, every rank learns whether it worked."""
        error = ""
        if rank == 0:
            state = {
                "step": step,
                "loss": last_loss,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
                "world_size": world,
                "seed": args.seed,
            }
            try:
                os.makedirs(ckpt_dir, exist_ok=True)
                atomic_write(ckpt_path, lambda f: torch.save(state, f))
                log(rank, world, f"saved checkpoint at step {step} ({reason})")
            except (OSError, RuntimeError) as e:
                error = f"cannot save checkpoint {ckpt_path}: {e}"
        failed, = all_reduce([1.0 if error else 0.0], dist.ReduceOp.MAX)
        if failed:
            raise RuntimeError(error or "rank 0 could not save the checkpoint")

    if step < args.steps:
        log(rank, world, f"training from step {step} to {args.steps}")
    stopped = False
    while True:
        # One collective per step decides, for every rank at once, whether to
        # stop, so a SIGTERM that reaches only some ranks (or reaches them at
        # different moments) never leaves one waiting in a collective.
        stop, = all_reduce([1.0 if _stop_requested else 0.0],
                           dist.ReduceOp.MAX)
        if stop:
            stopped = True
            break
        if step >= args.steps:
            break
        x, y = batch(step)
        optimizer.zero_grad()
        loss = loss_fn(ddp_model(x), y)
        loss.backward()
        optimizer.step()
        step += 1
        mean_loss, = all_reduce([loss.item()], dist.ReduceOp.SUM)
        last_loss = mean_loss / world
        if step % args.log_every == 0 or step == 1:
            log(rank, world, f"step {step} loss {last_loss:.6f}")
        if args.checkpoint_every and step % args.checkpoint_every == 0 \
                and step < args.steps:
            save_checkpoint("periodic")
        # Emulated extra compute; cut short by a stop request.
        deadline = time.monotonic() + args.step_time
        while not _stop_requested:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.05))

    if stopped:
        save_checkpoint("stop requested")
        log(rank, world, f"stopped at step {step} of {args.steps}; exiting")
    else:
        save_checkpoint("finished")
        param_sum = sum(float(p.detach().double().sum()) for p in model.parameters())
        if rank == 0:
            result = {"steps": step, "loss": last_loss,
                      "restarts": env["restarts"], "world_size": world,
                      "job_id": env["job_id"]}
            atomic_write(result_path,
                         lambda f: f.write((json.dumps(result) + "\n").encode()))
            log(rank, world, f"wrote {result_path}")
        log(rank, world, f"final step {step} loss {last_loss:.9g} "
                         f"param_sum {param_sum:.9g}")
    if distributed:
        dist.barrier()
    # Exit from here, while this frame still holds the model and process
    # group: with torch 1.13, destroying a DDP model / gloo process group
    # after a peer has gone can hang. Every file written is fsynced.
    hard_exit(0)


if __name__ == "__main__":
    run_main(main, PROG)
