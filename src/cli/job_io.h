// The caller's terminal joined to one task of a running job through the
// master (Tiresias.JobIo): what `tiresias run` and `tiresias attach` share.
// job_io.cc.
#ifndef TIRESIAS_CLI_JOB_IO_H_
#define TIRESIAS_CLI_JOB_IO_H_

#include <optional>

#include "cli/cluster_client.h"
#include "proto/tiresias.pb.h"

namespace tiresias::cli {

// The key that detaches from a task's terminal: Ctrl-] (as telnet's).
inline constexpr char kDetachKey = 0x1d;

struct IoResult {
  grpc::Status status;           // the call's: not OK if refused
  bool opened = false;           // the task took us on
  std::optional<v1::IoEnd> end;  // its last word, if it came
  bool detached = false;         // the user left (Ctrl-], or a signal)
};

// Joins this process's stdin (when `input`), stdout and stderr to the task
// `open` names until the task's output ends or the user detaches. With a
// task terminal and a local one, the local one is raw meanwhile (restored
// on every way out), its size follows SIGWINCH, and Ctrl-] detaches;
// without, SIGINT, SIGQUIT and SIGTERM are sent to the task (a second
// SIGINT within a second detaches). Notices go to stderr.
IoResult JoinTask(MasterClient& client, v1::IoOpen open, bool input);

// The exit code a shell gets for a task's end: its code, 128 + its
// signal; nullopt when not known.
std::optional<int> TaskExitCode(const v1::IoEnd& end);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_JOB_IO_H_
