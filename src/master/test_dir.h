// Test-only: a fresh temporary directory per test, for real SQLite files.
#ifndef TIRESIAS_MASTER_TEST_DIR_H_
#define TIRESIAS_MASTER_TEST_DIR_H_

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tiresias::master_testing {

// A directory unique to this process and test, removed with the object.
class TestDir {
 public:
  TestDir() {
    const testing::TestInfo* info =
        testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("tiresias_master_", ::getpid(), "_",
                         info->test_suite_name(), "_", info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  // A path in the directory (the file need not exist).
  std::string File(std::string_view name) const {
    return (path_ / name).string();
  }
  // Writes `contents` byte for byte to `name`; returns its path.
  std::string Write(std::string_view name, std::string_view contents) const {
    std::string file = File(name);
    std::ofstream out(file, std::ios::binary);
    out << contents;
    EXPECT_TRUE(out.good()) << file;
    return file;
  }

 private:
  std::filesystem::path path_;
};

// Runs SQL on the file directly, as a hand edit or another build of
// tiresias would; no store may hold the file.
inline void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_MASTER_TEST_DIR_H_
