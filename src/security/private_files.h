// Files only their owner can read. What the daemons (master, agent,
// `tiresias up`) keep on disk holds secrets: every job's environment in
// state.db, tokens, private keys, task logs. So a daemon makes everything
// it creates its own alone (umask 077, explicit modes), and closes what an
// older build left open in its state dir when it starts.
//
//   security::MakeFilesPrivateByDefault();  // first thing a daemon does
//   ASSIGN_OR_RETURN(PrivateDir dir, security::EnsurePrivateDir(state, 0700));
//   if (dir.tightened) log(...);
#ifndef TIRESIAS_SECURITY_PRIVATE_FILES_H_
#define TIRESIAS_SECURITY_PRIVATE_FILES_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias::security {

// Sets the process's umask to 077: from now on whatever it creates is its
// owner's alone unless given a mode explicitly afterwards (fchmod, chmod).
// For daemons, before they create anything; a task they start sets its
// own (spawn.h). Not thread-safe (the umask is the process's): call before
// starting threads.
void MakeFilesPrivateByDefault();

// What EnsurePrivateDir did.
struct PrivateDir {
  bool created = false;
  // Paths whose group or others' read or write permission was removed
  // (the folder itself included), in walk order.
  std::vector<std::string> tightened;
};

// Makes folder `dir` (with its missing parents, 0700) with `mode`, or sets
// an existing one to `mode` if it allows group or others more than `mode`
// does. Then, below it, removes group and others' read and write from
// every file and folder (execute stays: a folder others may only traverse,
// like an agent's profiles, keeps working), without following links and
// without entering (or changing) an entry whose name is in `keep` (a
// public folder, users' own checkpoints). Errors name the path.
absl::StatusOr<PrivateDir> EnsurePrivateDir(
    const std::string& dir, mode_t mode,
    const std::vector<std::string>& keep = {});

// The first folder on the way to `path` (made absolute; `path` itself
// included when it is a folder) that other users cannot traverse (no
// execute for others), or empty when they can reach it: for a daemon to
// warn that what it shares there (a public CA copy, users' fallback
// checkpoint folders) is out of their reach.
std::string FirstClosedFolder(const std::string& path);

// "tightened 3 paths that other users could read or write in DIR: A, B,
// C" (at most 5 named), for a daemon's log; empty if none was.
std::string DescribeTightened(const std::string& dir, const PrivateDir& done);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_PRIVATE_FILES_H_
