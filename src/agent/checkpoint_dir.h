// Where a task checkpoints on this node: the agent's part of
// StartTask.checkpoint_dir and checkpoint_base (tiresias.proto).
//
// A job that names no checkpoint dir gets the master's default, one folder
// per owner keyed by the cluster id (so a fresh cluster never resumes from
// an old one's job of the same id):
//   "~/.tiresias/checkpoints/<cluster>/job-N": "~" is the task's account's
//     home when it is usable (an absolute, existing folder the account
//     owns); otherwise a stand-in made here, <fallback>/<account> (0700,
//     owned by the account; <fallback> is the agent's
//     <state dir>/checkpoints, 0711, or `tiresias up`'s shared one).
//   "<base>/<owner>/<cluster>/job-N" with checkpoint_base <base> (the
//     master's --checkpoint-base): <base>/<owner> is made here (0700,
//     owned by the account); an existing one must be a folder, not a
//     link, that the account owns, so that nobody can plant one for
//     another user.
// What lies below is made by the task's own process, as its account, 0700
// (spawn.h). A leading "~/" of a user's own checkpoint dir is expanded the
// same way; any other dir is used as given.
#ifndef TIRESIAS_AGENT_CHECKPOINT_DIR_H_
#define TIRESIAS_AGENT_CHECKPOINT_DIR_H_

#include <string>

#include "absl/status/statusor.h"
#include "agent/run_as.h"

namespace tiresias {

// The checkpoint dir of a task running as `account` (null: as the agent's
// own user), made absolute as above, with the per-account folder it needs
// made. `fallback` is the folder for accounts without a usable home (empty:
// such a task is refused). Errors say what is wrong with which folder
// (FailedPrecondition, InvalidArgument for a dir that does not lie under
// `base` as it must).
absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir,
                                                 const std::string& base,
                                                 const TaskAccount* account,
                                                 const std::string& fallback);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_CHECKPOINT_DIR_H_
