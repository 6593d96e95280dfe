// Test-only helpers for the agent's tests: a fresh temporary folder per
// test, small file helpers, and waiting for a condition with a deadline.
#ifndef TIRESIAS_AGENT_AGENT_TESTING_H_
#define TIRESIAS_AGENT_AGENT_TESTING_H_

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "gtest/gtest.h"

namespace tiresias::agent_testing {

// A folder unique to this test, removed with the object.
class TestDir {
 public:
  TestDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tiresias_agent_XXXXXX")
            .string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    path_ = pattern;
  }
  ~TestDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A path in the folder (the file need not exist).
  std::string File(std::string_view name) const {
    return (path_ / name).string();
  }
  // Writes `contents` to `name` (mode `mode`); returns its path.
  std::string Write(std::string_view name, std::string_view contents,
                    mode_t mode = 0644) const {
    std::string file = File(name);
    std::filesystem::create_directories(
        std::filesystem::path(file).parent_path());
    {
      std::ofstream out(file, std::ios::binary);
      out << contents;
      EXPECT_TRUE(out.good()) << file;
    }
    chmod(file.c_str(), mode);
    return file;
  }

 private:
  std::filesystem::path path_;
};

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
