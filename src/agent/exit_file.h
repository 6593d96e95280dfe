// The exit file the task shim writes when its task ends (see spawn.h): one
// line, "exit <code> <unix ns>" or "signal <number> <unix ns>", followed by
// " fenced" if the shim stopped the task because its lease lapsed. It is
// how an agent that restarted while a task ran learns how the task ended,
// and how any agent learns that a task was fenced.
#ifndef TIRESIAS_AGENT_EXIT_FILE_H_
#define TIRESIAS_AGENT_EXIT_FILE_H_

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias {

struct RecordedExit {
  std::optional<int> exit_code;  // set if the task exited
  std::optional<int> signal;     // set if a signal killed it
  std::chrono::system_clock::time_point end_time;
  bool fenced = false;  // the shim stopped it: its lease lapsed
};

// The exit recorded in `text`; InvalidArgument saying what was expected.
absl::StatusOr<RecordedExit> ParseExitFile(std::string_view text);

// Most bytes an exit file holds: the shim writes one line of at most 96.
inline constexpr size_t kMaxExitFileBytes = 256;

// The exit recorded at `path`; nullopt if there is no file (the task still
// runs, or the shim was SIGKILLed with it). Read as a file a task may have
// written (task_file.h): a symbolic link, anything but a regular file, or a
// file over kMaxExitFileBytes is refused unread. Errors name the file.
absl::StatusOr<std::optional<RecordedExit>> ReadExitFile(
    const std::string& path);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_EXIT_FILE_H_
