"""What the example jobs share (train.py, ps_train.py): flag types, the
environment a Tiresias agent sets, atomic checkpoint files, and an exit
that skips interpreter shutdown. Imported from the scripts' own folder
(Python puts a script's folder first on sys.path): keep it beside them."""

import argparse
import os
import sys


class UsageError(Exception):
    """A bad flag or environment variable: reported in one line, exit 2."""


# --- flags and environment --------------------------------------------------

def int_type(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    return parse


def seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number >= 0")
    return value


def env_int(name, default, minimum):
    text = os.environ.get(name, "")
    if text.strip() == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{name} must be an integer, got '{text}'")
    if value < minimum:
        raise UsageError(f"{name} must be >= {minimum}, got {value}")
    return value


def read_env(default_world=1):
    """The agent's variables, all optional, checked."""
    env = {
        "world": env_int("WORLD_SIZE", default_world, 1),
        "rank": env_int("RANK", 0, 0),
        "local_rank": env_int("LOCAL_RANK", 0, 0),
        "restarts": env_int("TIRESIAS_RESTART_COUNT", 0, 0),
        "master_addr": os.environ.get("MASTER_ADDR") or "127.0.0.1",
        "master_port": env_int("MASTER_PORT", 29500, 1),
        "ckpt_dir": os.environ.get("TIRESIAS_CHECKPOINT_DIR") or "checkpoints",
        "job_id": os.environ.get("TIRESIAS_JOB_ID", ""),
    }
    if env["rank"] >= env["world"]:
        raise UsageError(f"RANK ({env['rank']}) must be less than WORLD_SIZE "
                         f"({env['world']})")
    if env["master_port"] > 65535:
        raise UsageError(f"MASTER_PORT must be <= 65535, got {env['master_port']}")
    return env


# --- files ------------------------------------------------------------------

def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write):
    """Writes path via a temporary file in the same folder: write(f), flush,
    fsync, rename over path, fsync the folder. Readers see old or new."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


# --- exit -------------------------------------------------------------------

def hard_exit(code):
    """os._exit after flushing: no interpreter shutdown, no destructors
    (with torch 1.13, tearing down a gloo group after a peer left can
    hang)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def run_main(main, prog):
    """Runs main(argv) and exits: 0 when it returns, 2 on a usage error, 1
    on an OS or torch.distributed error (a peer died, rendezvous timeout),
    130 on Ctrl-C; each error in one line. Every path calls hard_exit while
    the exception (and so main's frame) is still alive."""
    try:
        main(sys.argv[1:])
        hard_exit(0)
    except SystemExit as e:  # argparse: usage error (2) or --help (0)
        hard_exit(e.code if isinstance(e.code, int) else 2)
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        hard_exit(2)
    except (OSError, RuntimeError, ValueError) as e:
        msg = str(e).strip().splitlines()
        print(f"{prog}: error: {msg[0] if msg else type(e).__name__}",
              file=sys.stderr)
        hard_exit(1)
    except KeyboardInterrupt:
        hard_exit(130)
