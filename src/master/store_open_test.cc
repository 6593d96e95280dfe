// Opening state files that are not what they should be: each gets a clear,
// named error and the process keeps going.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
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
  const int current = SqliteStore::kSchemaVersion;
  const int next = current + 1;
  RawSql(path, absl::StrCat("UPDATE meta SET value = '", next,
                            "' WHERE key = 'schema_version'"));
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            absl::StrCat(path, ": schema version ", next,
                         " is newer than this build of tiresias understands (",
                         current, "); use a newer tiresias"));

  RawSql(path, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'");
  EXPECT_THAT(std::string(SqliteStore::Open(path).status().message()),
              HasSubstr("no valid schema_version"));

  // Back to the current version: the file opens and the job is still there.
  RawSql(path, absl::StrCat("UPDATE meta SET value = '", current,
                            "' WHERE key = 'schema_version'"));
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE((*reopened)->GetJob(1).ok());
}

// The meta table's schema_version of the file at `path`, read directly.
std::string SchemaVersionOf(const std::string& path) {
  sqlite3* db = nullptr;
  std::string version;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT value FROM meta WHERE key = "
                           "'schema_version'",
                           -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      version = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return version;
}

// A state file as the first release (schema version 1) wrote it, spelled out
// here rather than taken from store_rows.h, so that this test keeps checking
// files that exist in the field whatever the code's schema becomes.
TEST(SqliteStoreOpenTest, VersionOneFileIsUpgradedInPlace) {
  TestDir dir;
  std::string path = dir.File("state.db");
  RawSql(path, R"sql(
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE jobs (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      name TEXT NOT NULL, user TEXT NOT NULL, gpus INTEGER NOT NULL,
      command TEXT NOT NULL, env TEXT NOT NULL,
      checkpoint_dir TEXT NOT NULL, model TEXT NOT NULL,
      state TEXT NOT NULL, queue INTEGER NOT NULL,
      attained_gpu_seconds REAL NOT NULL, executed_seconds REAL NOT NULL,
      total_executed_seconds REAL NOT NULL,
      submit_time REAL NOT NULL, first_start_time REAL, end_time REAL,
      last_stop_time REAL NOT NULL,
      preemptions INTEGER NOT NULL, promotions INTEGER NOT NULL,
      restarts INTEGER NOT NULL, attempt INTEGER NOT NULL,
      nodes TEXT NOT NULL, exit_code INTEGER);
    CREATE INDEX jobs_by_state ON jobs (state, id);
    CREATE TABLE events (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      job_id INTEGER NOT NULL REFERENCES jobs (id),
      time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
    CREATE INDEX events_by_job ON events (job_id, sequence);
    CREATE TABLE nodes (
      id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
      address TEXT NOT NULL, gpus INTEGER NOT NULL, state TEXT NOT NULL,
      last_heartbeat REAL NOT NULL);
    PRAGMA application_id = 1414091333;
    INSERT INTO meta VALUES ('schema_version', '1');
    INSERT INTO jobs VALUES (1, 'old', 'bob', 2, '["train"]', '{"A":"1"}',
      '/ckpt', 'vgg16', 'preempted', 1, 20.0, 10.0, 12.0, 100.0, 105.0, NULL,
      120.0, 1, 0, 1, 2, '["node-1"]', NULL);
    INSERT INTO jobs VALUES (2, 'done', 'bob', 1, '["true"]', '{}', '', '',
      'finished', 0, 3.0, 3.0, 3.0, 101.0, 102.0, 105.0, 105.0, 0, 0, 0, 1,
      '["node-1"]', 0);
    INSERT INTO events (job_id, time, kind, detail)
      VALUES (1, 100.0, 'submitted', '2 GPUs');
  )sql");
  ASSERT_EQ(SchemaVersionOf(path), "1");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->GetJob(1);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->spec.name, "old");
    EXPECT_EQ(job->spec.env.at("A"), "1");
    EXPECT_EQ(job->state, JobRecordState::kPreempted);
    EXPECT_EQ(job->queue, 1);
    EXPECT_EQ(job->executed, Seconds{10});
    EXPECT_EQ(job->first_start_time, Seconds{105});
    EXPECT_EQ(job->restarts, 1);
    EXPECT_EQ(job->attempt, 2);
    EXPECT_EQ(job->failed_starts, 0);
    ASSERT_EQ(job->events.size(), 1u);
    EXPECT_EQ(job->events[0].kind, "submitted");
    auto unfinished = (*store)->ListUnfinishedJobs();
    ASSERT_TRUE(unfinished.ok()) << unfinished.status();
    ASSERT_EQ(unfinished->size(), 1u);
    EXPECT_EQ((*unfinished)[0].failed_starts, 0);
    EXPECT_EQ((*store)->ListJobs()->size(), 2u);

    // The new column is written like any other, and new jobs get ids after
    // the old ones.
    job->failed_starts = 2;
    ASSERT_TRUE((*store)->UpdateJob(*job).ok());
    EXPECT_EQ((*store)->GetJob(1)->failed_starts, 2);
    JobRequest request;
    request.command = {"true"};
    EXPECT_EQ(*(*store)->CreateJob(request, Seconds{200}), 3);
    // The launches table came with the upgrade: old launches are unknown,
    // new ones are recorded.
    EXPECT_TRUE((*store)->LaunchNodes(1, 2)->empty());
    StoreWrite write;
    write.launches = {{1, 3, {"node-1"}}};
    ASSERT_TRUE((*store)->Write(write).ok());
    EXPECT_EQ(*(*store)->LaunchNodes(1, 3),
              std::vector<std::string>{"node-1"});
  }
  EXPECT_EQ(SchemaVersionOf(path), absl::StrCat(SqliteStore::kSchemaVersion));
  // Upgraded once: reopening does not migrate again.
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->GetJob(1)->failed_starts, 2);
  EXPECT_EQ((*reopened)->GetJob(3)->failed_starts, 0);
}

TEST(SqliteStoreOpenTest, NewFileIsAtTheCurrentVersion) {
  TestDir dir;
  std::string path = MakeStateFile(dir);
  EXPECT_EQ(SchemaVersionOf(path), absl::StrCat(SqliteStore::kSchemaVersion));
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->GetJob(1)->failed_starts, 0);
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
  // A state reads show but the store never writes.
  RawSql(path, "UPDATE jobs SET state = 'starting' WHERE id = 1");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path +
                  ": job 1: column 'state': \"starting\" is shown, never "
                  "stored");
  }
  RawSql(path, "UPDATE jobs SET state = 'pending', spec = x'ff'");
  {
    auto store = SqliteStore::Open(path);
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path + ": job 1: column 'spec': not a serialized JobSpec");
  }
  RawSql(path, "UPDATE jobs SET spec = '[\"train\"]'");
  {
    auto store = SqliteStore::Open(path);
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path + ": job 1: column 'spec': unexpected text value");
  }
  RawSql(path, "UPDATE jobs SET spec = x'', queue = 'high'");
  {
    auto store = SqliteStore::Open(path);
    EXPECT_EQ((*store)->GetJob(1).status().message(),
              path + ": job 1: column 'queue': unexpected text value");
  }
}

}  // namespace
}  // namespace tiresias
