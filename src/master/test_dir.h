// Test-only: a fresh temporary directory per test, for real SQLite files.
#ifndef TIRESIAS_MASTER_TEST_DIR_H_
#define TIRESIAS_MASTER_TEST_DIR_H_

#include <sqlite3.h>

#include <string>

#include "core/testing/test_dir.h"
#include "gtest/gtest.h"
#include "master/store.h"

namespace tiresias::master_testing {

using TestDir = test_support::TestDir;

// alice's `python3 train.py` on `gpus` GPUs, LR=0.1.
inline JobRequest AliceTrainRequest(std::string name, int gpus) {
  JobRequest r;
  r.name = std::move(name);
  r.user = "alice";
  r.num_gpus = gpus;
  r.command = {"/usr/bin/python3", "train.py"};
  r.env = {{"LR", "0.1"}};
  return r;
}

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

// The first column of the first row of `sql` run on the file directly,
// as bytes (TEXT or BLOB); "" if none.
inline std::string QueryValue(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const void* bytes = sqlite3_column_blob(stmt, 0);
      if (bytes != nullptr) {
        value.assign(static_cast<const char*>(bytes),
                     sqlite3_column_bytes(stmt, 0));
      }
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_MASTER_TEST_DIR_H_
