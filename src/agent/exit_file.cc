#include "agent/exit_file.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/task_file.h"
#include "core/to_absl.h"

namespace tiresias {

absl::StatusOr<RecordedExit> ParseExitFile(std::string_view text) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(ToAbsl(text),
                     absl::ByAnyChar(" \n"), absl::SkipEmpty());
  int value = 0;
  int64_t unix_ns = 0;
  if ((parts.size() != 3 && (parts.size() != 4 || parts[3] != "fenced")) ||
      (parts[0] != "exit" && parts[0] != "signal") ||
      !absl::SimpleAtoi(parts[1], &value) || value < 0 ||
      !absl::SimpleAtoi(parts[2], &unix_ns) || unix_ns < 0) {
    return absl::InvalidArgumentError(
        "expected \"exit <code> <unix ns>\" or \"signal <number> <unix "
        "ns>\", optionally followed by \"fenced\"");
  }
  RecordedExit exit;
  exit.fenced = parts.size() == 4;
  if (parts[0] == "exit") {
    exit.exit_code = value;
  } else {
    exit.signal = value;
  }
  exit.end_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(unix_ns)));
  return exit;
}

absl::StatusOr<std::optional<RecordedExit>> ReadExitFile(
    const std::string& path) {
  absl::StatusOr<std::optional<std::string>> text =
      ReadTaskFile(path, kMaxExitFileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("exit file ", text.status().message()));
  }
  if (!text->has_value()) return std::nullopt;
  absl::StatusOr<RecordedExit> exit = ParseExitFile(**text);
  if (!exit.ok()) {
    return absl::DataLossError(
        absl::StrCat("exit file ", path, ": ", exit.status().message()));
  }
  return *exit;
}

}  // namespace tiresias
