// tiresias-container-init: the first program of a task's container
// (container.h), bound read-only at /dev/tiresias-init and linked
// statically, so it runs in any image.
//
//   tiresias-container-init [--tty] -- COMMAND [ARG...]
//
// crun starts the container's process in a session of its own, outside
// the task's process group, and forwards to that one process the signals
// the agent sends the group. So this init gives the job back a group of
// its own, as the shim gives a task on the host:
//   - it forks COMMAND (looked up in the container's PATH) as the leader
//     of a new process group, and forwards every stop signal it gets
//     (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE,
//     SIGCONT) to that whole group: preemption's SIGTERM reaches torchrun's
//     workers, a shell's pipeline, a data loader;
//   - with --tty it takes its stdin, the task's terminal, as its
//     controlling terminal (the shim left it free) and makes the job's
//     group the terminal's foreground group, so Ctrl-C, Ctrl-Z and the
//     hang-up reach the job;
//   - when the leader ends, what is left of the group is killed (as the
//     agent kills what a task's leader leaves) and the init ends the same
//     way (same exit code, or killed by the same signal);
//   - when crun dies (SIGKILL to the task's group: the fence, a stop's
//     end), the parent-death signal tells it, and it kills the whole group.
// Exit 127 (not found) or 126 (not runnable) when COMMAND cannot run,
// saying why on stderr, as a shell does.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/exit_like.h"

namespace {

// Signals forwarded to the job's group.
constexpr int kForwarded[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGUSR1,
                              SIGUSR2, SIGALRM, SIGPIPE, SIGCONT};
// The parent-death signal: crun is gone.
const int kParentDied = SIGRTMIN + 1;

volatile sig_atomic_t job_group = 0;

void Forward(int sig) {
  const int saved = errno;
  if (job_group > 0) kill(-job_group, sig);
  errno = saved;
}

void ParentDied(int) {
  if (job_group > 0) kill(-job_group, SIGKILL);
  _exit(137);
}

}  // namespace

int main(int argc, char** argv) {
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, kParentDied, 0, 0, 0);
  struct sigaction died = {};
  died.sa_handler = ParentDied;
  sigaction(kParentDied, &died, nullptr);
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
  if (tty && (!isatty(0) || ioctl(0, TIOCSCTTY, 0) != 0)) {
    fprintf(stderr, "tiresias: the terminal is not the job's: %s\n",
            strerror(errno));
    tty = false;
  }
  // Forwarded signals are held until the job's group exists.
  sigset_t forwarded, old;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &old);
  int ready[2];
  if (pipe(ready) != 0) return 126;
  const pid_t job = fork();
  if (job < 0) {
    fprintf(stderr, "tiresias: cannot fork: %s\n", strerror(errno));
    return 126;
  }
  if (job == 0) {
    close(ready[0]);
    setpgid(0, 0);
    if (tty) {
      // The terminal's foreground group: ours (SIGTTOU held meanwhile, as
      // a shell does for its jobs).
      sigset_t ttou;
      sigemptyset(&ttou);
      sigaddset(&ttou, SIGTTOU);
      sigprocmask(SIG_BLOCK, &ttou, nullptr);
      tcsetpgrp(0, getpid());
    }
    prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    signal(kParentDied, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    close(ready[1]);  // the group exists: the init may forward
    execvp(argv[i], argv + i);
    const int error = errno;
    fprintf(stderr, "tiresias: cannot run %s in the container: %s\n", argv[i],
            strerror(error));
    _exit(error == ENOENT ? 127 : 126);
  }
  setpgid(job, job);  // either side may get there first
  close(ready[1]);
  char byte;
  while (read(ready[0], &byte, 1) < 0 && errno == EINTR) {
  }
  close(ready[0]);
  job_group = job;
  struct sigaction forward = {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  for (int sig : kForwarded) sigaction(sig, &forward, nullptr);
  // A job that stops itself (Ctrl-Z in a shell's own job control) is the
  // shell's business; the init only waits for the leader's end.
  sigprocmask(SIG_SETMASK, &old, nullptr);
  int status = 0;
  while (waitpid(job, &status, 0) < 0) {
    if (errno != EINTR) return 126;
  }
  kill(-job, SIGKILL);  // what the leader left in its group
  tiresias::ExitLike(status);
}
