// Test-only: a fresh temporary folder per test, removed with the object,
// with small helpers to name and write files in it. Shared by every
// component's tests (trace, master, agent).
#ifndef TIRESIAS_CORE_TESTING_TEST_DIR_H_
#define TIRESIAS_CORE_TESTING_TEST_DIR_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace tiresias::test_support {

class TestDir {
 public:
  // `prefix` names the folder (prefix_XXXXXX under the system temp dir).
  explicit TestDir(std::string_view prefix = "tiresias") {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           (std::string(prefix) + "_XXXXXX"))
                              .string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr) << pattern;
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
  // Writes `contents` byte for byte to `name` (creating parent folders,
  // mode `mode`); returns its path.
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

}  // namespace tiresias::test_support

#endif  // TIRESIAS_CORE_TESTING_TEST_DIR_H_
