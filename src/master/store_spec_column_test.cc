// Schema version 15 (issue 22): a job's spec is one column, the wire's
// JobSpec as protobuf bytes, beside the name, user and GPU count that
// listings filter on. A version-14 file's 13 spec columns are moved into
// it in the upgrade's transaction, or, if one row is malformed, not at all.

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/old_state_file.h"
#include "master/sqlite_store.h"
#include "master/store_rows.h"
#include "master/test_dir.h"
#include "proto/tiresias.pb.h"

namespace tiresias {
namespace {

using master_testing::QueryValue;
using master_testing::RawSql;
using master_testing::TestDir;
using master_testing::WriteOldStateFile;

// The columns of the jobs table, in order, space-separated.
std::string JobColumns(const std::string& path) {
  return QueryValue(path,
                    "SELECT group_concat(name, ' ') FROM "
                    "pragma_table_info('jobs')");
}

// Job 3 of a version-14 file, every spec field set in its own column.
constexpr char kFullJobAtVersion14[] = R"sql(
  INSERT INTO jobs (id, name, user, gpus, command, env, checkpoint_dir,
    model, state, queue, attained_gpu_seconds, executed_seconds,
    total_executed_seconds, submit_time, last_stop_time, preemptions,
    promotions, restarts, attempt, nodes, request_id, workdir, output,
    error, time_limit_seconds, no_preempt, submitted_held, held,
    dependencies, array_indices, array_max_running, array_id, array_index)
  VALUES (3, 'full', 'carol', 4, '["python3","train.py","--lr","0.1"]',
    '{"A":"1","B":"two words"}', '/ckpt/3', 'resnet50', 'preempted', 2,
    40.0, 10.0, 12.0, 103.0, 120.0, 1, 0, 1, 2, '["node-1","node-2"]',
    'req-3', '/home/carol/run', 'out-%j.txt', 'err-%j.txt', 3600.5, 1, 1, 1,
    '[{"kind":"afterok","job_id":1},{"kind":"afterany","job_id":2}]',
    '0-7:2', 2, 3, 0);
)sql";

JobRequest FullJobSpec() {
  JobRequest spec;
  spec.name = "full";
  spec.user = "carol";
  spec.num_gpus = 4;
  spec.command = {"python3", "train.py", "--lr", "0.1"};
  spec.env = {{"A", "1"}, {"B", "two words"}};
  spec.checkpoint_dir = "/ckpt/3";
  spec.model = "resnet50";
  spec.workdir = "/home/carol/run";
  spec.output = "out-%j.txt";
  spec.error = "err-%j.txt";
  spec.time_limit = Seconds{3600.5};
  spec.no_preempt = true;
  spec.hold = true;
  spec.dependencies = {{DependencyKind::kAfterOk, 1},
                       {DependencyKind::kAfterAny, 2}};
  spec.array.indices = "0-7:2";
  spec.array.max_running = 2;
  return spec;
}

TEST(StoreSpecColumnTest, VersionFourteenFileMovesEverySpecFieldIntoOneColumn) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteOldStateFile(path, 14);
  RawSql(path, kFullJobAtVersion14);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->GetJob(3);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->spec, FullJobSpec());
    // What is not spec is as it was.
    EXPECT_EQ(job->state, JobRecordState::kPreempted);
    EXPECT_EQ(job->queue, 2);
    EXPECT_EQ(job->nodes, (std::vector<std::string>{"node-1", "node-2"}));
    EXPECT_EQ(job->request_id, "req-3");
    EXPECT_TRUE(job->held);
    EXPECT_EQ(job->array_id, 3);
    // Version 3's jobs, through every migration.
    auto old = (*store)->GetJob(1);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ(old->spec.command, std::vector<std::string>{"train"});
    EXPECT_EQ(old->spec.env, (std::map<std::string, std::string>{{"A", "1"}}));
    EXPECT_EQ(old->spec.checkpoint_dir, "/ckpt");
    EXPECT_EQ(old->spec.model, "vgg16");
    EXPECT_EQ(old->spec.num_gpus, 2);
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(store_internal::kLatestSchemaVersion));
  EXPECT_EQ(JobColumns(path),
            "id name user gpus state queue attained_gpu_seconds "
            "executed_seconds total_executed_seconds submit_time "
            "first_start_time end_time last_stop_time preemptions "
            "promotions restarts attempt nodes exit_code failed_starts "
            "request_id cancel_requested profile held timeout_requested "
            "array_id array_index spec cpu_seconds max_memory_bytes vc "
            "array_count array_split array_spec array_gpus live_attempt");
  // The column is the wire's message, without what has columns of its own.
  v1::JobSpec stored;
  ASSERT_TRUE(stored.ParseFromString(
      QueryValue(path, "SELECT spec FROM jobs WHERE id = 3")));
  EXPECT_EQ(stored.name(), "");
  EXPECT_EQ(stored.user(), "");
  EXPECT_EQ(stored.gpus(), 0);
  EXPECT_EQ(stored.model(), "resnet50");
  ASSERT_EQ(stored.dependencies_size(), 2);
  EXPECT_EQ(stored.dependencies(1).kind(), v1::DEPENDENCY_KIND_AFTER_ANY);
  // A new file has the same columns as an upgraded one.
  const std::string fresh = dir.File("fresh.db");
  ASSERT_TRUE(SqliteStore::Open(fresh).ok());
  EXPECT_EQ(JobColumns(fresh), JobColumns(path));
}

// One malformed row (a hand edit, a bug) fails the upgrade with an error
// naming it, and nothing changes: the file stays at version 14, every old
// column still there, readable by the build that wrote it.
TEST(StoreSpecColumnTest, AMalformedRowStopsTheUpgradeAndChangesNothing) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteOldStateFile(path, 14);
  RawSql(path, kFullJobAtVersion14);
  RawSql(path, "UPDATE jobs SET env = '[1, 2]' WHERE id = 3");
  const std::string before = JobColumns(path);
  auto store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store.status().message(),
            absl::StrCat("upgrading schema version 14 to 15: ", path,
                         ": job 3: column 'env': not a JSON object"));
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            "14");
  EXPECT_EQ(JobColumns(path), before);
  EXPECT_NE(before.find("command env checkpoint_dir"), std::string::npos);
  // Mended by hand, it upgrades.
  RawSql(path, "UPDATE jobs SET env = '{}' WHERE id = 3");
  auto mended = SqliteStore::Open(path);
  ASSERT_TRUE(mended.ok()) << mended.status();
  JobRequest want = FullJobSpec();
  want.env.clear();
  EXPECT_EQ((*mended)->GetJob(3)->spec, want);
}

// Listings filter on the name and user columns, and those are what a read
// shows: a hand edit of the user column (an admin moving a job) is seen,
// never contradicted by a copy inside the spec.
TEST(StoreSpecColumnTest, NameUserAndGpusLiveInTheirColumnsOnly) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  JobRequest spec = FullJobSpec();
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->CreateJob(spec, Seconds{100}).ok());
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT name || ' ' || user || ' ' || gpus "
                       "FROM jobs"),
            "full carol 4");
  RawSql(path, "UPDATE jobs SET user = 'dave', name = 'moved', gpus = 2");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto job = (*store)->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status();
  spec.user = "dave";
  spec.name = "moved";
  spec.num_gpus = 2;
  EXPECT_EQ(job->spec, spec);
  JobQuery query;
  query.user = "dave";
  auto page = (*store)->QueryJobs(query);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].spec, spec);
}

}  // namespace
}  // namespace tiresias
