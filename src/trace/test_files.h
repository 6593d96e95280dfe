// Test-only helpers for the trace readers' tests: scratch files in a fresh
// directory per test, and the shipped data files.
#ifndef TIRESIAS_TRACE_TEST_FILES_H_
#define TIRESIAS_TRACE_TEST_FILES_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tiresias::trace_testing {

// A directory unique to this process and test, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    const testing::TestInfo* info =
        testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("tiresias_trace_", ::getpid(), "_",
                         info->test_suite_name(), "_", info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // Writes `contents` byte for byte to `name` here; returns its path.
  std::string Write(std::string_view name, std::string_view contents) const {
    std::string file = (path_ / name).string();
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good()) << file;
    return file;
  }
  // A path here that does not exist.
  std::string Missing(std::string_view name) const {
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

// A shipped data file: "data/<name>" when run from the repository root (as
// ctest does), else found through the source directory.
inline std::string DataPath(std::string_view name) {
  std::string relative = "data/" + std::string(name);
  if (std::filesystem::exists(relative)) return relative;
  return absl::StrCat(TIRESIAS_SOURCE_DIR, "/", relative);
}

}  // namespace tiresias::trace_testing

#endif  // TIRESIAS_TRACE_TEST_FILES_H_
