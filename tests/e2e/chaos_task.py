#!/usr/bin/python3 -S
"""One task of the chaos test (chaos_test.py): a job process that records its
own ground truth, so that the test judges from what really ran rather than
from the master's word.

Usage: chaos_task.py GROUND_DIR WORK_SECONDS [FAIL_CODE]

- At start it takes an exclusive lock on a file per GPU it was given
  (GROUND_DIR/gpu-<node>-<index>.lock, from TIRESIAS_NODE_NAME and
  CUDA_VISIBLE_DEVICES; a CPU-only task, given none, the node's one spare
  CPU: gpu-<node>-spare.lock): if another live task holds one, two tasks
  hold that GPU at once, and it says so in GROUND_DIR/violations. The
  kernel drops the lock when the process dies, however it dies.
- It looks for a live task of another attempt of its job
  (GROUND_DIR/alive-<job>-<attempt>-<rank>-<pid>, checked with kill(pid, 0)
  and /proc/<pid>/cmdline): one means two attempts at once: a violation.
- It writes GROUND_DIR/task-<job>-<attempt>-<rank>-<pid>: a first line
  "start <unix s> <node> <gpus>" (the file appears with it, renamed into
  place), then every 20 ms it rewrites a fixed-size
  "alive <unix s>" line after it, and at the end a final "end <unix s>
  <code>" line: the task's interval, to within 20 ms even if SIGKILLed.
- It works WORK_SECONDS in all, across restarts: progress is saved in
  TIRESIAS_CHECKPOINT_DIR/progress every 50 ms and on SIGTERM (then it
  exits 143). With FAIL_CODE it fails on its own after 0.3 s of work.
"""
import fcntl
import os
import signal
import sys
import time

ground, work = sys.argv[1], float(sys.argv[2])
fail_code = int(sys.argv[3]) if len(sys.argv) > 3 else None
job = os.environ["TIRESIAS_JOB_ID"]
attempt = os.environ["TIRESIAS_ATTEMPT"]
rank = os.environ.get("RANK", "0")
node = os.environ.get("TIRESIAS_NODE_NAME", "?")
# A task of several processes (one per GPU) holds its GPUs once: its first
# process (LOCAL_RANK 0) locks and records them for all.
gpus = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        if g and os.environ.get("LOCAL_RANK", "0") == "0"]
# A CPU-only task (no GPU at all; chaos_test.py's agents keep one spare CPU
# each and such jobs ask for it) holds the node's spare CPU as a GPU.
if os.environ.get("CUDA_VISIBLE_DEVICES") == "" and \
        os.environ.get("LOCAL_RANK", "0") == "0":
    gpus = ["spare"]
ckpt_dir = os.environ["TIRESIAS_CHECKPOINT_DIR"]
me = "%s-%s-%s-%d" % (job, attempt, rank, os.getpid())


def violation(what):
    with open(os.path.join(ground, "violations"), "a") as f:
        f.write("%.3f task %s on %s: %s\n" % (time.time(), me, node, what))


locks = []
for g in gpus:
    fd = os.open(os.path.join(ground, "gpu-%s-%s.lock" % (node, g)),
                 os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        violation("GPU %s is held by another live task" % g)
    locks.append(fd)

for name in os.listdir(ground):
    if not name.startswith("alive-%s-" % job):
        continue
    _, _, other_attempt, _, pid = name.split("-")
    if other_attempt == attempt:
        continue
    try:  # that very task (not a process that reused its pid)
        os.kill(int(pid), 0)
        with open("/proc/%s/environ" % pid, "rb") as f:
            env = f.read().split(b"\0")
        alive = (("TIRESIAS_JOB_ID=%s" % job).encode() in env and
                 ("TIRESIAS_ATTEMPT=%s" % other_attempt).encode() in env)
    except (ProcessLookupError, FileNotFoundError, PermissionError):
        alive = False
    if alive:
        violation("attempt %s of the job is alive too (pid %s)" %
                  (other_attempt, pid))
open(os.path.join(ground, "alive-" + me), "w").close()

# The record appears with its start line or not at all (written under a
# temporary name, then renamed): a task killed in between leaves no empty
# record behind. The descriptor follows the file across the rename.
record_tmp = os.path.join(ground, "tmp-task-" + me)
record = os.open(record_tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
head = ("start %.6f %s %s\n" % (time.time(), node, ",".join(gpus) or "-"))
os.write(record, head.encode())
os.rename(record_tmp, os.path.join(ground, "task-" + me))
alive_at = len(head)
ALIVE_LEN = len("alive %.6f\n" % time.time())  # fixed until year 2286


def alive():
    os.pwrite(record, ("alive %.6f\n" % time.time()).encode(), alive_at)


def end(code):
    alive()
    os.pwrite(record, ("end %.6f %d\n" % (time.time(), code)).encode(),
              alive_at + ALIVE_LEN)
    os._exit(code)


os.makedirs(ckpt_dir, exist_ok=True)
progress_path = os.path.join(ckpt_dir, "progress")
try:
    with open(progress_path) as f:
        done = float(f.read() or 0)
except (FileNotFoundError, ValueError):
    done = 0.0


def save():
    tmp = progress_path + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write("%.3f" % done)
    os.replace(tmp, progress_path)


def on_term(signum, frame):
    save()
    end(143)


signal.signal(signal.SIGTERM, on_term)
alive()
last_save = time.monotonic()
last = time.monotonic()
ran = 0.0
while done < work:
    time.sleep(0.02)
    now = time.monotonic()
    done += now - last
    ran += now - last
    last = now
    alive()
    if fail_code is not None and ran >= 0.3:
        end(fail_code)
    if now - last_save >= 0.05:
        save()
        last_save = now
save()
end(0)
