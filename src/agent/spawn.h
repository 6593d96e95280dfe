// fork + exec of one task process, the part of the launcher that runs in
// the child. Failures of the child's setup or of exec come back to the
// parent through a close-on-exec pipe, so "command not executable" is an
// error from SpawnProcess, not a process that silently exits 127.
//
// The forked process is a shim (named "tiresias-shim" in /proc/<pid>/comm):
// it leads the task's process group, forks and execs the task into that
// group, ignores the stop signals sent to the group (SIGTERM, SIGINT,
// SIGHUP, ...; SIGKILL still ends it), waits for the task, writes the
// task's exit status to the exit file and then ends the same way (same exit
// code, or killed by the same signal). Whoever waits for the shim sees the
// task's own status; an agent that restarted while the task ran, and so
// cannot wait for anything, reads the exit file (exit_file.h). The task
// gets SIGKILL if the shim dies (parent-death signal), so no task outlives
// the one process that can report its end; what the task started is left
// to the agent, which kills the group once its leader is gone.
//
// Processes (SpawnRequest::envs): a task may be several processes, all
// forked by the shim into its group from the same command, each with its
// own environment (RANK, LOCAL_RANK, ...), as torchrun starts
// --nproc-per-node workers. The task ends when all have. Its status is
// that of the first process to end otherwise than with exit code 0 (0 if
// none did), and once one has, the others are stopped: SIGTERM to the
// group, SIGKILL to those left after the grace (fence_grace_ns), as a
// torchrun worker group is torn down when one worker fails. SpawnProcess
// returns once every process has exec'd; if one could not, the shim stops
// the others as the peers of a failed process, and SpawnProcess answers
// that process's error once the shim has ended.
//
// Fencing (lease.h): a shim whose lease has already lapsed does not start
// its task (SpawnProcess answers Aborted). While it waits, the shim checks
// the lease every kShimTick. Once it has lapsed it stops the task on its
// own: SIGTERM to the group (the task checkpoints); after the grace period,
// the exit file ("signal 9 ... fenced") and SIGKILL to the whole group,
// itself included, since no agent may be there to sweep what is left. A
// task that ends within the grace is reaped and recorded ("... fenced")
// and the rest of its group is killed the same way.
//
// Identity (RunAs): the shim keeps the agent's identity (root), which it
// needs to write the exit file under the agent's state dir and to kill the
// task's group; only the task's own process switches, after the fork and
// before anything else it does as the task: setgroups, setresgid,
// setresuid (raw system calls: the process is a fork of a threaded agent),
// then a check that real, effective and saved ids all changed. The task's
// working dir and checkpoint dir are entered and created after the switch,
// so what the account cannot reach is a start error, not a task that fails
// later. The log file, opened by the agent, is handed to the account.
//
// The user's output files (SpawnRequest::output_path, error_path): the
// task's process opens them as the account, after the chdir, and passes
// them to the shim (SCM_RIGHTS on a socket pair); the task's stdout and
// stderr are then pipes that the shim copies to both the task log and the
// files while it waits, and drains once the task has ended. The log the
// agent serves (`tiresias logs`) stays complete; no root process ever
// opens a path the user chose.
#ifndef TIRESIAS_AGENT_SPAWN_H_
#define TIRESIAS_AGENT_SPAWN_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// The Unix identity a task runs as, resolved before fork (run_as.h).
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, the whole list
};

struct SpawnRequest {
  std::string path;               // the file to execve (see ResolveCommand)
  std::vector<std::string> argv;  // argv[0] included
  // One process of the task per entry, each with this whole environment
  // ("K=V"; at least one, at most kMaxTaskProcesses): a worker group as
  // torchrun's, see the file comment.
  std::vector<std::vector<std::string>> envs;
  std::string working_dir;        // empty: the caller's
  std::string log_path;           // stdout and stderr, appended; created
  // Where the shim records how the task ended (its folder created; a stale
  // file removed first). Empty: not recorded.
  std::string exit_path;
  // The task's lease (lease.h), mapped shared; null: never fenced.
  const int64_t* lease = nullptr;
  // SIGTERM to SIGKILL when fencing, and for the other processes of a task
  // one of whose processes failed; nanoseconds.
  int64_t fence_grace_ns = 0;
  // A signal the shim sends the task's group once, warn_after_ns after it
  // forked the task's processes (0: none). Only one the shim ignores
  // (kShimIgnores in spawn_child.cc; core/warn_signal.h's).
  int warn_signal = 0;
  int64_t warn_after_ns = 0;
  // Whom the task runs as; nullopt: the caller's identity, unchanged.
  std::optional<RunAs> run_as;
  // Created by the task's process (as run_as) if missing, with its missing
  // parents (all 0700), after the chdir to working_dir;
  // it must then be a folder the task can read, write and enter. Empty:
  // none.
  std::string checkpoint_dir;
  // The user's copies of the output (submit --output, --error): opened by
  // the task's process, as run_as, after the chdir (O_APPEND, created
  // 0600); a failure is a start error. When output_path is set, the task's
  // stdout (and stderr, unless error_path is set too) is a pipe that the
  // shim copies to both log_path and the file; when only error_path is
  // set, stderr alone goes through the shim. Empty: straight to log_path.
  std::string output_path;
  std::string error_path;
  // The task's cgroup.procs files (TaskCgroup::OpenProcsFiles), open for
  // writing: the shim moves itself into those groups first thing, so the
  // task and every process it makes run inside. Not closed here. Empty:
  // none.
  std::vector<int> cgroup_procs_fds;
  // An interactive task's stdin, stdout and stderr (task_io.h): the
  // caller's descriptors (a pty's slave end three times, or pipes), used
  // instead of /dev/null and log_path, which then only records start
  // errors. Not closed here. -1: the batch default. With controlling_tty,
  // the shim starts a new session (setsid: it still leads the task's
  // process group) and makes stdin its controlling terminal, so the
  // terminal's Ctrl-C, Ctrl-Z and hang-up reach the task's foreground
  // processes. Not with output_path or error_path.
  int stdio_fds[3] = {-1, -1, -1};
  bool controlling_tty = false;
  // Process i's own argv instead of `argv`, one per process (as many as
  // envs) or none: a container task's processes are one runtime call each,
  // naming its own container (container.h).
  std::vector<std::vector<std::string>> argvs;
};

// The task's umask, set by its process before it makes its checkpoint
// dir, opens its output files and execs: the usual default of a login
// shell, so a job's files are what its user's own commands would make,
// whatever the agent's (077: the agent's state is its own). The shim keeps
// the agent's, so the exit file and the task log (0600) stay private.
inline constexpr mode_t kTaskUmask = 022;

// The most processes one task may run (SpawnRequest::envs).
inline constexpr size_t kMaxTaskProcesses = 64;

// How often a waiting shim checks its task's lease, nanoseconds.
inline constexpr int64_t kShimTickNs = 100'000'000;

// Starts the shim and task and returns the shim's pid once the task has
// exec'd. The shim leads a new process group (pgid == pid) with the task in
// it. The task has stdin on /dev/null and stdout and stderr appended to
// log_path (its folder created if missing; the file given to run_as);
// default signal dispositions and an empty signal mask; no other file
// descriptor of the caller. Errors name the step that failed and the errno
// text; no process is left behind then. Thread-safe (the child only makes async-signal-safe calls). Setting
// run_as needs the privilege to (CAP_SETUID, CAP_SETGID, CAP_CHOWN).
absl::StatusOr<pid_t> SpawnProcess(const SpawnRequest& request);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_SPAWN_H_
