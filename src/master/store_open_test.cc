// Opening state files that are not what they should be: each gets a clear,
// named error and the process keeps going.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::RawSql;
using master_testing::TestDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;


// A state file with one submitted job, closed.
std::string MakeStateFile(const TestDir& dir) {
  std::string path = dir.File("state.db");
  auto store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  JobRequest request;
  request.command = {"true"};
  EXPECT_TRUE((*store)->CreateJob(request, Seconds{1}).ok());
  return path;
}

TEST(SqliteStoreOpenTest, GarbageFileIsNotAStateFile) {
  TestDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is not a database at all\n";
  std::string path = dir.Write("state.db", text);
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            absl::StrCat(path, ": not a Tiresias state file: file is not a "
                               "database"));
}

TEST(SqliteStoreOpenTest, AnotherProgramsDatabaseIsNotAStateFile) {
  TestDir dir;
  std::string path = dir.File("other.db");
  RawSql(path, "CREATE TABLE recipes (name TEXT)");
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()),
              StartsWith(absl::StrCat(path, ": not a Tiresias state file: a "
                                            "SQLite database of another")));
}

TEST(SqliteStoreOpenTest, MissingDirectoryNamesThePath) {
  TestDir dir;
  std::string path = dir.File("no/such/dir/state.db");
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(std::string(store.status().message()), StartsWith(path + ": cannot open"));
}

TEST(SqliteStoreOpenTest, NewerSchemaVersionIsRefused) {
  TestDir dir;
  std::string path = MakeStateFile(dir);
  RawSql(path, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            absl::StrCat(path, ": schema version 2 is newer than this build "
                               "of tiresias understands (1); use a newer "
                               "tiresias"));

  RawSql(path, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'");
  EXPECT_THAT(std::string(SqliteStore::Open(path).status().message()),
              HasSubstr("no valid schema_version"));

  // Back to the current version: the file opens and the job is still there.
  RawSql(path, "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE((*reopened)->GetJob(1).ok());
}

TEST(SqliteStoreOpenTest, SecondStoreOnTheSameFileIsRefusedWhileHeld) {
  TestDir dir;
  std::string path = dir.File("state.db");
  auto first = SqliteStore::Open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = SqliteStore::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              StartsWith(path + ": in use by another process"));
  first->reset();
  EXPECT_TRUE(SqliteStore::Open(path).ok());
}

TEST(SqliteStoreOpenTest, MalformedRowsGetErrorsNamingTheColumn) {
  TestDir dir;
  std::string path = MakeStateFile(dir);
  RawSql(path, "UPDATE jobs SET state = 'exploded' WHERE id = 1");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->GetJob(1);
    EXPECT_EQ(job.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(job.status().message()),
                StartsWith(path + ": job 1: column 'state': job state: "));
    EXPECT_FALSE((*store)->ListJobs().ok());
  }
  RawSql(path,
         "UPDATE jobs SET state = 'pending', command = '{\"not\": \"a list\"}'");
  {
    auto store = SqliteStore::Open(path);
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path + ": job 1: column 'command': not a JSON array");
  }
  RawSql(path, "UPDATE jobs SET command = '[]', queue = 'high'");
  {
    auto store = SqliteStore::Open(path);
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path + ": job 1: column 'queue': unexpected text value");
  }
}

}  // namespace
}  // namespace tiresias
