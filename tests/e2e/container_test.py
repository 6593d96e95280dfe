#!/usr/bin/python3
"""End to end, container jobs (`submit --image`) on the default a user
gets: a secure `tiresias up` (TLS and tokens) plus an agent as root with
4 emulated GPUs whose device nodes are real ones made here (mknod, char
195), and a throwaway Unix user. The image is built here from the host's
own files (dash, a few coreutils and their libraries; no registry is
reachable) and `podman import`ed. Judged from inside the jobs, by files
they write in their working dir:

- a job with --gpus 1 sees the image's file system (no python3, which the
  host has), exactly one GPU device node (its own, the one
  CUDA_VISIBLE_DEVICES names) and nvidiactl, runs as its owner's uid
  with no new privileges, and its working dir is the host's;
- a job that checkpoints on SIGTERM is preempted (`requeue`) and resumes
  in a new container from its checkpoint, as its owner, and finishes;
- a job naming an image the node does not have fails, its log says why.

Needs root, podman and crun: exit 77 (skipped) otherwise. crun refuses a
machine whose cgroup2 hierarchy holds controllers beside v1 ones (hybrid):
such controllers (hugetlb here) get a v1 hierarchy first, as systemd's
hybrid mode would mount them.
Usage: container_test.py TIRESIAS_BINARY STATIC_SERVER (tests/e2e/
static_server.cc, built static)
"""
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import (SKIP, admin_env, cli, fail,  # noqa: E402
                           run_as_throwaway_users, secure_up,
                           start_operator_agent, user_session, wait_up)
from local_cluster import wait_until  # noqa: E402
from interactive_test import Tmux, forward  # noqa: E402
from local_cluster import free_port  # noqa: E402

IMAGE = "localhost/tiresias-e2e-%d:1" % os.getpid()
TOOLS = ["/bin/dash", "/bin/cat", "/bin/sleep", "/bin/ls", "/bin/grep",
         "/usr/bin/id", "/usr/bin/env", "/usr/bin/test"]


def build_image(workdir, image, server=None):
    """workdir/images/tiny, a root file system of TOOLS and their
    libraries (/bin/sh -> dash; `server` as /bin/static-server), imported
    into podman's store as `image` (bench/container_start.py uses it too)."""
    root = os.path.join(workdir, "images", "tiny")
    for tool in TOOLS:
        libs = subprocess.run(["ldd", tool], capture_output=True,
                              text=True).stdout
        for path in [tool] + re.findall(r"(/\S+) \(0x", libs):
            target = root + path
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(os.path.realpath(path), target)
    os.symlink("dash", os.path.join(root, "bin", "sh"))
    if server:
        shutil.copy2(server, os.path.join(root, "bin", "static-server"))
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."],
                           stdout=subprocess.PIPE)
    r = subprocess.run(["podman", "import", "-", image], stdin=tar.stdout,
                       capture_output=True, text=True)
    tar.wait()
    if r.returncode != 0:
        fail("podman import: %s" % r.stderr)


def free_cgroup2_controllers():
    """Gives each controller the cgroup2 hierarchy holds on a hybrid
    machine (/sys/fs/cgroup a tmpfs with v1 hierarchies and cgroup2 at
    unified/) a v1 hierarchy of its own, so that crun accepts the machine.
    Returns the mounts made, for restore_cgroup_mounts."""
    controllers = "/sys/fs/cgroup/unified/cgroup.controllers"
    if not os.path.exists(controllers):
        return []
    with open(controllers) as f:
        names = f.read().split()
    made = []
    for name in names:
        path = "/sys/fs/cgroup/" + name
        os.makedirs(path, exist_ok=True)
        r = subprocess.run(["mount", "-t", "cgroup", "-o", name, "cgroup",
                            path], capture_output=True, text=True)
        if r.returncode == 0:
            made.append(path)
        print("cgroup2 held %s: mounted as v1 at %s (%s)" %
              (name, path, r.stderr.strip() or "ok"))
    return made


def restore_cgroup_mounts(made):
    for path in made:
        subprocess.run(["umount", path], capture_output=True)


def make_gpu_nodes(workdir):
    """workdir/dev with nvidia0..3 and nvidiactl (char 195), as a node with
    4 GPUs has them in /dev."""
    dev = os.path.join(workdir, "dev")
    os.makedirs(dev)
    for name, minor in [("nvidia%d" % i, i) for i in range(4)] + \
            [("nvidiactl", 255)]:
        os.mknod(os.path.join(dev, name), 0o666 | stat.S_IFCHR,
                 os.makedev(195, minor))
    return dev


def job_info(binary, env, job):
    r = cli(binary, env, "job", str(job), "--json")
    return json.loads(r.stdout) if r.returncode == 0 else {}


AGENT_LOG = []  # the agent's stderr, once known


def wait_state(binary, env, job, states, timeout=60):
    deadline = time.time() + timeout
    while job_info(binary, env, job).get("state") not in states:
        if time.time() > deadline:
            fail("job %d is %s, not %s; the agent said:\n%s" %
                 (job, job_info(binary, env, job).get("state"),
                  "/".join(states), read(AGENT_LOG[0])[-3000:]))
        time.sleep(0.2)
    return job_info(binary, env, job)["state"]


def submit(binary, env, home, *args):
    r = cli(binary, env, "submit", "--image", IMAGE, "--nodelist", "node-c",
            "--chdir", home, *args)
    if r.returncode != 0:
        fail("submit %s: %s" % (args, r.stderr))
    return int(r.stdout.strip())


def write_script(home, uid, gid, name, text):
    path = os.path.join(home, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    os.chown(path, uid, gid)


def read(path):
    with open(path) as f:
        return f.read()


def what_a_job_sees(binary, env, home, uid, gid):
    write_script(home, uid, gid, "probe.sh", """#!/bin/sh
{
  echo "uid=$(id -u)"
  echo "gpus=$CUDA_VISIBLE_DEVICES"
  if test -e /usr/bin/python3; then echo fs=host; else echo fs=image; fi
  grep NoNewPrivs /proc/self/status
  echo "pwd=$(pwd)"
} > probe.out 2>&1
ls /dev > devices.out
""")
    job = submit(binary, env, home, "--gpus", "1", "--", "./probe.sh")
    if wait_state(binary, env, job, ["finished", "failed"]) != "finished":
        fail("the probe job failed: %s" %
             cli(binary, env, "logs", str(job)).stdout)
    seen = dict(re.split(r"[=:]", line, maxsplit=1)
                for line in read(os.path.join(home, "probe.out")).split("\n")
                if line)
    devices = sorted(n for n in read(os.path.join(home, "devices.out"))
                     .split() if n.startswith("nvidia"))
    gpu = seen.get("gpus")
    if seen.get("uid") != str(uid):
        fail("the container ran as uid %s, not its owner's %d" %
             (seen.get("uid"), uid))
    if devices != sorted(["nvidia%s" % gpu, "nvidiactl"]):
        fail("the container sees GPU devices %s; its GPU is %s" %
             (devices, gpu))
    if seen.get("fs") != "image":
        fail("the job ran on the host's file system, not the image's")
    if seen.get("NoNewPrivs", "").strip() != "1":
        fail("no_new_privs is not set in the container: %s" % seen)
    if seen.get("pwd") != home:
        fail("the working dir is %s, not %s" % (seen.get("pwd"), home))
    shown = cli(binary, env, "job", str(job)).stdout
    if not re.search(r"^Image: +%s " % re.escape(IMAGE), shown, re.M) or \
            job_info(binary, env, job).get("image") != IMAGE:
        fail("`job N` does not show the image:\n%s" % shown)
    print("a container job with --gpus 1 of 4 sees %s, runs as uid %d "
          "with no new privileges, in %s on the image's files" %
          (" ".join(devices), uid, home))


def checkpoint_and_resume(binary, env, admin, home, uid, gid):
    write_script(home, uid, gid, "steps.sh", """#!/bin/sh
f="$TIRESIAS_CHECKPOINT_DIR/step"
n=0
if test -e "$f"; then n=$(cat "$f"); fi
echo "start-at-$n restart-$TIRESIAS_RESTART_COUNT uid-$(id -u)" >> trace
trap 'echo "$n" > "$f"; echo "saved-$n" >> trace; exit 143' TERM
while test "$n" -lt 60; do n=$((n+1)); sleep 0.1; done
echo "done-$n" >> trace
""")
    ckpt = os.path.join(home, "ckpt")
    job = submit(binary, env, home, "--gpus", "1", "--checkpoint-dir", ckpt,
                 "--", "./steps.sh")
    trace = os.path.join(home, "trace")
    wait_until("the job's first start", lambda: os.path.exists(trace))
    time.sleep(1.5)
    r = cli(binary, admin, "requeue", str(job))
    if r.returncode != 0:
        fail("requeue: %s" % r.stderr)
    if wait_state(binary, env, job, ["finished", "failed"],
                  timeout=90) != "finished":
        fail("the resumed job failed: %s\ntrace:\n%s" %
             (cli(binary, env, "logs", str(job)).stdout, read(trace)))
    lines = read(trace).split()
    saved = [int(x[len("saved-"):]) for x in lines if x.startswith("saved-")]
    starts = re.findall(r"start-at-(\d+) restart-(\d+) uid-(\d+)",
                        read(trace))
    if len(saved) != 1 or not 0 < saved[0] < 60 or len(starts) != 2 or \
            starts[0] != ("0", "0", str(uid)) or \
            starts[1] != (str(saved[0]), "1", str(uid)) or \
            lines[-1] != "done-60":
        fail("checkpoint and resume in containers: trace %s" % lines)
    print("a container job checkpointed at step %d on preemption and "
          "resumed there in a new container, as uid %d" % (saved[0], uid))


def interactive(binary, workdir, env, home, uid):
    """`run --image` with pipes, then with a terminal (tmux): job control
    in the container's shell (Ctrl-C stops a foreground sleep, the shell
    goes on) and its exit code is run's."""
    r = subprocess.run([binary, "run", "--image", IMAGE, "--gpus", "1",
                        "--nodelist", "node-c", "--chdir", home, "--", "sh",
                        "-c", "cat; id -u; exit 3"], env=env,
                       input="hello\n", capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 3 or r.stdout != "hello\n%d\n" % uid:
        fail("run --image with pipes: rc %d, stdout %r, stderr %s" %
             (r.returncode, r.stdout, r.stderr))
    if not shutil.which("tmux"):
        print("no tmux: the terminal part is skipped")
        return
    tmux = Tmux(workdir, env, "%s run --pty --image %s --gpus 1 --nodelist "
                "node-c --chdir %s -- sh -i" % (binary, IMAGE, home))
    try:
        tmux.wait_screen(r"^[$] ?$", "a prompt from the container's shell")
        tmux.keys("sleep 30; echo slept", "Enter")
        time.sleep(1)
        tmux.keys("C-c")
        tmux.keys("echo alive-$((6*7)) $(id -u)", "Enter")
        # Typed before the shell drew its next prompt, the output follows
        # that prompt on its line.
        tmux.wait_screen(r"^(\S*[$#] )?alive-42 %d$" % uid,
                         "the shell after Ctrl-C")
        if re.search("^slept$", tmux.screen(), re.M):
            fail("Ctrl-C did not stop the sleep:\n%s" % tmux.screen())
        tmux.keys("exit 3", "Enter")
        wait_until("run to exit", lambda: os.path.exists(tmux.exit_file))
        code = read(tmux.exit_file).strip()
        if code != "EXIT=3":
            fail("run --pty --image ended with %s:\n%s" %
                 (code, tmux.screen()))
    finally:
        tmux.close()
    print("run --image: stdin reached the container; with --pty its shell "
          "took Ctrl-C and went on, exit 3 was run's")


def folder_images(binary, env, workdir, home, uid):
    """A root file system folder as the image: one below the agent's
    --image-folder runs; /etc, which is not, is refused at the start."""
    ok = submit_image(binary, env, home, os.path.join(workdir, "images",
                                                      "tiny"),
                      "sh", "-c", "id -u > folder-image.out")
    if wait_state(binary, env, ok, ["finished", "failed"]) != "finished" or \
            read(os.path.join(home, "folder-image.out")).strip() != str(uid):
        fail("a job on a folder image: %s" %
             cli(binary, env, "logs", str(ok)).stdout)
    bad = submit_image(binary, env, home, "/etc", "true")
    wait_state(binary, env, bad, ["failed"])
    logs = cli(binary, env, "logs", str(bad)).stdout
    if "only below its --image-folder" not in logs:
        fail("a job on /etc as its image: %r" % logs)
    print("a folder below --image-folder serves as an image; /etc is "
          "refused")


def no_mount_point_outside(binary, env, workdir, home):
    """A working dir that is no folder on the node (the name of a file
    programs read, in a root-owned folder) fails the job without making a
    folder of that name in the image's shared files, where every other
    container of the image would see it."""
    name = "/etc/ld.so.preload.d-%d" % os.getpid()
    r = cli(binary, env, "submit", "--image", IMAGE, "--gpus", "1",
            "--nodelist", "node-c", "--chdir", name, "--", "true")
    if r.returncode != 0:
        fail("submit --chdir %s: %s" % (name, r.stderr))
    job = int(r.stdout.strip())
    wait_state(binary, env, job, ["failed"])
    logs = cli(binary, env, "logs", str(job)).stdout
    if "no such folder on this node" not in logs:
        fail("the job with a bad working dir failed otherwise: %r" % logs)
    images = os.path.join(workdir, "agent-node-c", "images")
    made = [d for d in os.listdir(images)
            if os.path.exists(os.path.join(images, d, "rootfs") + name)]
    if made:
        fail("a job's bad working dir made %s in image %s" % (name, made))
    print("a working dir that is no folder on the node fails the job and "
          "leaves the image's files alone")


def submit_image(binary, env, home, image, *command):
    r = cli(binary, env, "submit", "--image", image, "--gpus", "1",
            "--nodelist", "node-c", "--chdir", home, "--", *command)
    if r.returncode != 0:
        fail("submit --image %s: %s" % (image, r.stderr))
    return int(r.stdout.strip())


def port_forward(binary, env, home):
    """port-forward reaches a server in a container: its process is in a
    session crun made, not the task's process group, and still counts as
    the task's; cancel's SIGTERM reaches it in the background of a shell
    (the container's init forwards it to the job's whole group)."""
    port = free_port()
    # In the background of a shell: a process the container's first one
    # (its init) started, two levels down.
    job = submit_image(binary, env, home, IMAGE, "sh", "-c",
                       "static-server %d hello-from-the-container "
                       "server.term & wait" % port)

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_until("the container's server", listening)
    p, local = forward(binary, env, job, port)
    with socket.create_connection(("127.0.0.1", local), timeout=10) as s:
        got = s.recv(100)
    p.wait(timeout=10)
    if got != b"hello-from-the-container":
        fail("port-forward into a container got %r" % got)
    cli(binary, env, "cancel", str(job))
    wait_until("the container's server to end on cancel",
               lambda: not listening())
    term = os.path.join(home, "server.term")
    if not os.path.exists(term) or read(term) != "term\n":
        fail("cancel's SIGTERM did not reach the container's background "
             "server (killed without it)")
    print("port-forward reached a server in a container; cancel's SIGTERM "
          "reached it in the background of a shell")


def missing_image(binary, env, home):
    job = submit_image(binary, env, home, "localhost/no-such-image:1",
                       "true")
    wait_state(binary, env, job, ["failed"])
    logs = cli(binary, env, "logs", str(job)).stdout
    if "is not in this node's image store" not in logs:
        fail("a missing image's job log says %r" % logs)
    print("a job naming a missing image failed: %s" %
          logs.strip().split("\n")[-1][:120])


def agent_restart(binary, env, workdir, home, uid, gid, restart):
    """An agent killed (SIGKILL) and started again while a container task
    runs: the new agent adopts the task, which runs on to its end once,
    and its bundle is removed after."""
    write_script(home, uid, gid, "ticks.sh", """#!/bin/sh
echo "start" >> ticks
n=0
while test "$n" -lt 50; do n=$((n+1)); sleep 0.1; done
echo "done-$n" >> ticks
""")
    job = submit(binary, env, home, "--gpus", "1", "--", "./ticks.sh")
    ticks = os.path.join(home, "ticks")
    wait_until("the job's start", lambda: os.path.exists(ticks))
    restart()
    if wait_state(binary, env, job, ["finished", "failed"],
                  timeout=90) != "finished":
        fail("the adopted container job: %s" % job_info(binary, env, job))
    if read(ticks).split() != ["start", "done-50"]:
        fail("the adopted container job ran as %s" % read(ticks).split())
    bundles = os.path.join(workdir, "agent-node-c", "containers")
    wait_until("its bundle to go", lambda: not any(
        d.startswith("job-%d-" % job) for d in os.listdir(bundles)))
    print("a container task outlived its agent's SIGKILL, was adopted by "
          "the next one, ran to its end once, and its bundle went")


def another_users_view(binary, env, other_env, workdir, home, other_home,
                       other_uid, other_gid):
    """What a running container job leaves on the node, tried from another
    user's job: its bundle's config (which holds the job's environment),
    the bundles' folder, and the image's shared files."""
    secret = "hunter2-%d" % os.getpid()
    job = submit(binary, env, home, "--gpus", "1", "--env",
                 "SECRET=" + secret, "--", "sh", "-c", "sleep 60")
    wait_state(binary, env, job, ["running"])
    state = os.path.join(workdir, "agent-node-c")
    bundle = [d for d in os.listdir(os.path.join(state, "containers"))
              if d.startswith("job-%d-" % job)][0]
    config = os.path.join(state, "containers", bundle, "0", "config.json")
    if secret not in read(config):
        fail("the bundle's config holds no environment: the test is wrong")
    rootfs = os.path.join(state, "images",
                          os.listdir(os.path.join(state, "images"))[0],
                          "rootfs")
    write_script(other_home, other_uid, other_gid, "attack.sh", """#!/bin/sh
cat %s > /dev/null 2>&1 && echo read-config || echo no-config
touch %s/bin/planted 2>/dev/null && echo planted || echo no-plant
ls %s/containers > /dev/null 2>&1 && echo listed || echo no-list
""" % (config, rootfs, state))
    r = cli(binary, other_env, "submit", "--gpus", "1", "--nodelist",
            "node-c", "--chdir", other_home, "--wait", "--",
            "sh", "-c", "./attack.sh > attack.out")
    cli(binary, env, "cancel", str(job))
    if r.returncode != 0:
        fail("the other user's job: %s %s" % (r.stdout, r.stderr))
    seen = read(os.path.join(other_home, "attack.out")).split()
    if seen != ["no-config", "no-plant", "no-list"]:
        fail("another user's job, beside a container job: %s" % seen)
    print("another user's job could not read the container's config (its "
          "environment), list the bundles, nor plant a file in the image")


def arrays_and_files(binary, env, home):
    """--image in an array and as a job file's "image": every job runs in
    the image (no python3 there, which the host has)."""
    probe = ("if test -e /usr/bin/python3; then echo host; else echo image; "
             "fi > where-$1$TIRESIAS_ARRAY_TASK_ID")
    r = cli(binary, env, "submit", "--array", "0-1", "--image", IMAGE,
            "--gpus", "1", "--nodelist", "node-c", "--chdir", home, "--",
            "sh", "-c", probe, "sh", "arr")
    if r.returncode != 0:
        fail("submit --array --image: %s" % r.stderr)
    jobs_file = os.path.join(home, "jobs.jsonl")
    with open(jobs_file, "w") as f:
        f.write(json.dumps({"gpus": 1, "image": IMAGE, "nodelist": "node-c",
                            "chdir": home,
                            "command": ["sh", "-c", probe, "sh", "file"]}) +
                "\n")
    r = cli(binary, env, "submit", "--file", jobs_file)
    if r.returncode != 0:
        fail("submit --file with an image: %s" % r.stderr)
    wanted = ["where-arr0", "where-arr1", "where-file"]
    wait_until("the array's and the file's jobs", lambda: all(
        os.path.exists(os.path.join(home, w)) for w in wanted))
    seen = [read(os.path.join(home, w)).strip() for w in wanted]
    if seen != ["image"] * 3:
        fail("array and file jobs ran on %s" % seen)
    print("an array's jobs and a job file's job ran in the image")


def run(binary, workdir, users):
    build_image(workdir, IMAGE, sys.argv[2])
    mounted = free_cgroup2_controllers()
    dev = make_gpu_nodes(workdir)
    state = os.path.join(workdir, "state")
    address = "127.0.0.1:%d" % free_port()
    flags = ["--gpus", "4", "--gpu-device-dir", dev, "--image-folder",
             os.path.join(workdir, "images")]
    agents = []
    try:
        with secure_up(binary, workdir, state, address, agents=1):
            admin = admin_env(state, address)
            base = dict(admin)
            del base["TIRESIAS_CA"], base["TIRESIAS_TOKEN_FILE"]
            agents.append(start_operator_agent(binary, workdir, base, admin,
                                               "node-c", flags))
            wait_up(binary, admin, workdir, ["node-0", "node-c"])
            AGENT_LOG.append(os.path.join(workdir, "agent.err"))

            def restart():
                agents[-1].kill()
                agents[-1].wait()
                with open(os.path.join(workdir, "agent-restarted.err"),
                          "w") as err:
                    agents.append(subprocess.Popen(
                        [binary, "agent", "--master", address, "--tls-dir",
                         os.path.join(workdir, "node-c-tls"), "--name",
                         "node-c", "--grace", "2", *flags, "--state-dir",
                         os.path.join(workdir, "agent-node-c")],
                        stdout=subprocess.DEVNULL, stderr=err, env=base))
                AGENT_LOG[0] = os.path.join(workdir, "agent-restarted.err")

            env, uid, home = user_session(binary, admin, workdir, users[0])
            gid = os.stat(home).st_gid
            other_env, other_uid, other_home = user_session(
                binary, admin, workdir, users[1], "x")
            what_a_job_sees(binary, env, home, uid, gid)
            checkpoint_and_resume(binary, env, admin, home, uid, gid)
            interactive(binary, workdir, env, home, uid)
            port_forward(binary, env, home)
            arrays_and_files(binary, env, home)
            folder_images(binary, env, workdir, home, uid)
            no_mount_point_outside(binary, env, workdir, home)
            missing_image(binary, env, home)
            another_users_view(binary, env, other_env, workdir, home,
                               other_home, other_uid,
                               os.stat(other_home).st_gid)
            agent_restart(binary, env, workdir, home, uid, gid, restart)
    finally:
        for agent in agents:
            agent.terminate()
            agent.wait(timeout=30)
        subprocess.run(["podman", "rmi", "--force", IMAGE],
                       capture_output=True)
        restore_cgroup_mounts(mounted)


if __name__ == "__main__":
    if os.geteuid() == 0 and not (shutil.which("podman") and
                                  shutil.which("crun")):
        print("skipped: podman and crun are not installed "
              "(scripts/setup.sh installs them)")
        sys.exit(SKIP)
    run_as_throwaway_users(run, ["tct", "tcx"])
