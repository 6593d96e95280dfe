#include "agent/checkpoint_dir.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tiresias {
namespace {

absl::Status Failed(const std::string& path, const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat("checkpoint folder ", path, ": ", what));
}

// The agent's own account, for tasks that run as the agent's user.
absl::StatusOr<TaskAccount> OwnAccount() {
  std::vector<char> buffer(16384);
  passwd entry = {};
  passwd* found = nullptr;
  const uid_t uid = geteuid();
  while (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) ==
             ERANGE &&
         buffer.size() < (1u << 24)) {
    buffer.resize(buffer.size() * 2);
  }
  TaskAccount account;
  account.ids.uid = uid;
  account.ids.gid = getegid();
  if (found == nullptr) {
    account.name = absl::StrCat(uid);
    return account;
  }
  account.name = entry.pw_name;
  account.home = entry.pw_dir != nullptr ? entry.pw_dir : "";
  return account;
}

bool UsableHome(const TaskAccount& account) {
  if (account.home.empty() || account.home[0] != '/') return false;
  struct stat st = {};
  return stat(account.home.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         st.st_uid == account.ids.uid;
}

// Makes `path` 0700 and owned by `account` if missing (its parent must
// exist); an existing one must be a folder, not a link, the account owns.
absl::Status MakeAccountFolder(const std::string& path,
                               const TaskAccount& account) {
  if (mkdir(path.c_str(), 0700) == 0) {
    const int fd =
        open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const bool given = fd >= 0 &&
                       fchown(fd, account.ids.uid, account.ids.gid) == 0 &&
                       fchmod(fd, 0700) == 0;
    const int error = errno;
    if (fd >= 0) close(fd);
    if (!given) {
      return Failed(
          path, absl::StrCat("cannot give it to account ", account.name, ": ",
                             std::strerror(error)));
    }
    return absl::OkStatus();
  }
  if (errno != EEXIST) {
    return Failed(path,
                  absl::StrCat("cannot create it: ", std::strerror(errno)));
  }
  struct stat st = {};
  if (lstat(path.c_str(), &st) != 0) {
    return Failed(path, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Failed(path, "not a folder (a link or a file is refused)");
  }
  if (st.st_uid != account.ids.uid) {
    return Failed(path,
                  absl::StrCat("owned by uid ", st.st_uid, ", not by account ",
                               account.name, " (uid ", account.ids.uid,
                               "); its owner or an admin must fix it"));
  }
  return absl::OkStatus();
}

// Makes `path` (a folder others may only traverse) if missing.
absl::Status MakeTraversable(const std::string& path) {
  if (mkdir(path.c_str(), 0711) == 0) {
    if (chmod(path.c_str(), 0711) != 0) {
      return Failed(path, std::strerror(errno));
    }
    return absl::OkStatus();
  }
  if (errno != EEXIST) {
    return Failed(path,
                  absl::StrCat("cannot create it: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ResolveCheckpointDir(const std::string& dir,
                                                 const std::string& base,
                                                 const TaskAccount* account,
                                                 const std::string& fallback) {
  const bool home = absl::StartsWith(dir, "~/");
  if (!home && base.empty()) return dir;
  TaskAccount own;
  if (account == nullptr) {
    absl::StatusOr<TaskAccount> found = OwnAccount();
    if (!found.ok()) return found.status();
    own = *std::move(found);
    account = &own;
  }
  if (home) {
    const std::string rest = dir.substr(1);  // "/..."
    if (UsableHome(*account)) return account->home + rest;
    if (fallback.empty()) {
      return Failed(
          dir, absl::StrCat("account ", account->name, " has no usable home (",
                            account->home, ")"));
    }
    // The stand-in for the home: this node's, private to the account.
    if (absl::Status made = MakeTraversable(fallback); !made.ok()) {
      return made;
    }
    // Whoever could write in it could swap the accounts' folders.
    struct stat st = {};
    if (lstat(fallback.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
      return Failed(fallback,
                    absl::StrCat("expected a folder of uid ", geteuid(),
                                 " that no one else may write in"));
    }
    const std::string stand_in = absl::StrCat(fallback, "/", account->name);
    if (absl::Status made = MakeAccountFolder(stand_in, *account); !made.ok()) {
      return made;
    }
    return stand_in + rest;
  }
  // Under the master's base: <base>/<owner>/...
  const std::string prefix = absl::StrCat(base, "/");
  const std::string name =
      absl::StartsWith(dir, prefix)
          ? dir.substr(prefix.size(),
                       dir.find('/', prefix.size()) - prefix.size())
          : "";
  bool dotdot = false;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    dotdot = dotdot || part == "..";
  }
  if (base[0] != '/' || name.empty() || name == "." || dotdot ||
      dir.find('/', prefix.size()) == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint dir ", dir, ": expected <checkpoint base ",
                     base, ">/<owner>/..., without '..'"));
  }
  if (absl::Status made = MakeTraversable(base); !made.ok()) return made;
  if (absl::Status made = MakeAccountFolder(prefix + name, *account);
      !made.ok()) {
    return made;
  }
  return dir;
}

}  // namespace tiresias
