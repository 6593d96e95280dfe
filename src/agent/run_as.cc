#include "agent/run_as.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/file_store.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

constexpr std::string_view kEveryone = "*";

std::string Quote(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

// getpwnam_r / getpwuid_r with a buffer that grows until the entry fits.
// `lookup` is one of them bound to its key. nullopt: no such account.
template <typename Lookup>
absl::StatusOr<std::optional<passwd>> GetPasswd(Lookup lookup,
                                                std::vector<char>& buffer) {
  long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  buffer.resize(hint > 0 ? static_cast<size_t>(hint) : 16384);
  for (;;) {
    passwd entry = {};
    passwd* found = nullptr;
    const int rc = lookup(&entry, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE && buffer.size() < (1u << 24)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (rc != 0) {
      return absl::UnavailableError(
          absl::StrCat("the user database: ", std::strerror(rc)));
    }
    if (found == nullptr) return std::nullopt;
    return entry;
  }
}

// Every group `name` belongs to, `gid` (its primary group) included.
absl::StatusOr<std::vector<gid_t>> GroupsOf(const char* name, gid_t gid) {
  int count = 32;
  std::vector<gid_t> groups;
  for (int tries = 0; tries < 8; ++tries) {
    groups.resize(static_cast<size_t>(count));
    int n = count;
    if (getgrouplist(name, gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<size_t>(n));
      return groups;
    }
    count = std::max(n, count * 2);  // n: how many there are
  }
  return absl::UnavailableError(
      absl::StrCat("the groups of account ", Quote(name), ": too many"));
}

}  // namespace

absl::StatusOr<UserMap> UserMap::Parse(std::string_view text,
                                       std::string_view file) {
  UserMap map;
  map.file_ = std::string(file);
  int number = 0;
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n')) {
    ++number;
    const std::string where = absl::StrCat(ToAbsl(file), ":", number, ": ");
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r\f\v"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected two fields, \"OWNER ACCOUNT\" (OWNER may be \"*\"),"
                 " got ",
          fields.size(), ": ", Quote(absl::StripAsciiWhitespace(line))));
    }
    const std::string owner(fields[0]);
    const std::string account(fields[1]);
    if (account == kEveryone) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected an account name as the second field, got \"*\" "
                 "(only the owner may be \"*\")"));
    }
    const Entry entry{account, number};
    if (owner == kEveryone) {
      if (map.fallback_) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "expected one \"*\" line, got another (line ",
            map.fallback_->line, ")"));
      }
      map.fallback_ = entry;
    } else if (auto [it, added] = map.accounts_.emplace(owner, entry);
               !added) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected each owner once, got ", Quote(owner),
          " again (line ", it->second.line, ")"));
    }
  }
  return map;
}

absl::StatusOr<UserMap> UserMap::Load(const std::string& path) {
  absl::StatusOr<std::optional<std::string>> text =
      RealFileStore()->Read(path);
  if (!text.ok()) return text.status();
  if (!text->has_value()) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  return Parse(**text, path);
}

std::string UserMap::AccountFor(std::string_view owner) const {
  if (auto it = accounts_.find(owner); it != accounts_.end()) {
    return it->second.account;
  }
  return fallback_ ? fallback_->account : std::string(owner);
}

std::string UserMap::Source(std::string_view owner) const {
  auto it = accounts_.find(owner);
  const Entry* entry = it != accounts_.end() ? &it->second
                       : fallback_          ? &*fallback_
                                            : nullptr;
  return entry == nullptr ? "" : absl::StrCat(file_, ":", entry->line);
}

namespace {

// The account of a passwd entry, with its groups.
absl::StatusOr<TaskAccount> AccountOf(const passwd& pw) {
  absl::StatusOr<std::vector<gid_t>> groups = GroupsOf(pw.pw_name, pw.pw_gid);
  if (!groups.ok()) return groups.status();
  TaskAccount account;
  account.name = pw.pw_name;
  account.ids = RunAs{pw.pw_uid, pw.pw_gid, *std::move(groups)};
  account.home = pw.pw_dir != nullptr ? pw.pw_dir : "";
  // An empty shell field means /bin/sh (passwd(5)).
  account.shell =
      pw.pw_shell != nullptr && *pw.pw_shell != '\0' ? pw.pw_shell : "/bin/sh";
  return account;
}

}  // namespace

absl::StatusOr<TaskAccount> LookUpAccount(const std::string& name) {
  std::vector<char> buffer;
  absl::StatusOr<std::optional<passwd>> entry = GetPasswd(
      [&](passwd* e, char* buf, size_t size, passwd** found) {
        return getpwnam_r(name.c_str(), e, buf, size, found);
      },
      buffer);
  if (!entry.ok()) return entry.status();
  if (!entry->has_value()) {
    return absl::NotFoundError(
        absl::StrCat("no Unix account ", Quote(name), " on this node"));
  }
  return AccountOf(**entry);
}

absl::StatusOr<TaskAccount> LookUpAccountByUid(uid_t uid) {
  std::vector<char> buffer;
  absl::StatusOr<std::optional<passwd>> entry = GetPasswd(
      [&](passwd* e, char* buf, size_t size, passwd** found) {
        return getpwuid_r(uid, e, buf, size, found);
      },
      buffer);
  if (!entry.ok()) return entry.status();
  if (!entry->has_value()) {
    return absl::NotFoundError(
        absl::StrCat("no Unix account with uid ", uid, " on this node"));
  }
  return AccountOf(**entry);
}

absl::StatusOr<std::optional<TaskAccount>> ResolveTaskAccount(
    std::string_view owner, const RunAsPolicy& policy) {
  if (policy.agent_uid.value_or(geteuid()) != 0) return std::nullopt;
  if (owner.empty()) {
    return absl::FailedPreconditionError(
        "the job has no owner, and an agent running as root runs a task "
        "only as its owner's Unix account");
  }
  const std::string account_name = policy.user_map.AccountFor(owner);
  const std::string source = policy.user_map.Source(owner);
  const std::string who = absl::StrCat(
      "owner ", Quote(ToAbsl(owner)),
      source.empty() ? ""
                     : absl::StrCat(" (account ", Quote(account_name),
                                    " per ", source, ")"));
  absl::StatusOr<TaskAccount> account = LookUpAccount(account_name);
  if (!account.ok()) {
    return absl::Status(account.status().code(),
                        absl::StrCat(who, ": ", account.status().message()));
  }
  if (account->ids.uid == 0 && !policy.allow_root_tasks) {
    return absl::PermissionDeniedError(absl::StrCat(
        who, ": account ", Quote(account->name),
        " is root (uid 0); the agent runs root tasks only with "
        "--allow-root-tasks"));
  }
  return *std::move(account);
}

std::string DescribeRunAs(const RunAsPolicy& policy) {
  const uid_t uid = policy.agent_uid.value_or(geteuid());
  if (uid != 0) {
    std::vector<char> buffer;
    absl::StatusOr<std::optional<passwd>> entry = GetPasswd(
        [&](passwd* e, char* buf, size_t size, passwd** found) {
          return getpwuid_r(uid, e, buf, size, found);
        },
        buffer);
    const std::string name = entry.ok() && entry->has_value()
                                 ? (*entry)->pw_name
                                 : absl::StrCat("uid ", uid);
    return absl::StrCat("not running as root: tasks run as ", name, " (uid ",
                        uid, ")");
  }
  return absl::StrCat(
      "running as root: tasks run as their owner's Unix account",
      policy.user_map.file().empty()
          ? ""
          : absl::StrCat(" (user map ", policy.user_map.file(), ")"),
      policy.allow_root_tasks ? "; root tasks allowed (--allow-root-tasks)"
                              : "; root tasks refused");
}

}  // namespace tiresias
