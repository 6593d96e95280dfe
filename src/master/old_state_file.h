// Test-only: state files as older builds of tiresias left them, for the
// upgrade tests. Spelled out (version 3) and replayed (the migrations as
// they shipped, append only), so that the tests keep checking files that
// exist in the field whatever the code becomes.
#ifndef TIRESIAS_MASTER_OLD_STATE_FILE_H_
#define TIRESIAS_MASTER_OLD_STATE_FILE_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/store_rows.h"
#include "master/test_dir.h"

namespace tiresias::master_testing {

// A state file as version 3 wrote it, spelled out here so that this test
// keeps checking files that exist in the field whatever the code becomes.
inline void WriteVersionThreeFile(const std::string& path) {
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
      nodes TEXT NOT NULL, exit_code INTEGER,
      failed_starts INTEGER NOT NULL DEFAULT 0);
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
    CREATE TABLE launches (
      job_id INTEGER NOT NULL REFERENCES jobs(id),
      attempt INTEGER NOT NULL, rank INTEGER NOT NULL, node TEXT NOT NULL,
      PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
    PRAGMA application_id = 1414091333;
    INSERT INTO meta VALUES ('schema_version', '3');
    INSERT INTO jobs VALUES (1, 'old', 'bob', 2, '["train"]', '{"A":"1"}',
      '/ckpt', 'vgg16', 'pending', 0, 0.0, 0.0, 0.0, 100.0, NULL, NULL,
      100.0, 0, 0, 0, 0, '[]', NULL, 1);
    INSERT INTO jobs VALUES (2, 'older', 'bob', 1, '["true"]', '{}', '', '',
      'pending', 0, 0.0, 0.0, 0.0, 101.0, NULL, NULL, 101.0, 0, 0, 0, 0,
      '[]', NULL, 0);
    INSERT INTO events (job_id, time, kind, detail)
      VALUES (1, 100.0, 'submitted', '2 GPUs');
    INSERT INTO nodes (name, address, gpus, state, last_heartbeat)
      VALUES ('node-1', '10.0.0.1', 8, 'up', 90.0);
  )sql");
}

// A state file at schema `version` (3 to 14): version 3's, taken through
// the SQL of each later migration. Not past 14: version 15's migration has
// a code step (store_internal::MigrateInCode) that SQL alone cannot replay.
inline void WriteOldStateFile(const std::string& path, int version) {
  ASSERT_GE(version, 3);
  ASSERT_LE(version, 14);
  WriteVersionThreeFile(path);
  for (int v = 3; v < version; ++v) {
    RawSql(path, store_internal::kMigrations[v - 1]);
  }
  RawSql(path, absl::StrCat("UPDATE meta SET value = '", version,
                            "' WHERE key = 'schema_version'"));
}

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_MASTER_OLD_STATE_FILE_H_
