// The two halves of SpawnProcess (spawn.h): what the parent prepares
// before fork (ChildSetup) and the child's side, RunChild (spawn_child.cc):
// the shim and its task processes. Internal to the agent.
#ifndef TIRESIAS_AGENT_SPAWN_INTERNAL_H_
#define TIRESIAS_AGENT_SPAWN_INTERNAL_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace tiresias::spawn_internal {

// What the child writes to the error pipe when its setup or exec fails.
enum ChildStage : int {
  kSetpgid,
  kRedirect,
  kChdir,
  kExec,
  kFork,
  kSetgroups,
  kSetgid,
  kSetuid,
  kIdsUnchanged,  // no errno: an id kept its old value, or root came back
  kCheckpointDir,
  kLeaseLapsed,  // no errno: the lease lapsed before the task could start
  kOutputFile,   // opening SpawnRequest::output_path
  kErrorFile,    // opening SpawnRequest::error_path
  kTeeSetup,     // the pipes and socket of the copy to the user's files
  kCgroup,       // joining SpawnRequest::cgroup_procs_fds
  kTerminal,     // setsid, or making stdin the controlling terminal
};

struct ChildError {
  int stage;
  int error;  // errno
};

// Everything the child needs, prepared before fork: after fork the child of
// a multi-threaded agent may only make async-signal-safe calls.
struct ChildSetup {
  const char* path;
  // Process i execs argvs[i] (all `argv` unless SpawnRequest::argvs).
  char* const* const* argvs;
  // The task's processes (SpawnRequest::envs): envps[i] is process i's
  // environment; worker_pids has room for process_count pids (the shim's
  // own copy after fork).
  char* const* const* envps;
  size_t process_count;
  pid_t* worker_pids;
  const char* working_dir;  // null: stay
  // The identity the task switches to (SpawnRequest::run_as).
  bool run_as;
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t group_count;
  // A writable copy (MakeCheckpointDir cuts it at each '/'); null: none.
  char* checkpoint_dir;
  int stdin_fd;
  int log_fd;
  // SpawnRequest::stdio_fds[1..2] when given (else log_fd twice), and
  // SpawnRequest::controlling_tty.
  int stdout_fd;
  int stderr_fd;
  bool controlling_tty;
  int error_fd;
  const char* exit_path;      // null: the shim records nothing
  const char* exit_tmp_path;  // exit_path + ".tmp"
  unsigned max_fd;            // highest descriptor that may be open
  const int64_t* lease;       // null: never fenced
  int64_t fence_grace_ns;
  int warn_signal;  // SpawnRequest::warn_signal
  int64_t warn_after_ns;
  // The user's output files (SpawnRequest); null: none.
  const char* output_path;
  const char* error_path;
  // SpawnRequest::cgroup_procs_fds.
  const int* cgroup_fds;
  size_t cgroup_fd_count;
};

// The forked child: the shim (spawn.h). Never returns; only
// async-signal-safe calls.
[[noreturn]] void RunChild(const ChildSetup& s);

}  // namespace tiresias::spawn_internal

#endif  // TIRESIAS_AGENT_SPAWN_INTERNAL_H_
