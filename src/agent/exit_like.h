// Ending a process the way one it waited for ended: what the shim
// (spawn_child.cc) and the container init (container_init.cc) do, so that
// whoever waits for them sees the task's own status. Header-only and libc
// alone: the container init is linked statically, apart from the agent.
#ifndef TIRESIAS_AGENT_EXIT_LIKE_H_
#define TIRESIAS_AGENT_EXIT_LIKE_H_

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tiresias {

// Exits with the code of wait status `status`, or kills itself with its
// signal (no core dump; 128 + the signal if that does not end it).
// Async-signal-safe.
[[noreturn]] inline void ExitLike(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigaction(sig, &default_action, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  kill(getpid(), sig);
  _exit(128 + sig);
}

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_EXIT_LIKE_H_
