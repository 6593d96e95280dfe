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
