#include "agent/proc_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

template <typename T>
bool ParseNumber(absl::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

class ProcFsTable final : public ProcessTable {
 public:
  absl::StatusOr<std::optional<ProcStat>> Stat(pid_t pid) override {
    if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat("pid ", pid));
    const std::string path = absl::StrCat("/proc/", pid, "/stat");
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ESRCH) return std::nullopt;
      return absl::UnavailableError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    }
    // One read: the kernel produces the whole line at once (< 1 KiB).
    char buffer[4096];
    ssize_t n;
    do {
      n = read(fd, buffer, sizeof(buffer));
    } while (n < 0 && errno == EINTR);
    const int read_errno = errno;
    close(fd);
    // The process may vanish between open and read.
    if (n <= 0) {
      if (n == 0 || read_errno == ESRCH) return std::nullopt;
      return absl::UnavailableError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(read_errno)));
    }
    const std::string text(buffer, static_cast<size_t>(n));
    absl::StatusOr<ProcStat> stat = ParseProcStat(text);
    if (!stat.ok()) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", stat.status().message()));
    }
    return *stat;
  }
};

}  // namespace

absl::StatusOr<ProcStat> ParseProcStat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) {
    return absl::InvalidArgumentError("no ')' closing the command name");
  }
  std::vector<absl::string_view> fields = absl::StrSplit(
      ToAbsl(text).substr(close + 1), ' ',
      absl::SkipEmpty());
  // fields[0] is field 3 (state); field N is fields[N - 3].
  constexpr size_t kPgrp = 5 - 3, kStartTime = 22 - 3;
  if (fields.size() <= kStartTime) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected at least 22 fields, got ", fields.size() + 2));
  }
  ProcStat stat;
  if (fields[0].size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 3 (state): expected one letter, got '", fields[0], "'"));
  }
  stat.state = fields[0][0];
  if (!ParseNumber(fields[kPgrp], stat.pgid)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 5 (pgrp): expected an integer, got '", fields[kPgrp], "'"));
  }
  absl::string_view start = fields[kStartTime];
  if (!start.empty() && start.back() == '\n') start.remove_suffix(1);
  if (!ParseNumber(start, stat.start_ticks)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 22 (starttime): expected an integer, got '", start, "'"));
  }
  return stat;
}

ProcessTable* RealProcessTable() {
  static ProcFsTable* const table = new ProcFsTable();
  return table;
}

}  // namespace tiresias
