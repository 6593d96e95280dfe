// Schema version 4: a file written by version 3 is upgraded in place with
// jobs.request_id (unique, NULL when absent) and nodes.agent_token_hash;
// version 6 with jobs.profile and the profiles table, version 7 with
// placement_runs, version 8 with the jobs' workdir, output and error, and
// version 9 with the job-control columns (time limit, no-preempt, held),
// version 10 with nodes.drained and drain_reason, version 11 with
// jobs.dependencies, and version 12 with the job-array columns.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
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
using master_testing::WriteVersionThreeFile;

// A job of bob's submitted with request id "r" (unique over all users up
// to version 13), into a file at version 13 or 14.
constexpr char kBobsRequestR[] = R"sql(
    INSERT INTO jobs (id, name, user, gpus, command, env, checkpoint_dir,
      model, state, queue, attained_gpu_seconds, executed_seconds,
      total_executed_seconds, submit_time, last_stop_time, preemptions,
      promotions, restarts, attempt, nodes, request_id)
      VALUES (3, 'mine', 'bob', 1, '["true"]', '{}', '', '', 'pending', 0,
      0.0, 0.0, 0.0, 102.0, 102.0, 0, 0, 0, 0, '[]', 'r');
)sql";

TEST(StoreUpgradeTest, VersionThreeFileGetsRequestIdsAndAgentTokenHashes) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->GetJob(1);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->spec.name, "old");
    EXPECT_EQ(job->request_id, "");
    EXPECT_EQ(job->failed_starts, 1);
    auto nodes = (*store)->ListNodes();
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ((*nodes)[0].name, "node-1");
    EXPECT_EQ((*nodes)[0].agent_token_hash, "");

    // Old jobs have no request id (NULL, so any number of them); new ones
    // are matched by theirs.
    JobRequest spec;
    spec.command = {"true"};
    auto created =
        (*store)->CreateJobs({{spec, "r"}, {spec, "r"}}, Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ((*created)[0]->id, 3);
    EXPECT_EQ((*created)[1]->id, 3);
    EXPECT_TRUE((*created)[1]->existing);
    NodeRecord node = (*nodes)[0];
    node.agent_token_hash = "h";
    ASSERT_TRUE((*store)->UpsertNode(node).ok());
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(SqliteStore::kSchemaVersion));
  EXPECT_EQ(QueryValue(path,
                       "SELECT count(*) FROM jobs WHERE request_id IS "
                       "NULL"),
            "2");
  // Unique per user since version 14.
  EXPECT_EQ(QueryValue(path,
                       "SELECT name FROM sqlite_schema WHERE name = "
                       "'jobs_by_user_request_id'"),
            "jobs_by_user_request_id");
  // Upgraded once: reopening keeps what was written.
  auto reopened = SqliteStore::Open(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->GetJob(3)->request_id, "r");
  EXPECT_EQ((*reopened)->ListNodes()->at(0).agent_token_hash, "h");
}

TEST(StoreUpgradeTest, VersionThreeFileGetsTokensAndAuditTables) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  TokenRecord token{.user = "bob", .salt = "s", .hash = "h",
                    .created = Seconds{10}};
  auto id = (*store)->CreateToken(token);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 1);
  EXPECT_TRUE((*store)
                  ->AppendAudit(AuditRecord{.time = Seconds{11},
                                            .principal = "bob",
                                            .action = "a",
                                            .outcome = "ok"})
                  .ok());
}

// Schema version 6: old jobs have no profile; a profile saved for one job
// is stored with it and by its signature, and a job created later with the
// same name, command and GPU count (another user, env or model) starts
// with it, also after the file is reopened; another signature does not.
TEST(StoreUpgradeTest, VersionThreeFileGetsProfilesBySignature) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  JobRequest spec;
  spec.name = "vgg";
  spec.num_gpus = 4;
  spec.command = {"python", "ps_train.py"};
  JobProfile profile{.periodic = true,
                     .tensor_skew = 0.7427,
                     .iteration_s = 0.25,
                     .bytes_per_iteration = 5.5e8,
                     .messages_per_iteration = 40};
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->GetJob(1)->profile, std::nullopt);
    auto first = (*store)->CreateJob(spec, Seconds{200});
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ((*store)->GetJob(*first)->profile, std::nullopt);
    profile.measured_job_id = *first;
    ASSERT_TRUE(
        (*store)->SaveProfile(*first, JobSignature(spec), profile).ok());
    EXPECT_EQ((*store)->GetJob(*first)->profile, profile);
    EXPECT_TRUE(absl::IsNotFound(
        (*store)->SaveProfile(99, JobSignature(spec), profile)));
    // Updating the job's other columns leaves its profile alone.
    JobRecord rec = *(*store)->GetJob(*first);
    rec.queue = 1;
    ASSERT_TRUE((*store)->UpdateJob(rec, {}).ok());
    EXPECT_EQ((*store)->GetJob(*first)->profile, profile);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  JobRequest again = spec;
  again.user = "someone-else";
  again.model = "resnet50";
  again.env = {{"SEED", "2"}};
  JobRequest other = spec;
  other.num_gpus = 2;
  auto created =
      (*store)->CreateJobs({{again, ""}, {other, ""}}, Seconds{300});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)[0]->profile, profile);
  EXPECT_EQ((*store)->GetJob((*created)[0]->id)->profile, profile);
  EXPECT_EQ((*created)[1]->profile, std::nullopt);
  EXPECT_EQ((*store)->GetJob((*created)[1]->id)->profile, std::nullopt);
  EXPECT_NE(JobSignature(spec), JobSignature(other));
  EXPECT_EQ(JobSignature(spec), JobSignature(again));
}

// Each rank of a parameter-server job may report; the worker (periodic,
// most bytes per iteration) wins, and only a periodic profile places.
TEST(JobProfileTest, WorkerProfileWinsAndOnlyPeriodicOnesPlace) {
  const JobProfile none{.periodic = false};
  const JobProfile server{.periodic = true, .tensor_skew = 0.29,
                          .bytes_per_iteration = 5.5e4};
  const JobProfile worker{.periodic = true, .tensor_skew = 0.74,
                          .bytes_per_iteration = 5.3e8};
  EXPECT_TRUE(BetterProfile(server, none));
  EXPECT_FALSE(BetterProfile(none, server));
  EXPECT_TRUE(BetterProfile(worker, server));
  EXPECT_FALSE(BetterProfile(server, worker));
  EXPECT_FALSE(BetterProfile(worker, worker));
  EXPECT_EQ(PlacementSkew(worker), 0.74);
  EXPECT_EQ(PlacementSkew(none), std::nullopt);
  EXPECT_EQ(PlacementSkew(std::nullopt), std::nullopt);
  EXPECT_EQ(*DecodeProfile(EncodeProfile(worker)), worker);
  EXPECT_FALSE(DecodeProfile("{}").ok());
}

// Schema version 7: placement runs are kept per launch (a second report of
// the same launch replaces the first), listed oldest first across a reopen,
// and a bad one is refused with nothing written.
TEST(StoreUpgradeTest, VersionThreeFileKeepsPlacementRuns) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->ListPlacementRuns()->empty());
    ASSERT_TRUE((*store)
                    ->AddPlacementRun({.job = 1, .attempt = 2,
                                       .time = Seconds{50},
                                       .run = {"vgg", 0.74, true, 1.5}})
                    .ok());
    ASSERT_TRUE((*store)
                    ->AddPlacementRun({.job = 1, .attempt = 1,
                                       .time = Seconds{40},
                                       .run = {"vgg", 0.74, false, 1.0}})
                    .ok());
    // The same launch again: replaced.
    ASSERT_TRUE((*store)
                    ->AddPlacementRun({.job = 1, .attempt = 2,
                                       .time = Seconds{60},
                                       .run = {"vgg", 0.74, true, 1.6}})
                    .ok());
    EXPECT_EQ((*store)
                  ->AddPlacementRun(
                      {.job = 1, .attempt = 3, .time = Seconds{70},
                       .run = {"vgg", std::nan(""), true, 1.6}})
                  .code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ((*store)
                  ->AddPlacementRun({.job = 1, .attempt = 3,
                                     .time = Seconds{70},
                                     .run = {"", 0.5, true, 1.6}})
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto runs = (*store)->ListPlacementRuns();
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].attempt, 1);
  EXPECT_FALSE((*runs)[0].run.spread);
  EXPECT_EQ((*runs)[0].run.iteration_s, 1.0);
  EXPECT_EQ((*runs)[1].job, 1);
  EXPECT_EQ((*runs)[1].attempt, 2);
  EXPECT_EQ((*runs)[1].time, Seconds{60});
  EXPECT_EQ((*runs)[1].run.signature, "vgg");
  EXPECT_EQ((*runs)[1].run.skew, 0.74);
  EXPECT_TRUE((*runs)[1].run.spread);
  EXPECT_EQ((*runs)[1].run.iteration_s, 1.6);
}

// The jobs' workdir, output and error (submit --chdir, --output, --error):
// a job of an older file has none (the agent's folder, no files, as it ran
// before); a new one keeps them, across a reopen, through every read.
TEST(StoreUpgradeTest, VersionThreeFileGetsWorkdirOutputAndError) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  JobRequest spec;
  spec.command = {"/bin/sh", "-c", "pwd"};
  spec.workdir = "/home/alice/run 1";
  spec.output = "out-%j-%r.txt";
  spec.error = "/logs/err-%j-%a.txt";
  JobId id = 0;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto old = (*store)->GetJob(1);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ(old->spec.workdir, "");
    EXPECT_EQ(old->spec.output, "");
    EXPECT_EQ(old->spec.error, "");
    auto created = (*store)->CreateJob(spec, Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    id = *created;
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(SqliteStore::kSchemaVersion));
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto job = (*store)->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec, spec);
  auto unfinished = (*store)->ListUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  ASSERT_EQ(unfinished->size(), 3u);
  EXPECT_EQ(unfinished->back().spec.workdir, "/home/alice/run 1");
  EXPECT_EQ(unfinished->back().spec.error, "/logs/err-%j-%a.txt");
  // A retried submission with the same request id but another workdir is
  // another spec: refused, not taken for the first.
  auto first = (*store)->CreateJobs({{spec, "req-1"}}, Seconds{300});
  ASSERT_TRUE(first.ok()) << first.status();
  JobRequest elsewhere = spec;
  elsewhere.workdir = "/elsewhere";
  auto again = (*store)->CreateJobs({{elsewhere, "req-1"}}, Seconds{301});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)[0].status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(StoreUpgradeTest, SchemaVersionHasOneMigrationPerStep) {
  EXPECT_EQ(SqliteStore::kSchemaVersion,
            1 + static_cast<int>(std::size(store_internal::kMigrations)));
}

// Job control (time limit, no-preempt, held): old jobs have none of it; a
// new job's spec and its held and timeout flags round-trip, across a
// reopen; a job stored "timeout" decodes as such and counts as ended.
TEST(StoreUpgradeTest, VersionThreeFileGetsJobControl) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  JobRequest spec;
  spec.name = "limited";
  spec.command = {"sleep", "60"};
  spec.time_limit = Seconds{3};
  spec.no_preempt = true;
  spec.hold = true;
  JobId id = 0;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto old = (*store)->GetJob(1);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ(old->spec.time_limit, Seconds{0});
    EXPECT_FALSE(old->spec.no_preempt);
    EXPECT_FALSE(old->spec.hold);
    EXPECT_FALSE(old->held);
    EXPECT_FALSE(old->timeout_requested);
    auto created = (*store)->CreateJobs({{spec, "held-1"}}, Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    id = (*created)[0]->id;
    auto rec = (*store)->GetJob(id);
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(rec->spec, spec);
    EXPECT_TRUE(rec->held);  // submitted held
    // A retry of the same submission finds it (the spec compares equal).
    auto again = (*store)->CreateJobs({{spec, "held-1"}}, Seconds{201});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE((*again)[0]->existing);
    rec->held = false;
    rec->cancel_requested = true;
    rec->timeout_requested = true;
    ASSERT_TRUE((*store)->UpdateJob(*rec, {}).ok());
    JobRecord ended = *(*store)->GetJob(2);
    ended.state = JobRecordState::kTimeout;
    ended.end_time = Seconds{300};
    ASSERT_TRUE((*store)->UpdateJob(ended, {}).ok());
  }
  EXPECT_EQ(QueryValue(path, "SELECT state FROM jobs WHERE id = 2"), "timeout");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto rec = (*store)->GetJob(id);
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->spec, spec);
  EXPECT_FALSE(rec->held);
  EXPECT_TRUE(rec->timeout_requested);
  EXPECT_EQ((*store)->GetJob(2)->state, JobRecordState::kTimeout);
  auto unfinished = (*store)->ListUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  for (const JobRecord& job : *unfinished) EXPECT_NE(job.id, 2);
  auto totals = (*store)->Totals();
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->by_state[JobRecordState::kTimeout], 1);
}

TEST(StoreUpgradeTest, SchemaVersionIsWrittenToTheFile) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  ASSERT_TRUE(SqliteStore::Open(path).ok());
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(SqliteStore::kSchemaVersion));
}

// The node drain columns: an old node is not drained; a drain and its
// reason survive a reopen and an agent registering again (UpsertNode);
// resuming clears the reason.
TEST(StoreUpgradeTest, VersionThreeFileKeepsNodeDrains) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    NodeRecord node = (*store)->ListNodes()->at(0);
    EXPECT_FALSE(node.drained);
    EXPECT_EQ(node.drain_reason, "");
    ASSERT_TRUE((*store)->SetNodeDrain(node.id, true, "disk swap").ok());
    node.address = "10.0.0.2";  // the agent registers again
    node.drained = false;
    ASSERT_TRUE((*store)->UpsertNode(node).ok());
    EXPECT_EQ((*store)->SetNodeDrain(99, true, "x").code(),
              absl::StatusCode::kNotFound);
  }
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    NodeRecord node = (*store)->ListNodes()->at(0);
    EXPECT_EQ(node.address, "10.0.0.2");
    EXPECT_TRUE(node.drained);
    EXPECT_EQ(node.drain_reason, "disk swap");
    ASSERT_TRUE((*store)->SetNodeDrain(node.id, false, "ignored").ok());
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->ListNodes()->at(0).drained);
  EXPECT_EQ((*store)->ListNodes()->at(0).drain_reason, "");
}

// The dependencies column: an old job has none; a new job's survive a
// reopen in order, kinds and ids as submitted, as readable JSON; a
// malformed value (a hand edit) is refused naming the column.
TEST(StoreUpgradeTest, VersionThreeFileGetsDependencies) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  JobRequest spec;
  spec.name = "second";
  spec.command = {"true"};
  spec.dependencies = {{DependencyKind::kAfterOk, 1},
                       {DependencyKind::kAfterNotOk, 2},
                       {DependencyKind::kAfterAny, 1}};
  JobId id = 0;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto old = (*store)->GetJob(1);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_TRUE(old->spec.dependencies.empty());
    auto created = (*store)->CreateJobs({{spec, "deps-1"}}, Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    id = (*created)[0]->id;
  }
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto rec = (*store)->GetJob(id);
    ASSERT_TRUE(rec.ok()) << rec.status();
    EXPECT_EQ(rec->spec, spec);
    auto unfinished = (*store)->ListUnfinishedJobs();
    ASSERT_TRUE(unfinished.ok()) << unfinished.status();
    ASSERT_FALSE(unfinished->empty());
    EXPECT_EQ(unfinished->back().spec.dependencies, spec.dependencies);
  }
  // A dependency of a kind this build does not know (a hand edit, a bug):
  // the job is unreadable, with an error naming its column.
  v1::JobSpec edited;
  edited.add_dependencies()->set_kind(static_cast<v1::DependencyKind>(99));
  edited.mutable_dependencies(0)->set_job_id(1);
  RawSql(path, absl::StrCat("UPDATE jobs SET spec = x'",
                            absl::BytesToHexString(edited.SerializeAsString()),
                            "' WHERE id = ", id));
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto bad = (*store)->GetJob(id);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("column 'spec': dependency kind 99"),
            std::string_view::npos)
      << bad.status();
}

// Version 12: an old job is in no array; an array's jobs, written in one
// batch, share the first one's id as their array id, keep their indices
// and the spec's indices and running limit across a reopen, and are found
// by array (QueryJobs). A retried batch (the same request ids) finds the
// same jobs and array.
TEST(StoreUpgradeTest, VersionThreeFileGetsJobArrays) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteVersionThreeFile(path);
  JobRequest spec;
  spec.name = "sweep";
  spec.command = {"true"};
  spec.array = {"0-15:4", 2};
  std::vector<NewJob> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(NewJob{spec, absl::StrCat("arr#", i), i * 4, i == 0});
  }
  JobRequest single;
  single.command = {"true"};
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto old = (*store)->GetJob(1);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ(old->array_id, 0);
    EXPECT_EQ(old->array_index, 0);
    EXPECT_TRUE(old->spec.array.empty());
    auto created = (*store)->CreateJobsAllOrNothing(jobs, Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_EQ(created->size(), 4u);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ((*created)[i].id, 3 + i);  // after the old jobs 1 and 2
      EXPECT_EQ((*created)[i].array_id, 3);
      EXPECT_FALSE((*created)[i].existing);
    }
    // A job outside an array, after it: its own, not the array's.
    auto after = (*store)->CreateJobs({{single, ""}}, Seconds{201});
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ((*after)[0]->id, 7);
    EXPECT_EQ((*after)[0]->array_id, 0);
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT group_concat(a, ' ') FROM (SELECT "
                       "array_id || '_' || array_index AS a FROM jobs "
                       "ORDER BY id)"),
            "0_0 0_0 3_0 3_4 3_8 3_12 0_0");
  EXPECT_EQ(QueryValue(path,
                       "SELECT name FROM sqlite_schema WHERE name = "
                       "'jobs_by_array'"),
            "jobs_by_array");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto rec = (*store)->GetJob(5);
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->spec, spec);
  EXPECT_EQ(rec->spec.array.max_running, 2);
  EXPECT_EQ(rec->array_id, 3);
  EXPECT_EQ(rec->array_index, 8);
  JobQuery by_array;
  by_array.array_id = 3;
  auto page = (*store)->QueryJobs(by_array);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->jobs.size(), 4u);
  EXPECT_EQ(page->jobs.front().id, 3);
  EXPECT_EQ(page->jobs.back().id, 6);
  // The retry: nothing new, the same ids and array.
  auto again = (*store)->CreateJobsAllOrNothing(jobs, Seconds{300});
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*again)[i].id, 3 + i);
    EXPECT_EQ((*again)[i].array_id, 3);
    EXPECT_TRUE((*again)[i].existing);
  }
}

// Version 13 -> 14: request ids become unique per user (issue 21, 8a).
// bob's stored id still answers bob's retry; alice's same id is a new job
// of hers; the old global index is gone.
TEST(StoreUpgradeTest, VersionThirteenFileScopesRequestIdsToUsers) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  WriteOldStateFile(path, 13);
  RawSql(path, kBobsRequestR);
  ASSERT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            "13");
  JobRequest bobs;
  bobs.name = "mine";
  bobs.user = "bob";
  bobs.num_gpus = 1;
  bobs.command = {"true"};
  JobRequest alices = bobs;
  alices.user = "alice";
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto created =
        (*store)->CreateJobs({{bobs, "r"}, {alices, "r"}, {alices, "r"}},
                             Seconds{200});
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE((*created)[0].ok()) << (*created)[0].status();
    EXPECT_EQ((*created)[0]->id, 3);
    EXPECT_TRUE((*created)[0]->existing);
    ASSERT_TRUE((*created)[1].ok()) << (*created)[1].status();
    EXPECT_EQ((*created)[1]->id, 4);
    EXPECT_FALSE((*created)[1]->existing);
    EXPECT_EQ((*created)[2]->id, 4);
    EXPECT_TRUE((*created)[2]->existing);
    // Another spec under bob's id is still refused, naming bob's job only.
    JobRequest other = bobs;
    other.command = {"false"};
    auto refused = (*store)->CreateJobs({{other, "r"}}, Seconds{201});
    ASSERT_TRUE(refused.ok()) << refused.status();
    EXPECT_EQ((*refused)[0].status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_NE((*refused)[0].status().message().find("job 3"),
              std::string::npos);
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(SqliteStore::kSchemaVersion));
  EXPECT_EQ(QueryValue(path,
                       "SELECT count(*) FROM sqlite_schema WHERE name = "
                       "'jobs_by_request_id'"),
            "0");
  EXPECT_EQ(QueryValue(path,
                       "SELECT sql FROM sqlite_schema WHERE name = "
                       "'jobs_by_user_request_id'"),
            "CREATE UNIQUE INDEX jobs_by_user_request_id ON jobs (user, "
            "request_id)");
  EXPECT_EQ(QueryValue(path,
                       "SELECT group_concat(user, ' ') FROM (SELECT "
                       "user FROM jobs WHERE request_id = 'r' ORDER BY "
                       "id)"),
            "bob alice");
}

}  // namespace
}  // namespace tiresias
