// Test-only helpers for the agent's tests: a fresh temporary folder per
// test, small file helpers, and waiting for a condition with a deadline.
#ifndef TIRESIAS_AGENT_AGENT_TESTING_H_
#define TIRESIAS_AGENT_AGENT_TESTING_H_

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "agent/launcher.h"
#include "agent/proc_table.h"
#include "core/testing/test_dir.h"
#include "gtest/gtest.h"

namespace tiresias::agent_testing {

using TestDir = test_support::TestDir;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rank 1 of a 2-rank launch (job 42, attempt 3, restarted twice) on GPUs 1
// and 3, rank 0 at 10.0.0.5:29500. Tests add argv and paths.
inline TaskSpec SampleTaskSpec() {
  TaskSpec spec;
  spec.job_id = 42;
  spec.attempt = 3;
  spec.rank = 1;
  spec.world_size = 2;
  spec.local_rank = 0;
  spec.gpus = {1, 3};
  spec.restart_count = 2;
  spec.master_addr = "10.0.0.5";
  spec.master_port = 29500;
  return spec;
}

// True if the process is gone or a zombie.
inline bool Gone(pid_t pid) {
  absl::StatusOr<std::optional<ProcStat>> stat = RealProcessTable()->Stat(pid);
  return stat.ok() && (!stat->has_value() || (*stat)->exited());
}

// Polls `condition` every 5 ms until it holds or `timeout` passes.
template <typename Condition>
bool WaitUntil(Condition condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tiresias::agent_testing

#endif  // TIRESIAS_AGENT_AGENT_TESTING_H_
