"""One process per GPU under a Tiresias agent, for ps_train.py --rank-per-gpu.

A Tiresias agent starts one task per node a job spans (WORLD_SIZE = nodes,
RANK = this node's index, CUDA_VISIBLE_DEVICES = the GPUs granted here), as
torchrun expects a node launcher. This module is that launcher's
arithmetic: the node tasks tell each other their GPU counts through a
TCPStore at MASTER_ADDR:MASTER_PORT (hosted by node 0), and every node
computes the same global layout from them.

Layout: the job has sum(counts) = W + P processes. Parameter servers (global
ranks 0..P-1) are dealt round-robin over the nodes, one per node in turn
while a node has a free GPU, so that each machine hosts a server as in the
paper's parameter-server jobs; workers (ranks P..) fill the remaining GPUs
in node order. Global rank 0 is always on node 0, which also hosts the
process group's own rendezvous at MASTER_PORT + 1.

Imported from ps_train.py's folder; keep it beside it.
"""

import datetime
import os
import time

from job_common import UsageError

# Set in the processes the node launcher starts: they are ranks, not
# launchers, even with --rank-per-gpu on their command line.
CHILD_VAR = "PS_TRAIN_RANK_PROCESS"


def layout(counts, servers):
    """Global ranks per node: a list (one per node) of lists of ranks.

    counts: GPUs (processes) on each node, in node order, each >= 1.
    servers: P, the server ranks 0..P-1 to spread first.
    """
    total = sum(counts)
    if servers >= total:
        raise UsageError(f"{servers} server(s) need at least one worker: the "
                         f"job has {total} GPU(s)")
    nodes = [[] for _ in counts]
    rank = 0
    while rank < servers:  # deal servers round-robin over nodes with room
        for n, c in enumerate(counts):
            if rank < servers and len(nodes[n]) < c:
                nodes[n].append(rank)
                rank += 1
    for n, c in enumerate(counts):  # workers fill what is left, in order
        while len(nodes[n]) < c:
            nodes[n].append(rank)
            rank += 1
    return nodes


def local_gpus():
    """The GPUs this node task was granted (CUDA_VISIBLE_DEVICES); the
    agent always sets it, emulated GPUs included."""
    text = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    gpus = [g for g in text.split(",") if g.strip() != ""]
    if not gpus:
        raise UsageError("--rank-per-gpu needs CUDA_VISIBLE_DEVICES (the GPUs "
                         "the agent granted this node), got nothing")
    return gpus


def exchange_counts(env, count, timeout_s):
    """Every node task's GPU count, in node order, through a TCPStore on
    MASTER_ADDR:MASTER_PORT that node 0 serves (and keeps while its
    process lives, which is until its children end)."""
    import torch.distributed as dist
    store = dist.TCPStore(env["master_addr"], env["master_port"],
                          env["world"], env["rank"] == 0,
                          datetime.timedelta(seconds=timeout_s))
    store.set(f"gpus/{env['rank']}", str(count))
    counts = [int(store.get(f"gpus/{n}")) for n in range(env["world"])]
    # Node 0 serves the store: it must not exit (a refused layout) before
    # every node has read the counts, or they see a reset connection.
    store.add("read", 1)
    if env["rank"] == 0:
        store.wait([f"gpus/{n}" for n in range(env["world"])])
        while store.add("read", 0) < env["world"]:
            time.sleep(0.01)
    return store, counts


def child_envs(env, args, timeout_s):
    """Environments of this node's processes (one per granted GPU), and the
    store to keep alive while they run. Checks W + P against the job's
    GPUs."""
    gpus = local_gpus()
    if env["master_port"] + 1 > 65535:
        raise UsageError("--rank-per-gpu needs MASTER_PORT + 1 <= 65535")
    store, counts = exchange_counts(env, len(gpus), timeout_s)
    total = sum(counts)
    if total != args.workers + args.servers:
        raise UsageError(
            f"the job has {total} GPU(s) over {len(counts)} node(s) "
            f"({'+'.join(map(str, counts))}); --rank-per-gpu needs --workers "
            f"+ --servers = {args.workers} + {args.servers} to equal it")
    ranks = layout(counts, args.servers)[env["rank"]]
    envs = []
    for i, (gpu, rank) in enumerate(zip(gpus, ranks)):
        e = dict(os.environ)
        e.update({"WORLD_SIZE": str(total), "RANK": str(rank),
                  "LOCAL_RANK": str(i), "CUDA_VISIBLE_DEVICES": gpu,
                  "MASTER_ADDR": env["master_addr"],
                  "MASTER_PORT": str(env["master_port"] + 1),
                  "TIRESIAS_NODE_RANK": str(env["rank"]),
                  CHILD_VAR: "1"})
        envs.append(e)
    return store, envs
