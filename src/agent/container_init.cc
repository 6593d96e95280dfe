// tiresias-container-init: the first program of a task's container
// (container.h), bound read-only at /dev/tiresias-init and linked
// statically, so it runs in any image.
//
//   tiresias-container-init [--tty] -- COMMAND [ARG...]
//
// It dies with its parent, crun (parent-death signal: SIGKILL to the
// task's group kills crun, and so the container's process, which crun put
// in a session of its own); with --tty, takes its stdin, the task's
// terminal, as its controlling terminal, so the terminal's Ctrl-C, Ctrl-Z
// and hang-up reach the job; then execs COMMAND, looked up in the
// container's PATH. Exit 127 (not found) or 126 (not runnable) when it
// cannot, saying why on stderr, as a shell does.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (parent == 1 || getppid() != parent) return 137;  // crun is gone
  int i = 1;
  bool tty = false;
  if (i < argc && strcmp(argv[i], "--tty") == 0) {
    tty = true;
    ++i;
  }
  if (i < argc && strcmp(argv[i], "--") == 0) ++i;
  if (i >= argc) {
    fprintf(stderr, "usage: tiresias-container-init [--tty] -- COMMAND...\n");
    return 127;
  }
  // crun made this process a session leader with no terminal; the task's
  // terminal is nobody's (the shim left it free), so it becomes ours.
  if (tty && isatty(0) && ioctl(0, TIOCSCTTY, 0) != 0) {
    fprintf(stderr, "tiresias: the terminal is not the job's: %s\n",
            strerror(errno));
  }
  execvp(argv[i], argv + i);
  const int error = errno;
  fprintf(stderr, "tiresias: cannot run %s in the container: %s\n", argv[i],
          strerror(error));
  return error == ENOENT ? 127 : 126;
}
