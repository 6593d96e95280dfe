#!/usr/bin/python3
"""End to end, the shapes DL launchers expect: a secure `tiresias up`
(TLS, tokens, two agents of 2 emulated GPUs, as root, running jobs as
their owners) and the real CLI as a throwaway Unix user with its own
token. Judged from what each process of the jobs wrote about itself:

- `submit --nodes 2 --gpus-per-node 2` of examples/train.py (real PyTorch,
  gloo): 4 processes, RANK 0-3 over WORLD_SIZE 4, two per node with
  LOCAL_RANK 0 and 1 and LOCAL_WORLD_SIZE 2, each seeing its node's two
  GPUs, all as the user's uid; the job trains to its last step (rank 0's
  result.json) and `--wait` exits 0;
- a script that reads only Slurm's variables (SLURM_PROCID, SLURM_NTASKS,
  SLURM_LOCALID, SLURM_NODEID, SLURM_JOB_NODELIST) runs unchanged with
  `--gpus-per-node 1 --nodes 2 --tasks-per-node 2`;
- a shape no node can hold waits with a reason that names it;
- `--time 0:06 --signal USR1@4`: each process gets USR1 about 2 s into
  its run, wraps up, and the job finishes.

Needs root and python3-torch: exit 77 (skipped) otherwise.
Usage: job_shape_test.py TIRESIAS_BINARY REPO_ROOT
"""
import json
import os
import pwd
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (SKIP, fail, free_port,  # noqa: E402
                           run_as_throwaway_user, secure_up)

REPO = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else "."
TRAIN = os.path.join(REPO, "examples", "train.py")

# Each process records itself, then becomes the command.
PROBE = ('echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE '
         '$TIRESIAS_NODE_NAME $CUDA_VISIBLE_DEVICES $(id -u)" > '
         '"$PWD/proc-$RANK"; exec "$@"')
SLURM_ONLY = ('echo "$SLURM_PROCID $SLURM_NTASKS $SLURM_LOCALID '
              '$SLURM_NODEID $SLURM_JOB_NODELIST" > "$PWD/slurm-$SLURM_PROCID"')


def main():
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                      capture_output=True).returncode != 0:
        print("skipped: needs python3-torch")
        sys.exit(SKIP)
    run_as_throwaway_user(run, "tiresias-shape")


def cli(binary, env, *args, timeout=60):
    return subprocess.run([binary] + list(args), env=env,
                          capture_output=True, text=True, timeout=timeout)


def run(binary, workdir, user):
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    # Its jobs' MASTER_PORTs away from those of another test's cluster
    # (e2e.preemption's job 1 would take 29517 too) and below the kernel's
    # ephemeral ports (32768 and up), which any connection may hold.
    port_base = 20000 + (os.getpid() % 90) * 100
    with secure_up(binary, workdir, state, address, agents=2,
                   extra=("--job-port-base", str(port_base))):
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("TIRESIAS_")}
        base["TIRESIAS_MASTER"] = address
        ca = os.path.join(state, "tls", "ca.pem")
        admin = dict(base, TIRESIAS_CA=ca,
                     TIRESIAS_TOKEN_FILE=os.path.join(state, "admin-token"))
        r = cli(binary, admin, "admin", "token", "create", "--user", user)
        if r.returncode != 0:
            fail("admin token create: %s" % r.stderr)
        token = r.stdout.strip()
        as_user = dict(base, TIRESIAS_CA=ca, TIRESIAS_TOKEN=token)
        uid = pwd.getpwnam(user).pw_uid
        home = os.path.join(workdir, "u")
        os.makedirs(home)
        os.chown(home, uid, pwd.getpwnam(user).pw_gid)
        check_torch_job(binary, as_user, home, uid)
        check_slurm_script(binary, as_user, home)
        check_unfit_shape(binary, as_user, home)
        check_warning_signal(binary, as_user, home)
        check_logs_name_the_ranks_that_wrote(binary, as_user, home)
    print("job shapes: 4 ranks over 2 nodes trained, Slurm script ran, "
          "--signal warned before --time")


def check_torch_job(binary, env, home, uid):
    ckpt = os.path.join(home, "ckpt")
    r = cli(binary, env, "submit", "--nodes", "2", "--gpus-per-node", "2",
            "--chdir", home, "--checkpoint-dir", ckpt, "--wait", "--",
            "/bin/sh", "-c", PROBE, "probe", "/usr/bin/python3", TRAIN,
            "--steps", "20", timeout=300)
    job = r.stdout.split()[0] if r.stdout.split() else "?"
    if r.returncode != 0:
        logs = [cli(binary, env, "logs", job, "--rank", str(rank)).stdout
                for rank in (0, 1)]
        fail("the 2x2 job %s exited %d: %s; its tasks' logs:\n%s" %
             (job, r.returncode, r.stderr, "\n".join(logs)[-6000:]))
    procs = {}
    for rank in range(5):
        path = os.path.join(home, "proc-%d" % rank)
        if os.path.exists(path):
            with open(path) as f:
                procs[rank] = f.read().split()
    if sorted(procs) != [0, 1, 2, 3]:
        fail("job %s ran ranks %s, want 0-3" % (job, sorted(procs)))
    by_node = {}
    for rank, (r_, local, world, local_world, node, gpus, who) in \
            procs.items():
        if world != "4" or local_world != "2" or int(who) != uid or \
                gpus.count(",") != 1:
            fail("rank %d saw %s" % (rank, procs[rank]))
        by_node.setdefault(node, []).append(int(local))
    if sorted(by_node) != ["node-0", "node-1"] or \
            any(sorted(v) != [0, 1] for v in by_node.values()):
        fail("ranks per node: %s, want LOCAL_RANK 0 and 1 on each of two "
             "nodes" % by_node)
    with open(os.path.join(ckpt, "result.json")) as f:
        result = json.load(f)
    if result.get("steps") != 20 or result.get("world_size") != 4:
        fail("job %s trained to %s" % (job, result))


def check_slurm_script(binary, env, home):
    r = cli(binary, env, "submit", "--gpus-per-node", "1", "--nodes", "2",
            "--tasks-per-node", "2", "--chdir", home, "--wait", "--",
            "/bin/sh", "-c", SLURM_ONLY, timeout=120)
    if r.returncode != 0:
        fail("the Slurm script exited %d: %s" % (r.returncode, r.stderr))
    seen = []
    for rank in range(4):
        with open(os.path.join(home, "slurm-%d" % rank)) as f:
            seen.append(f.read().split())
    nodes = {s[3] for s in seen}
    if [s[0] for s in seen] != ["0", "1", "2", "3"] or \
            {s[1] for s in seen} != {"4"} or nodes != {"0", "1"} or \
            sorted(s[2] for s in seen) != ["0", "0", "1", "1"] or \
            {s[4] for s in seen} != {"node-[0-1]"}:
        fail("the Slurm script's processes saw %s" % seen)


def check_logs_name_the_ranks_that_wrote(binary, env, home):
    """Only rank 1 of a 2-node job writes (and fails): `logs JOB` (rank 0)
    prints nothing, and says on stderr that rank 1 wrote."""
    r = cli(binary, env, "submit", "--nodes", "2", "--gpus-per-node", "1",
            "--chdir", home, "--wait", "--", "/bin/sh", "-c",
            'if [ "$GROUP_RANK" = 1 ]; then echo rank-one-says; exit 3; fi',
            timeout=120)
    if r.returncode != 3:
        fail("the job whose rank 1 fails exited %d: %s" % (r.returncode,
                                                           r.stderr))
    job = r.stdout.split()[0]
    logs = cli(binary, env, "logs", job)
    if logs.returncode != 0 or logs.stdout != "" or \
            "rank 0 wrote nothing; rank 1 did (`tiresias logs %s --rank 1`)" \
            % job not in logs.stderr:
        fail("logs of a job whose rank 0 wrote nothing: rc %d, out %r, "
             "err %r" % (logs.returncode, logs.stdout, logs.stderr))
    one = cli(binary, env, "logs", job, "--rank", "1")
    if one.stdout != "rank-one-says\n":
        fail("logs --rank 1: %r" % one.stdout)


def check_unfit_shape(binary, env, home):
    r = cli(binary, env, "submit", "--nodes", "3", "--gpus-per-node", "1",
            "--chdir", home, "--", "/bin/true")
    if r.returncode != 0:
        fail("submit of a 3x1 job: %s" % r.stderr)
    job = r.stdout.split()[0]
    info = json.loads(cli(binary, env, "job", job, "--json").stdout)
    reason = info.get("pending_reason") or ""
    if info["state"] != "pending" or \
            "needs 3 nodes with 1 GPU each, up nodes have 2 such" not in \
            reason:
        fail("a 3x1 job on two nodes: %s, reason %r" % (info["state"],
                                                        reason))
    cli(binary, env, "cancel", job)


def check_warning_signal(binary, env, home):
    """--time 0:06 --signal USR1@4: USR1 about 2 s into the run, to each
    of the job's two processes; they wrap up and the job finishes."""
    script = ('date +%s.%N > "start-$RANK"; '
              'trap \'date +%s.%N > "warned-$RANK"; exit 0\' USR1; '
              'sleep 30 & wait')
    r = cli(binary, env, "submit", "--gpus", "2", "--time", "0:06",
            "--signal", "USR1@4", "--chdir", home, "--wait", "--",
            "/bin/sh", "-c", script, timeout=60)
    if r.returncode != 0:
        fail("the --signal job exited %d: %s" % (r.returncode, r.stderr))
    for rank in (0, 1):
        with open(os.path.join(home, "start-%d" % rank)) as f:
            start = float(f.read())
        with open(os.path.join(home, "warned-%d" % rank)) as f:
            warned = float(f.read())
        if not 1.0 <= warned - start <= 4.5:
            fail("rank %d got USR1 %.2f s into its run, want about 2" %
                 (rank, warned - start))
    bad = cli(binary, env, "submit", "--gpus", "1", "--signal", "USR1",
              "--", "/bin/true")
    if bad.returncode == 0 or "give --time too" not in bad.stderr:
        fail("--signal without --time: %d %s" % (bad.returncode, bad.stderr))


if __name__ == "__main__":
    main()
