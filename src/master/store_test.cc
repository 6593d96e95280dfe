#include "master/sqlite_store.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::RawSql;
using master_testing::TestDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

JobRequest Request(std::string name, int gpus = 2) {
  JobRequest r;
  r.name = std::move(name);
  r.user = "alice";
  r.num_gpus = gpus;
  r.command = {"/usr/bin/python3", "train.py", "--steps", "100"};
  r.env = {{"LR", "0.1"}, {"SEED", "7"}};
  r.checkpoint_dir = "/ckpt/x";
  r.model = "resnet50";
  return r;
}

std::unique_ptr<SqliteStore> MustOpen(const std::string& path) {
  auto store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}


TEST(SqliteStoreTest, CreateThenGetReturnsExactlyWhatWasSubmitted) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  absl::StatusOr<JobId> id = store->CreateJob(Request("a"), Seconds{1000.25});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 1);

  absl::StatusOr<JobRecord> job = store->GetJob(*id);
  ASSERT_TRUE(job.ok()) << job.status();
  JobRecord expected;
  expected.id = 1;
  expected.spec = Request("a");
  expected.submit_time = Seconds{1000.25};
  expected.last_stop_time = Seconds{1000.25};
  expected.events = {JobEvent{1, 1, Seconds{1000.25}, "submitted", "2 GPUs"}};
  EXPECT_EQ(*job, expected);
}

TEST(SqliteStoreTest, UpdateWritesEveryMutableFieldAndKeepsTheSpec) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  ASSERT_TRUE(store->CreateJob(Request("a", 4), Seconds{10}).ok());

  JobRecord r = *store->GetJob(1);
  r.spec.name = "renamed";  // not mutable: must not be written
  r.submit_time = Seconds{99};
  r.state = JobRecordState::kFailed;
  r.queue = 2;
  r.attained_gpu_seconds = 4 * 3600.5;
  r.executed = Seconds{3600.5};
  r.total_executed = Seconds{7200.75};
  r.first_start_time = Seconds{20.5};
  r.end_time = Seconds{9000.125};
  r.last_stop_time = Seconds{9000.125};
  r.preemptions = 3;
  r.promotions = 1;
  r.restarts = 3;
  r.attempt = 4;
  r.nodes = {"node-1", "node-2"};
  r.exit_code = -9;
  r.failed_starts = 3;
  r.cpu_seconds = 1234.5;
  r.max_memory_bytes = int64_t{3} << 33;
  ASSERT_TRUE(store->UpdateJob(r, {{1, 0, Seconds{9000.125}, "failed",
                                    "exit code 137"}})
                  .ok());

  JobRecord expected = r;
  expected.spec = Request("a", 4);
  expected.submit_time = Seconds{10};
  expected.events = {
      JobEvent{1, 1, Seconds{10}, "submitted", "4 GPUs"},
      JobEvent{1, 2, Seconds{9000.125}, "failed", "exit code 137"}};
  EXPECT_EQ(*store->GetJob(1), expected);

  // Optional fields go back to absent.
  r.first_start_time.reset();
  r.end_time.reset();
  r.exit_code.reset();
  r.nodes.clear();
  ASSERT_TRUE(store->UpdateJob(r).ok());
  JobRecord again = *store->GetJob(1);
  EXPECT_EQ(again.first_start_time, std::nullopt);
  EXPECT_EQ(again.end_time, std::nullopt);
  EXPECT_EQ(again.exit_code, std::nullopt);
  EXPECT_TRUE(again.nodes.empty());
}

TEST(SqliteStoreTest, ListJobsFiltersByStateInIdOrder) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  const JobRecordState states[] = {
      JobRecordState::kRunning, JobRecordState::kFinished,
      JobRecordState::kPending, JobRecordState::kPreempted,
      JobRecordState::kCancelled, JobRecordState::kRunning};
  for (int i = 0; i < 6; ++i) {
    JobId id = *store->CreateJob(Request(absl::StrCat("j", i)), Seconds{i});
    JobRecord r = *store->GetJob(id);
    r.state = states[i];
    ASSERT_TRUE(store->UpdateJob(r).ok());
  }
  auto ids = [](const absl::StatusOr<std::vector<JobRecord>>& jobs) {
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    std::vector<JobId> out;
    for (const JobRecord& j : *jobs) {
      EXPECT_TRUE(j.events.empty());
      out.push_back(j.id);
    }
    return out;
  };
  EXPECT_THAT(ids(store->ListJobs()), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(ids(store->ListJobs(JobRecordState::kRunning)),
              ElementsAre(1, 6));
  EXPECT_THAT(ids(store->ListJobs(JobRecordState::kFailed)), ElementsAre());
  EXPECT_THAT(ids(store->ListUnfinishedJobs()), ElementsAre(1, 3, 4, 6));
  EXPECT_EQ((*store->ListJobs(JobRecordState::kPending))[0].spec.name, "j2");
}

// The failed-start count survives closing the file, as a master restart
// would; its checks match the other counts'.
TEST(SqliteStoreTest, FailedStartsRoundTripAcrossReopen) {
  TestDir dir;
  std::string path = dir.File("state.db");
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
    ASSERT_TRUE(store->CreateJob(Request("b"), Seconds{2}).ok());
    EXPECT_EQ(store->GetJob(1)->failed_starts, 0);
    JobRecord r = *store->GetJob(1);
    r.failed_starts = 2;
    ASSERT_TRUE(store->UpdateJob(r).ok());
    r.failed_starts = -1;
    absl::Status status = store->UpdateJob(r);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "job 1: failed_starts: expected >= 0, got -1");
  }
  auto store = MustOpen(path);
  EXPECT_EQ(store->GetJob(1)->failed_starts, 2);
  EXPECT_EQ(store->GetJob(2)->failed_starts, 0);
  auto unfinished = store->ListUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  ASSERT_EQ(unfinished->size(), 2u);
  EXPECT_EQ((*unfinished)[0].failed_starts, 2);
}

TEST(SqliteStoreTest, LaunchNodesAreRecordedPerAttemptAndRank) {
  TestDir dir;
  std::string path = dir.File("state.db");
  {
    auto store = MustOpen(path);
    ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
    StoreWrite write;
    write.launches = {{1, 1, {"node-1", "node-0"}}, {1, 2, {"node-2"}}};
    ASSERT_TRUE(store->Write(write).ok());
    // A launch of a job that does not exist: nothing of the write is kept.
    write.launches = {{1, 3, {"node-5"}}, {9, 1, {"node-1"}}};
    EXPECT_EQ(store->Write(write).code(), absl::StatusCode::kNotFound);
  }
  auto store = MustOpen(path);
  EXPECT_EQ(*store->LaunchNodes(1, 1),
            (std::vector<std::string>{"node-1", "node-0"}));
  EXPECT_EQ(*store->LaunchNodes(1, 2), (std::vector<std::string>{"node-2"}));
  EXPECT_TRUE(store->LaunchNodes(1, 3)->empty());  // rolled back
  EXPECT_TRUE(store->LaunchNodes(7, 1)->empty());  // never recorded
}

// kStarting is a view the master overlays on reads; the store keeps such a
// job as pending or preempted and refuses to write it.
TEST(SqliteStoreTest, StartingIsNeverStored) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
  const JobRecord before = *store->GetJob(1);
  JobRecord r = before;
  r.state = JobRecordState::kStarting;
  absl::Status status = store->UpdateJob(r, {{1, 0, Seconds{2}, "x", ""}});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("job 1: state: starting is shown, never stored"));
  EXPECT_EQ(*store->GetJob(1), before);
  EXPECT_TRUE(store->ListJobs(JobRecordState::kStarting)->empty());
}

TEST(SqliteStoreTest, IdsKeepIncreasingAcrossReopenAndAreNeverReused) {
  TestDir dir;
  std::string path = dir.File("state.db");
  {
    auto store = MustOpen(path);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
  }
  // Even if the newest row vanished (a hand edit), its id is not handed out
  // again.
  RawSql(path, "DELETE FROM events WHERE job_id = 3; DELETE FROM jobs WHERE id = 3");
  auto store = MustOpen(path);
  EXPECT_EQ(*store->CreateJob(Request("b"), Seconds{2}), 4);
  EXPECT_EQ(*store->CreateJob(Request("c"), Seconds{3}), 5);
  EXPECT_EQ(store->GetJob(1)->spec.name, "a");
}

TEST(SqliteStoreTest, EventsComeBackInOrderWithIncreasingSequences) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
  ASSERT_TRUE(store->CreateJob(Request("b"), Seconds{2}).ok());
  ASSERT_TRUE(store->AppendEvent(1, Seconds{5}, "started", "node-1").ok());
  ASSERT_TRUE(store->AppendEvent(2, Seconds{6}, "started", "node-2").ok());
  // Appended out of time order: history keeps the order of writing.
  ASSERT_TRUE(store->AppendEvent(1, Seconds{4}, "demoted", "queue 1").ok());
  ASSERT_TRUE(store->Write({{}, {{1, 0, Seconds{7}, "preempted", ""},
                                 {1, 0, Seconds{8}, "resumed", "node-2"}}})
                  .ok());

  auto events = store->Events(1);
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<std::string> kinds;
  std::vector<int64_t> sequences;
  for (const JobEvent& e : *events) {
    kinds.push_back(e.kind);
    sequences.push_back(e.sequence);
  }
  EXPECT_THAT(kinds, ElementsAre("submitted", "started", "demoted",
                                 "preempted", "resumed"));
  EXPECT_THAT(sequences, ElementsAre(1, 3, 5, 6, 7));
  EXPECT_EQ((*events)[2], (JobEvent{1, 5, Seconds{4}, "demoted", "queue 1"}));

  auto after = store->EventsAfter(4, 2);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].sequence, 5);
  EXPECT_EQ((*after)[1].sequence, 6);
  EXPECT_EQ(store->EventsAfter(7, 100)->size(), 0u);
}

TEST(SqliteStoreTest, WriteIsAllOrNothing) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  ASSERT_TRUE(store->CreateJob(Request("a"), Seconds{1}).ok());
  const JobRecord before = *store->GetJob(1);

  JobRecord changed = before;
  changed.state = JobRecordState::kRunning;
  JobRecord missing = before;
  missing.id = 99;
  // A good update and event, then an update of a job that does not exist.
  absl::Status status = store->Write(
      {{changed, missing}, {{1, 0, Seconds{2}, "started", ""}}});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "job 99: no such job");
  EXPECT_EQ(*store->GetJob(1), before);

  // A good update, then an event for a job that does not exist.
  status = store->Write({{changed},
                         {{1, 0, Seconds{2}, "started", ""},
                          {42, 0, Seconds{2}, "started", ""}}});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "event \"started\" of job 42: no such job");
  EXPECT_EQ(*store->GetJob(1), before);

  // A number that cannot be stored: rejected before anything is written.
  changed.attained_gpu_seconds = std::nan("");
  status = store->UpdateJob(changed, {{1, 0, Seconds{2}, "started", ""}});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("job 1: attained_gpu_seconds"));
  EXPECT_EQ(*store->GetJob(1), before);

  // The store is still usable after failed writes.
  changed.attained_gpu_seconds = 3;
  ASSERT_TRUE(store->UpdateJob(changed, {{1, 0, Seconds{2}, "started", ""}}).ok());
  EXPECT_EQ(store->GetJob(1)->events.size(), 2u);
}

TEST(SqliteStoreTest, UnknownJobsAreNotFound) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  EXPECT_EQ(store->GetJob(42).status().message(), "job 42: no such job");
  EXPECT_EQ(store->Events(42).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->AppendEvent(42, Seconds{1}, "x", "").code(),
            absl::StatusCode::kNotFound);
}

TEST(SqliteStoreTest, NodesUpsertByNameKeepingTheirIds) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  NodeRecord a{0, "node-a", "10.0.0.1", 8, NodeState::kUp, Seconds{100.5}};
  NodeRecord b{0, "node-b", "10.0.0.2", 4, NodeState::kUp, Seconds{101}};
  EXPECT_EQ(*store->UpsertNode(a), 1);
  EXPECT_EQ(*store->UpsertNode(b), 2);
  a.address = "10.0.0.9";
  a.gpus = 6;
  a.state = NodeState::kDown;
  a.last_heartbeat = Seconds{200.25};
  EXPECT_EQ(*store->UpsertNode(a), 1);
  a.id = 1;
  b.id = 2;
  EXPECT_THAT(*store->ListNodes(), ElementsAre(a, b));
  EXPECT_EQ(store->UpsertNode(NodeRecord{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The master names a new node's id (its next) so that the row can go
// with a grouped commit (StoreWrite::nodes); the store's own next follows.
TEST(SqliteStoreTest, ANewNodeTakesTheIdGiven) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  NodeRecord e{5, "node-e", "10.0.0.5", 8, NodeState::kUp, Seconds{1}};
  EXPECT_EQ(*store->UpsertNode(e), 5);
  EXPECT_EQ(*store->UpsertNode({0, "node-f", "10.0.0.6", 8}), 6);
  EXPECT_EQ(*store->UpsertNode(e), 5);  // the same name and id: an update
  e.id = 9;  // a row of this name keeps its own id
  EXPECT_EQ(*store->UpsertNode(e), 5);
  StoreWrite write;
  write.nodes = {{7, "node-g", "10.0.0.7", 4, NodeState::kUp, Seconds{2}}};
  ASSERT_TRUE(store->Write(write).ok());
  const std::vector<NodeRecord> nodes = *store->ListNodes();
  std::vector<int64_t> ids;
  for (const NodeRecord& node : nodes) ids.push_back(node.id);
  EXPECT_THAT(ids, ElementsAre(5, 6, 7));
  // An id held by another name: refused, nothing written.
  write.nodes = {{6, "node-h", "10.0.0.8", 4, NodeState::kUp, Seconds{3}}};
  EXPECT_FALSE(store->Write(write).ok());
  EXPECT_EQ(store->ListNodes()->size(), 3u);
}

TEST(SqliteStoreTest, ConcurrentSubmissionsGetDistinctIds) {
  TestDir dir;
  auto store = MustOpen(dir.File("state.db"));
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::vector<JobId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto id = store->CreateJob(Request("c"), Seconds{1});
        if (id.ok()) ids[t].push_back(*id);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<bool> seen(kThreads * kEach + 1, false);
  for (const auto& list : ids) {
    ASSERT_EQ(list.size(), static_cast<size_t>(kEach));
    for (size_t i = 1; i < list.size(); ++i) EXPECT_LT(list[i - 1], list[i]);
    for (JobId id : list) {
      ASSERT_TRUE(id >= 1 && id <= kThreads * kEach) << id;
      EXPECT_FALSE(seen[id]) << id;
      seen[id] = true;
    }
  }
  EXPECT_EQ(store->ListJobs()->size(), static_cast<size_t>(kThreads * kEach));
}

}  // namespace
}  // namespace tiresias
