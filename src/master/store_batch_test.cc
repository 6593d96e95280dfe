// Store::CreateJobs: a batch of submissions in one transaction, and the
// request ids that make a retried submission find the job it created.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::TestDir;
using ::testing::HasSubstr;

JobRequest Request(std::string name, int gpus = 1) {
  return master_testing::AliceTrainRequest(std::move(name), gpus);
}

std::unique_ptr<SqliteStore> MustOpen(const std::string& path) {
  auto store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// The outcome of each job of a batch that must have been written.
std::vector<absl::StatusOr<CreatedJob>> MustCreate(
    Store& store, const std::vector<NewJob>& jobs, Seconds now = Seconds{7}) {
  auto created = store.CreateJobs(jobs, now);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? *created : std::vector<absl::StatusOr<CreatedJob>>{};
}

TEST(StoreBatchTest, ABatchIsOneTransactionWithConsecutiveIds) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  const int64_t before = store->commits();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 100; ++i) {
    jobs.push_back({Request(absl::StrCat("j", i)), ""});
  }
  auto created = MustCreate(*store, jobs, Seconds{12.5});
  ASSERT_EQ(created.size(), 100u);
  EXPECT_EQ(store->commits(), before + 1);  // one fsync for all of them
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(created[i].ok()) << created[i].status();
    EXPECT_EQ(created[i]->id, i + 1);
    EXPECT_FALSE(created[i]->existing);
  }
  auto job = store->GetJob(100);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec, Request("j99"));
  EXPECT_EQ(job->submit_time, Seconds{12.5});
  ASSERT_EQ(job->events.size(), 1u);
  EXPECT_EQ(job->events[0].kind, "submitted");
  // CreateJob is a batch of one.
  EXPECT_EQ(*store->CreateJob(Request("one"), Seconds{13}), 101);
  EXPECT_EQ(store->commits(), before + 2);
}

TEST(StoreBatchTest, ARetriedRequestIdGetsTheSameJobAlsoAfterReopening) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  {
    auto store = MustOpen(path);
    auto first = MustCreate(*store, {{Request("a"), "req-1"}});
    ASSERT_TRUE(first[0].ok()) << first[0].status();
    EXPECT_EQ(first[0]->id, 1);
    EXPECT_FALSE(first[0]->existing);
    auto retry = MustCreate(*store, {{Request("a"), "req-1"}});
    ASSERT_TRUE(retry[0].ok()) << retry[0].status();
    EXPECT_EQ(retry[0]->id, 1);
    EXPECT_TRUE(retry[0]->existing);
    EXPECT_EQ(store->ListJobs()->size(), 1u);
  }
  auto store = MustOpen(path);
  auto again = MustCreate(*store, {{Request("a"), "req-1"}});
  ASSERT_TRUE(again[0].ok()) << again[0].status();
  EXPECT_EQ(again[0]->id, 1);
  EXPECT_TRUE(again[0]->existing);
  // The retry wrote nothing: one job, one "submitted" event.
  EXPECT_EQ(store->ListJobs()->size(), 1u);
  EXPECT_EQ(store->GetJob(1)->events.size(), 1u);
  EXPECT_EQ(store->GetJob(1)->request_id, "req-1");
}

TEST(StoreBatchTest, ARequestIdWithAnotherSpecIsRefusedNamingTheJob) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  MustCreate(*store, {{Request("a"), ""}, {Request("b"), "req-1"}});
  auto other = MustCreate(*store, {{Request("b", 4), "req-1"}});
  ASSERT_FALSE(other[0].ok());
  EXPECT_EQ(other[0].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(other[0].status().message()),
              HasSubstr("request_id \"req-1\""));
  EXPECT_THAT(std::string(other[0].status().message()), HasSubstr("job 2"));
  EXPECT_EQ(store->ListJobs()->size(), 2u);
}

TEST(StoreBatchTest, RequestIdsAreMatchedWithinOneBatchToo) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  auto created = MustCreate(*store, {{Request("a"), "x"},
                                     {Request("z"), ""},
                                     {Request("a"), "x"},
                                     {Request("other"), "x"},
                                     {Request("z"), ""}});
  ASSERT_EQ(created.size(), 5u);
  ASSERT_TRUE(created[0].ok());
  EXPECT_EQ(created[0]->id, 1);
  EXPECT_EQ(created[1]->id, 2);
  ASSERT_TRUE(created[2].ok());
  EXPECT_EQ(created[2]->id, 1);
  EXPECT_TRUE(created[2]->existing);
  EXPECT_EQ(created[3].status().code(), absl::StatusCode::kAlreadyExists);
  // Without a request id, equal specs are distinct jobs.
  ASSERT_TRUE(created[4].ok());
  EXPECT_EQ(created[4]->id, 3);
  EXPECT_FALSE(created[4]->existing);
  EXPECT_EQ(store->ListJobs()->size(), 3u);
  EXPECT_EQ(store->GetJob(2)->request_id, "");
}

// The store keeps a spec's strings as bytes (the wire's JobSpec holds
// bytes; ValidateJobRequest is what refuses text that is not UTF-8), so
// no job of a batch is unstorable; a time that is not a number refuses
// the whole batch.
TEST(StoreBatchTest, SpecsAreKeptAsBytesAndABadTimeRefusesTheBatch) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  JobRequest bytes = Request("bytes");
  bytes.command.push_back("\xff\xfe");
  bytes.env["K"] = std::string("a\0b", 3);
  auto created =
      MustCreate(*store, {{Request("a"), ""}, {bytes, ""}, {Request("b"), ""}});
  ASSERT_EQ(created.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(created[i].ok()) << created[i].status();
    EXPECT_EQ(created[i]->id, i + 1);
  }
  EXPECT_EQ(store->GetJob(2)->spec, bytes);
  auto nan = store->CreateJobs({{Request("c"), ""}}, Seconds{NAN});
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ListJobs()->size(), 3u);
}

TEST(StoreBatchTest, NodeAgentTokenHashRoundTripsAndSurvivesReopening) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  NodeRecord node{0, "node-a", "10.0.0.1", 8, NodeState::kUp, Seconds{1}};
  node.agent_token_hash = "sha256:0123abcd";
  {
    auto store = MustOpen(path);
    EXPECT_EQ(*store->UpsertNode(node), 1);
    node.id = 1;
    EXPECT_EQ(store->ListNodes()->at(0), node);
  }
  auto store = MustOpen(path);
  EXPECT_EQ(store->ListNodes()->at(0).agent_token_hash, "sha256:0123abcd");
  node.agent_token_hash = "";
  EXPECT_EQ(*store->UpsertNode(node), 1);
  EXPECT_EQ(store->ListNodes()->at(0).agent_token_hash, "");
}

// A registration's node row written with the jobs it changed: one
// transaction (one commit) for both; a row the store refuses (no name)
// fails the whole write and leaves the job as it was.
TEST(StoreBatchTest, NodeRowsGoInTheSameTransactionAsTheJobs) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  MustCreate(*store, {{Request("a"), ""}});  // job 1
  NodeRecord node{0, "node-a", "10.0.0.1", 8, NodeState::kDown, Seconds{1}};
  ASSERT_EQ(*store->UpsertNode(node), 1);
  auto job = store->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status();
  const int64_t before = store->commits();

  StoreWrite write;
  write.jobs = {*job};
  write.jobs[0].state = JobRecordState::kRunning;
  node.id = 1;
  node.state = NodeState::kUp;
  node.last_heartbeat = Seconds{5};
  node.agent_token_hash = "sha256:feed";
  NodeRecord nameless = node;
  nameless.name = "";
  write.nodes = {node, nameless};
  absl::Status refused = store->Write(write);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("node name"));
  EXPECT_EQ(store->commits(), before);
  EXPECT_EQ(store->ListNodes()->at(0).state, NodeState::kDown);
  EXPECT_EQ(store->GetJob(1)->state, JobRecordState::kPending);

  write.nodes = {node};
  ASSERT_TRUE(store->Write(write).ok());
  EXPECT_EQ(store->commits(), before + 1);
  EXPECT_EQ(store->ListNodes()->at(0), node);
  EXPECT_EQ(store->GetJob(1)->state, JobRecordState::kRunning);
}

// SubmitJobs's write: a refused job in the middle leaves nothing behind,
// not even a used id; a good batch is one transaction; its retry (the same
// request ids) finds every job.
TEST(StoreBatchTest, AllOrNothingWritesNothingWhenOneJobIsRefused) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  MustCreate(*store, {{Request("earlier"), "used"}});  // job 1
  const int64_t before = store->commits();
  std::vector<NewJob> jobs = {{Request("a"), "b#0"},
                              {Request("other spec"), "used"},
                              {Request("c"), "b#2"}};
  auto refused = store->CreateJobsAllOrNothing(jobs, Seconds{20});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("jobs[1]: request_id \"used\": already used for job 1"));
  EXPECT_EQ(store->commits(), before);
  auto all = store->ListJobs(std::nullopt);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);  // job "a" of the refused batch is not there

  jobs[1] = {Request("b"), "b#1"};
  auto created = store->CreateJobsAllOrNothing(jobs, Seconds{21});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(store->commits(), before + 1);
  ASSERT_EQ(created->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*created)[i].id, i + 2);  // the refused batch took no id
    EXPECT_FALSE((*created)[i].existing);
  }
  auto retry = store->CreateJobsAllOrNothing(jobs, Seconds{22});
  ASSERT_TRUE(retry.ok()) << retry.status();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*retry)[i].id, i + 2);
    EXPECT_TRUE((*retry)[i].existing);
  }
  EXPECT_EQ(store->ListJobs(std::nullopt)->size(), 4u);
}

}  // namespace
}  // namespace tiresias
