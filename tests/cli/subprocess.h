// Runs a program as a real child process and collects what it printed, for
// end-to-end tests of the `tiresias` command.
#ifndef TIRESIAS_TESTS_CLI_SUBPROCESS_H_
#define TIRESIAS_TESTS_CLI_SUBPROCESS_H_

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace tiresias::cli_test {

struct ProcessResult {
  // The exit status when the process exited normally; -1 when it failed to
  // start, was killed by a signal or ran past its timeout.
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, if any
  bool timed_out = false;
  std::string out;  // everything it wrote to stdout
  std::string err;  // everything it wrote to stderr
};

struct ProcessOptions {
  // Working directory of the child; empty keeps ours.
  std::filesystem::path cwd;
  // The child and everything it started (its process group) are killed
  // with SIGKILL when it runs longer than this.
  std::chrono::seconds timeout{60};
};

// Runs argv[0] (a path, not looked up in $PATH) with `argv`, stdin from
// /dev/null, stdout and stderr captured separately. Blocks until it ends.
// Not thread-safe with respect to other forks in the same process.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const ProcessOptions& options = {});

}  // namespace tiresias::cli_test

#endif  // TIRESIAS_TESTS_CLI_SUBPROCESS_H_
