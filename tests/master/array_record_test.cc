// A job array stored as one record (issue 28): MasterState with a fake
// clock, real SQLite and agents' reports by hand. The state file is read
// directly (its jobs table) to see what is written, apart from what the
// master shows: an array is one row until its jobs are needed, every read
// shows all its jobs, and what happens to one of them (cancel, hold,
// update, a restart in between) is what would happen to a job written at
// submission. Each job runs once, in index order.
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "array_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using master_testing::Spec;
using master_testing::Starts;
using master_testing::Task;
using ::testing::HasSubstr;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

class ArrayRecordTest : public master_testing::ArrayFixture {
 protected:
  static JobRequest ArraySpec(const std::string& indices, bool hold = false) {
    JobRequest spec = Spec(1);
    spec.name = "sweep";
    spec.user = "alice";
    spec.array = {indices, 0};
    spec.hold = hold;
    return spec;
  }
  // Rows in the state file's jobs table: what is written. The master holds
  // the file exclusively: it is closed for the read and opened again (a
  // restart).
  int64_t Rows() {
    master_.reset();
    sqlite3* db = nullptr;
    const std::string path = options_.state_dir + "/state.db";
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
              SQLITE_OK);
    int64_t rows = -1;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &stmt,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      rows = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    Open();
    return rows;
  }
  std::vector<JobRecord> List(MasterState::JobListQuery query = {}) {
    auto page = master_->ListJobsPage(query);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->jobs : std::vector<JobRecord>();
  }
  static bool OnlyBob(const JobRecord& job) { return job.spec.user == "bob"; }
};

// 10,000 held jobs: one row; every job is there to every read, with its
// index, held, pending; the metrics count them; the next job's id follows
// the array's last.
TEST_F(ArrayRecordTest, AHeldArrayIsOneRowAndEveryJobToReads) {
  Open();
  const MasterState::SubmitResult made =
      SubmitArray(ArraySpec("1-10000", /*hold=*/true), "sweep-req");
  ASSERT_EQ(made.array_job_ids.size(), 10000u);
  EXPECT_EQ(made.array_job_ids.back(), made.id + 9999);
  EXPECT_EQ(Rows(), 1);
  const JobRecord job = Get(made.id + 4321);
  EXPECT_EQ(job.id, made.id + 4321);
  EXPECT_EQ(job.array_id, made.id);
  EXPECT_EQ(job.array_index, 4322);
  EXPECT_EQ(job.state, JobRecordState::kPending);
  EXPECT_TRUE(job.held);
  EXPECT_EQ(job.spec.name, "sweep");
  EXPECT_EQ(job.request_id, "sweep-req#4321");
  EXPECT_EQ(job.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kHeld));
  ASSERT_EQ(job.events.size(), 1u);
  EXPECT_EQ(job.events[0].kind, "submitted");
  // Listings: all of them, in pages that do not skip or repeat one.
  MasterState::JobListQuery query;
  query.limit = 3000;
  std::vector<JobId> listed;
  while (true) {
    auto page = master_->ListJobsPage(query);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const JobRecord& rec : page->jobs) listed.push_back(rec.id);
    if (!page->more) break;
    query.after_id = page->jobs.back().id;
  }
  EXPECT_EQ(listed, made.array_job_ids);
  query = {};
  query.state = JobRecordState::kRunning;
  EXPECT_TRUE(List(query).empty());
  auto metrics = master_->SnapshotMetrics();
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->jobs_by_state[JobRecordState::kPending], 10000);
  EXPECT_EQ(metrics->jobs_submitted, 10000);
  // A job after it gets the next id, also after a restart.
  EXPECT_EQ(Submit(Spec(1)), made.id + 10000);
  master_.reset();
  Open();
  EXPECT_EQ(Submit(Spec(1)), made.id + 10001);
  EXPECT_EQ(Get(made.id + 9999).array_index, 10000);
  EXPECT_EQ(Rows(), 3);
  // The same request again: the same array, nothing written.
  const MasterState::SubmitResult again =
      SubmitArray(ArraySpec("1-10000", /*hold=*/true), "sweep-req");
  EXPECT_TRUE(again.existing);
  EXPECT_EQ(again.array_job_ids, made.array_job_ids);
  EXPECT_EQ(Rows(), 3);
}

// Cancelling job 50 of a held array of 100 writes the jobs through it and
// ends that one alone; a restart keeps it so; releasing the array runs the
// other 99, each once, in index order; job 50 never runs.
TEST_F(ArrayRecordTest, ACancelledUnwrittenJobNeverRunsAndTheRestRunOnce) {
  Open();
  const MasterState::SubmitResult made =
      SubmitArray(ArraySpec("0-99", /*hold=*/true));
  const JobId cancelled = made.id + 50;
  auto results = master_->UpdateJobs(JobAction::kCancel, {cancelled}, Anyone);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
  EXPECT_EQ(Rows(), 51);
  EXPECT_EQ(Get(cancelled).state, JobRecordState::kCancelled);
  EXPECT_EQ(Get(cancelled + 1).state, JobRecordState::kPending);
  master_.reset();
  Open();
  const int64_t node = Register("n1", 2);
  EXPECT_EQ(Get(cancelled).state, JobRecordState::kCancelled);
  EXPECT_EQ(Get(made.id + 99).state, JobRecordState::kPending);
  MasterState::JobFilter filter;
  filter.array_id = made.id;
  auto released =
      master_->UpdateMatchingJobs(JobAction::kRelease, filter, Anyone);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->size(), 99u);  // every unfinished job of the array
  // Two at a time on the node's two GPUs; each exits after a pass.
  std::vector<JobId> started;
  std::vector<v1::TaskStatus> tasks;
  for (int round = 0; round < 200 && started.size() < 99; ++round) {
    Pass();
    for (const auto& [id, gpus] : Desired(node, tasks)) {
      if (std::find(started.begin(), started.end(), id) != started.end()) {
        continue;
      }
      started.push_back(id);
      tasks.push_back(Task(id, 1, 0, TASK_STATE_EXITED, gpus, 0, 1000.0));
    }
    clock_.Advance(Seconds{1});
    Beat(node, tasks);
    tasks.clear();
  }
  std::vector<JobId> expected;
  for (JobId id = made.id; id < made.id + 100; ++id) {
    if (id != cancelled) expected.push_back(id);
  }
  EXPECT_EQ(started, expected);
  for (JobId id : expected) {
    EXPECT_EQ(Get(id).state, JobRecordState::kFinished) << "job " << id;
  }
  EXPECT_EQ(Get(cancelled).state, JobRecordState::kCancelled);
}

// An array not held, of 1-GPU jobs, on a node of 2 GPUs: only a few jobs
// are written ahead of the scheduler (as many waiting as it could start,
// and one behind them: 3), the rest stay one row's count; a job submitted
// after the array waits behind all of it, though written before most.
TEST_F(ArrayRecordTest, TheSchedulerSeesOnlyAWindowOfTheArrayInOrder) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const MasterState::SubmitResult made = SubmitArray(ArraySpec("0-999"));
  const JobId later = Submit(Spec(1));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  std::vector<JobId> ids;
  for (const auto& [id, gpus] : desired) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<JobId>{made.id, made.id + 1}));
  // Job 500, not written, waits behind the 498 jobs of the array between
  // the two running ones and it (as job 4, written, waits behind 2).
  const JobRecord unwritten = Get(made.id + 500);
  EXPECT_EQ(unwritten.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kPriority));
  EXPECT_THAT(unwritten.pending_reason,
              HasSubstr("in queue 0 behind 498 waiting jobs"));
  EXPECT_THAT(Get(made.id + 4).pending_reason,
              HasSubstr("in queue 0 behind 2 waiting jobs"));
  // 2 starting and 3 waiting written, and the later job: 6 rows, not 1,001.
  EXPECT_EQ(Rows(), 6);
  EXPECT_EQ(Get(made.id + 500).state, JobRecordState::kPending);
  EXPECT_EQ(Get(later).state, JobRecordState::kPending);
}

// Another user can neither act on an unwritten job nor make the master
// write it: refused, nothing written. The owner's hold of one job holds
// that job alone.
TEST_F(ArrayRecordTest, AnotherUserCannotTouchOrSplitAnArray) {
  Open();
  const MasterState::SubmitResult made =
      SubmitArray(ArraySpec("0-99", /*hold=*/true));
  auto refused =
      master_->UpdateJobs(JobAction::kCancel, {made.id + 70}, OnlyBob);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)[0].status.code(), absl::StatusCode::kPermissionDenied);
  MasterState::JobFilter filter;
  filter.array_id = made.id;
  auto matched =
      master_->UpdateMatchingJobs(JobAction::kCancel, filter, OnlyBob);
  ASSERT_TRUE(matched.ok());
  EXPECT_TRUE(matched->empty());
  EXPECT_EQ(Rows(), 1);
  EXPECT_EQ(Get(made.id + 70).state, JobRecordState::kPending);
}

// A request id an array's unwritten job will take is taken: a plain job
// submitted with "<base>#5" is refused, and an array whose job would take
// a stored job's request id is refused whole.
TEST_F(ArrayRecordTest, RequestIdsOfUnwrittenJobsAreTaken) {
  Open();
  SubmitArray(ArraySpec("0-9", /*hold=*/true), "grid");
  JobRequest plain = Spec(1);
  plain.user = "alice";
  auto taken = master_->SubmitJob(plain, "grid#5");
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kAlreadyExists);
  // Another user's same key is another job.
  plain.user = "bob";
  EXPECT_TRUE(master_->SubmitJob(plain, "grid#5").ok());
  plain.user = "alice";
  ASSERT_TRUE(master_->SubmitJob(plain, "other#7").ok());
  auto whole = master_->SubmitJob(ArraySpec("0-9"), "other");
  ASSERT_FALSE(whole.ok());
  EXPECT_THAT(std::string(whole.status().message()),
              HasSubstr("request_id \"other#7\": already used"));
  // 7 jobs: request ids other#0 .. other#6.
  EXPECT_TRUE(master_->SubmitJob(ArraySpec("0-6"), "other").ok());
}

// `update` of the array's first job changes that job only: the jobs
// written later are made from the array's spec as submitted.
TEST_F(ArrayRecordTest, UpdatingTheFirstJobLeavesTheOthersAsSubmitted) {
  Open();
  Register("n1", 4);
  JobRequest spec = ArraySpec("0-3", /*hold=*/true);
  const MasterState::SubmitResult made = SubmitArray(spec);
  ASSERT_TRUE(
      master_
          ->ModifyJob(made.id, {.time_limit = Seconds{60}, .gpus = 2}, nullptr)
          .ok());
  EXPECT_EQ(Get(made.id).spec.num_gpus, 2);
  EXPECT_EQ(Get(made.id + 3).spec.num_gpus, 1);
  auto released =
      master_->UpdateJobs(JobAction::kRelease, {made.id + 3}, Anyone);
  ASSERT_TRUE(released.ok());
  const JobRecord written = Get(made.id + 3);
  EXPECT_EQ(written.spec.num_gpus, 1);
  EXPECT_EQ(written.spec.time_limit, Seconds{0});
  EXPECT_FALSE(written.held);
  EXPECT_TRUE(Get(made.id + 2).held);
}

// The queue's order is the array's submission's: a job submitted after
// an array of 6 runs after all of them, on one GPU, also when the master
// restarts in between (the unwritten jobs take their place again).
TEST_F(ArrayRecordTest, AJobSubmittedAfterTheArrayRunsAfterAllOfIt) {
  Open();
  Register("n1", 1);
  const MasterState::SubmitResult made = SubmitArray(ArraySpec("0-5"));
  const JobId later = Submit(Spec(1));
  std::vector<JobId> started;
  for (int round = 0; round < 40 && started.size() < 7; ++round) {
    if (round == 2) {
      master_.reset();
      Open();
    }
    const int64_t node = Register("n1", 1);
    Pass();
    std::vector<v1::TaskStatus> ended;
    for (const auto& [id, gpus] : Desired(node, {})) {
      started.push_back(id);
      ended.push_back(Task(id, 1, 0, TASK_STATE_EXITED, gpus, 0, 1000.0));
    }
    clock_.Advance(Seconds{1});
    Beat(node, ended);
  }
  std::vector<JobId> expected = made.array_job_ids;
  expected.push_back(later);
  EXPECT_EQ(started, expected);
}

// An array waiting on a job: its unwritten jobs say so (as its written
// ones do). When the job is cancelled the dependency can never be met, and
// every job of the array ends failed at once, held or not; so does a job
// waiting for the array to fail (afternotok on the array's id) start.
TEST_F(ArrayRecordTest, AnArrayWhoseDependencyCanNeverBeMetEndsWhole) {
  Open();  // no node: nothing starts, the blocker is cancelled waiting
  const JobId blocker = Submit(Spec(1));
  JobRequest spec = ArraySpec("0-99");
  spec.dependencies = {{DependencyKind::kAfterOk, blocker}};
  const MasterState::SubmitResult waiting = SubmitArray(spec);
  spec.hold = true;
  const MasterState::SubmitResult held = SubmitArray(spec);
  JobRequest cleanup = Spec(1);
  cleanup.dependencies = {{DependencyKind::kAfterNotOk, waiting.id}};
  const JobId after = Submit(cleanup);
  Pass();
  const JobRecord unwritten = Get(waiting.id + 57);
  EXPECT_EQ(unwritten.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kDependency));
  EXPECT_TRUE(unwritten.waiting_on_dependencies);
  EXPECT_EQ(Get(held.id + 57).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kHeld));
  // The CancelJob call too takes an unwritten job.
  auto cancelled = master_->CancelJob(blocker);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  Pass();
  for (const MasterState::SubmitResult* array : {&waiting, &held}) {
    for (JobId id : array->array_job_ids) {
      EXPECT_EQ(Get(id).state, JobRecordState::kFailed) << "job " << id;
    }
  }
  EXPECT_NE(Get(after).state, JobRecordState::kFailed);
  EXPECT_FALSE(Get(after).waiting_on_dependencies);
}

// The CancelJob call on a job not written yet cancels it (it never runs);
// a VC or QOS with an array's unwritten jobs cannot be removed.
TEST_F(ArrayRecordTest, CancelJobAndRemovalsSeeUnwrittenJobs) {
  Open();
  ASSERT_TRUE(
      master_->SetQos(QosRecord{.name = "q", .priority = 1}, true).ok());
  JobRequest spec = ArraySpec("0-9", /*hold=*/true);
  spec.qos = "q";
  const MasterState::SubmitResult made = SubmitArray(spec);
  auto cancelled = master_->CancelJob(made.id + 7);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(Get(made.id + 7).state, JobRecordState::kCancelled);
  EXPECT_EQ(Get(made.id + 8).state, JobRecordState::kPending);
  // Jobs 0-7 written, 8 and 9 not: 9 unfinished, one of them unwritten
  // after the cancelled one.
  MasterState::JobFilter filter;
  filter.array_id = made.id;
  filter.state = JobRecordState::kPending;
  ASSERT_TRUE(master_
                  ->UpdateJobs(JobAction::kCancel,
                               {made.id, made.id + 1, made.id + 2, made.id + 3,
                                made.id + 4, made.id + 5, made.id + 6},
                               Anyone)
                  .ok());
  absl::Status removed = master_->RemoveQos("q");
  EXPECT_EQ(removed.code(), absl::StatusCode::kFailedPrecondition) << removed;
  EXPECT_THAT(std::string(removed.message()), HasSubstr("has 2 unfinished"));
  ASSERT_TRUE(
      master_->UpdateMatchingJobs(JobAction::kCancel, filter, Anyone).ok());
  EXPECT_TRUE(master_->RemoveQos("q").ok());
}

}  // namespace
}  // namespace tiresias
