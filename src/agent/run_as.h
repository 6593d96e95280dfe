// Which Unix account a task runs as. An agent running as root must not run
// a job's command as root: it runs it as the account of the job's owner
// (StartTask.owner, the user the master authenticated), or the account the
// operator's user map names for that owner. The account is resolved here,
// in the agent, before it forks (getpwnam_r and getgrouplist are not
// async-signal-safe); the task's process switches to it (spawn.h).
//
// The user map file (`tiresias agent --user-map FILE`), one pair a line:
//   # owner   account
//   alice     alice-gpu
//   ci-bot    nobody
//   *         nobody      # every owner not listed above
// Blank lines and '#' comments are ignored. Without a line for an owner (and
// without '*'), the owner's own name is the account.
#ifndef TIRESIAS_AGENT_RUN_AS_H_
#define TIRESIAS_AGENT_RUN_AS_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/spawn.h"

namespace tiresias {

// Owner name -> account name, as the operator's file says.
class UserMap {
 public:
  UserMap() = default;  // empty: every owner runs as their own name

  // Parses the file's text; `file` names it in errors, which say
  // "FILE:LINE: " and what was expected (two fields, an owner mapped once,
  // an account name rather than '*').
  static absl::StatusOr<UserMap> Parse(std::string_view text,
                                       std::string_view file);
  // Reads and parses `path`; an unreadable file is an error naming it.
  static absl::StatusOr<UserMap> Load(const std::string& path);

  // The account name for `owner`: its own line, else the '*' line, else
  // the owner's own name.
  std::string AccountFor(std::string_view owner) const;
  // "FILE:LINE" of the line that maps `owner` (for messages); empty when
  // no line does.
  std::string Source(std::string_view owner) const;
  const std::string& file() const { return file_; }  // empty: no file

 private:
  struct Entry {
    std::string account;
    int line = 0;
  };
  std::string file_;
  std::map<std::string, Entry, std::less<>> accounts_;
  std::optional<Entry> fallback_;  // the '*' line
};

// What the agent knows to decide whom a task runs as. Constant after the
// agent starts.
struct RunAsPolicy {
  UserMap user_map;
  bool allow_root_tasks = false;  // --allow-root-tasks
  // The agent's effective uid; nullopt: geteuid(). Tests set it to play an
  // agent that is not root from a test process that is.
  std::optional<uid_t> agent_uid;
};

// A resolved Unix account.
struct TaskAccount {
  std::string name;
  RunAs ids;  // uid, primary gid, and every group it belongs to
  std::string home;
  std::string shell;  // its login shell; "/bin/sh" when the entry has none
};

// The account named `name` (getpwnam_r, getgrouplist). NotFound if there is
// none. Thread-safe.
absl::StatusOr<TaskAccount> LookUpAccount(const std::string& name);

// The account of `uid` (getpwuid_r, getgrouplist): whom the tasks of an
// agent that does not run as root run as. NotFound if the uid has no
// passwd entry (a container's arbitrary uid). Thread-safe.
absl::StatusOr<TaskAccount> LookUpAccountByUid(uid_t uid);

// The account a task of `owner` runs as under `policy`; nullopt when the
// agent is not root: the task runs as the agent's own user, whoever owns
// it. Refused (the task must not start; the message says why, naming the
// owner and the account): an empty owner (FailedPrecondition), an account
// that does not exist (NotFound), an account with uid 0 without
// allow_root_tasks (PermissionDenied). Thread-safe.
absl::StatusOr<std::optional<TaskAccount>> ResolveTaskAccount(
    std::string_view owner, const RunAsPolicy& policy);

// The agent's start line about whom its tasks run as, e.g. "not running as
// root: tasks run as ci (uid 1000)" or "running as root: tasks run as
// their owners' accounts (user map /etc/tiresias/users; root tasks
// refused)".
std::string DescribeRunAs(const RunAsPolicy& policy);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_RUN_AS_H_
