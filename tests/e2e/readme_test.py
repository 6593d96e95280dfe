#!/usr/bin/python3
"""The README as a newcomer reads it: every code block marked
`<!-- readme-test -->` (or `<!-- readme-test exact -->`) in README.md is
typed, line by line and in order, into one bash in a tmux terminal started
in the clone's root, as a person would: a line ending in `&` waits for
what the README shows it print (`tiresias up` until "Ctrl-C stops the
cluster"), a line whose comment says "N s later" waits N seconds first.
Judged from the terminal itself (tmux's screen history):

- every command exits 0 (the prompt prints each one's status);
- under `exact`, every output line the README shows (but "...") is printed,
  in order, as shown (spaces aside): the README's numbers are the code's;
- elsewhere, each output line the README shows has a printed line of the
  same first word (for an event or log line, its kind), so that a command
  printing nothing, or something else, fails.

The blocks not marked need more than one machine, root's package manager or
a network (two hosts, `apt install`, systemd, the testbed); e2e.package
and the others run what they show. Creates tiresias-up/, out/, real/ and
sim/ in the clone (it refuses to start if one is there already, and
removes the ones it made), and listens on port 50051, as the README does.

Usage: readme_test.py (from the clone's root, after the build).
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from local_cluster import fail  # noqa: E402

MADE = ["tiresias-up", "real", "sim", "out/philly"]
COMMAND_TIMEOUT_S = 900
UP_READY = "Ctrl-C stops the cluster"
RC = re.compile(r"^\[rc=(\d+)\]$", re.M)


def blocks(readme):
    """[(exact, [(command, shown output lines, seconds to wait first)])] of
    the marked blocks, in order."""
    out = []
    lines = readme.split("\n")
    i = 0
    while i < len(lines):
        marker = re.match(r"<!-- readme-test( exact)? -->$", lines[i])
        if not marker:
            i += 1
            continue
        if lines[i + 1] != "```":
            fail("README.md:%d: a readme-test marker not before a ``` block"
                 % (i + 1))
        i += 2
        commands = []
        while lines[i] != "```":
            line = lines[i]
            if line.startswith("$ "):
                command = line[2:]
                while command.endswith("\\"):
                    i += 1
                    command = command[:-1] + " " + lines[i].strip()
                later = re.search(r"# (\d+) s later", command)
                commands.append([command, [], int(later.group(1))
                                 if later else 0])
            elif commands and line.strip() and line.strip() != "..." \
                    and not line.lstrip().startswith("#"):
                commands[-1][1].append(line)
            i += 1
        out.append((marker.group(1) is not None, commands))
        i += 1
    return out


class Terminal:
    """A bash in a tmux session of its own (a private server socket), its
    prompt "$ " after a line "[rc=N]" with the last command's status."""

    def __init__(self, cwd, workdir):
        self.socket = "tiresias-readme-%d" % os.getpid()
        conf = os.path.join(workdir, "tmux.conf")
        with open(conf, "w") as f:
            f.write("set -g history-limit 500000\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TIRESIAS_")}
        env.update(PS1="$ ", PROMPT_COMMAND='printf "[rc=%d]\\n" $?',
                   TERM="xterm-256color")
        subprocess.run(["tmux", "-L", self.socket, "-f", conf, "new-session",
                        "-d", "-s", "readme", "-x", "250", "-y", "50",
                        "-c", cwd,
                        "PS1='$ ' exec bash --norc --noprofile -i"],
                       env=env, check=True)
        self.wait_for(lambda screen: RC.search(screen), "the first prompt", 20)

    def screen(self):
        return subprocess.run(
            ["tmux", "-L", self.socket, "capture-pane", "-p", "-J", "-S", "-",
             "-t", "readme"], capture_output=True, text=True).stdout

    def wait_for(self, check, what, timeout_s):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.2)
        fail("%s: not within %d s; the terminal shows:\n%s" %
             (what, timeout_s, self.screen()[-4000:]))

    def type(self, line):
        """Types `line` and Enter; returns (its status, what it printed)."""
        before = len(RC.findall(self.screen()))
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t",
                        "readme", "-l", line], check=True)
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t",
                        "readme", "Enter"], check=True)
        screen = self.wait_for(
            lambda s: len(RC.findall(s)) > before, "`%s` to end" % line,
            COMMAND_TIMEOUT_S)
        ends = list(RC.finditer(screen))
        status = ends[before]
        # From the line after the prompt and the command typed at it.
        start = screen.find("\n", ends[before - 1].end() + 1)
        printed = screen[start + 1:status.start()]
        return int(status.group(1)), printed

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"],
                       capture_output=True)


def normalized(line):
    return " ".join(line.split())


def key(line):
    """The word a shown line is matched by: its first, or for an event or
    log line ("2026-11-30 04:25:48  started ...") its kind."""
    words = line.split()
    if re.match(r"\d{4}-\d\d-\d\d$", words[0]) and len(words) > 2:
        return words[3] if words[2].isdigit() and len(words) > 3 else words[2]
    return words[0]


def check_output(command, shown, printed, exact):
    lines = [normalized(l) for l in printed.split("\n") if l.strip()]
    if exact:
        at = 0
        for want in shown:
            want = normalized(want)
            while at < len(lines) and lines[at] != want:
                at += 1
            if at == len(lines):
                fail("`%s` did not print, in order, the README's line\n  %s\n"
                     "it printed:\n%s" % (command, want, printed[-4000:]))
            at += 1
        return
    firsts = set()
    for line in lines:
        firsts.add(line.split()[0])
        if len(line.split()) > 2:
            firsts.add(key(line))
    for want in shown:
        if key(want) not in firsts:
            fail("`%s`: the README shows a line like\n  %s\nbut it printed:\n"
                 "%s" % (command, want.strip(), printed[-4000:]))


def main():
    root = os.getcwd()
    with open(os.path.join(root, "README.md")) as f:
        marked = blocks(f.read())
    if not marked:
        fail("README.md has no block marked <!-- readme-test -->")
    there = [d for d in MADE if os.path.exists(os.path.join(root, d))]
    if there:
        fail("%s exist(s) already in %s: move them away first (this test "
             "makes them as the README does)" % (", ".join(there), root))
    started = time.time()
    workdir = os.path.join("/tmp", "tiresias-readme-%d" % os.getpid())
    os.makedirs(workdir)
    terminal = Terminal(root, workdir)
    try:
        ran = 0
        for exact, commands in marked:
            for command, shown, wait_s in commands:
                time.sleep(wait_s)
                began = time.time()
                up = command.rstrip().endswith("&") and " up " in command
                ups = terminal.screen().count(UP_READY)
                status, printed = terminal.type(command)
                if status != 0:
                    fail("`%s` exited %d; it printed:\n%s" %
                         (command, status, printed[-4000:]))
                if up:
                    terminal.wait_for(lambda s: s.count(UP_READY) > ups,
                                      "`%s` to start" % command, 60)
                else:
                    check_output(command, shown, printed, exact)
                ran += 1
                print("ok %5.1f s  %s" % (time.time() - began, command),
                      flush=True)
            # What the block left running in the background ends with it.
            terminal.type("kill %% 2>/dev/null; wait")
        print("%d README command lines ran" % ran)
    finally:
        terminal.close()
        subprocess.run(["pkill", "-f", "tiresias up --agents 2"],
                       capture_output=True)
        for made in MADE:
            shutil.rmtree(os.path.join(root, made), ignore_errors=True)
        if os.path.isdir(os.path.join(root, "out")) and \
                not os.listdir(os.path.join(root, "out")):
            os.rmdir(os.path.join(root, "out"))
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
