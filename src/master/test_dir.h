// Test-only: a fresh temporary directory per test, for real SQLite files.
#ifndef TIRESIAS_MASTER_TEST_DIR_H_
#define TIRESIAS_MASTER_TEST_DIR_H_

#include <sqlite3.h>

#include <string>

#include "core/testing/test_dir.h"
#include "gtest/gtest.h"

namespace tiresias::master_testing {

using TestDir = test_support::TestDir;

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
