// Runs a helper program the agent needs (nvidia-smi, podman) and takes
// what it printed, killing it if it does not answer in time.
#ifndef TIRESIAS_AGENT_RUN_CAPTURE_H_
#define TIRESIAS_AGENT_RUN_CAPTURE_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

struct CommandResult {
  int exit_code = 0;   // -1 when killed by a signal
  std::string output;  // stdout (and stderr, when asked for)
};

// Runs `argv` (argv[0] looked up in PATH) with stdin on /dev/null and
// stdout captured; stderr goes with it when `with_stderr`, else to
// /dev/null. Killed (SIGKILL) after `timeout`: Unavailable, "<argv[0]> did
// not answer within N ms". NotFound if it cannot be run. Thread-safe.
absl::StatusOr<CommandResult> RunCapture(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout,
                                         bool with_stderr = false);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_RUN_CAPTURE_H_
