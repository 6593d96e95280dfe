// Job arrays in the master: MasterState with a fake clock, real SQLite and
// agents' reports by hand (ArrayTest), and the client API over real gRPC on
// loopback (ArrayGrpcTest). An array is made whole or not at all, its jobs
// share the first one's id as their array id, and its running limit holds
// at every step: at most N of its jobs are in the node's desired state at
// once, also after a master restart.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "array_test_util.h"
#include "front_door_test_util.h"
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

class ArrayTest : public master_testing::ArrayFixture {
 protected:
  static JobRequest ArraySpec(const std::string& indices, int max_running) {
    JobRequest spec = Spec(1);
    spec.name = "sweep";
    spec.array = {indices, max_running};
    return spec;
  }
};

// Six jobs, ids 1..6, indices 0..5, array id 1; the spec is each job's.
TEST_F(ArrayTest, OneJobPerIndexWithTheFirstIdAsArrayId) {
  Open();
  const MasterState::SubmitResult made =
      SubmitArray(ArraySpec("0-15:4,20,2", 0));
  EXPECT_EQ(made.id, 1);
  EXPECT_FALSE(made.existing);
  EXPECT_EQ(made.array_job_ids, (std::vector<JobId>{1, 2, 3, 4, 5, 6}));
  const std::vector<int> indices = {0, 2, 4, 8, 12, 20};  // ascending
  for (JobId id = 1; id <= 6; ++id) {
    const JobRecord rec = Get(id);
    EXPECT_EQ(rec.array_id, 1);
    EXPECT_EQ(rec.array_index, indices[id - 1]);
    EXPECT_EQ(rec.spec.array.indices, "0-15:4,20,2");
  }
  // A job submitted after it is in no array.
  const JobId single = Submit(Spec(1));
  EXPECT_EQ(single, 7);
  EXPECT_EQ(Get(single).array_id, 0);
}

// Job 3 of the array would reuse a request id taken by another spec: the
// whole array is refused and nothing of it is stored (ids 2.. stay free;
// the next job gets 2).
TEST_F(ArrayTest, ArrayIsAllOrNothing) {
  Open();
  ASSERT_TRUE(master_->SubmitJob(Spec(2), "sweep-req#3").ok());  // job 1
  auto refused = master_->SubmitJob(ArraySpec("0-5", 2), "sweep-req");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("request_id \"sweep-req#3\": already used for job 1"));
  auto listed = master_->ListJobs();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u);
  // Ids given inside the rolled-back transaction are given again.
  const MasterState::SubmitResult made = SubmitArray(ArraySpec("0-1", 0));
  EXPECT_EQ(made.array_job_ids.size(), 2u);
  listed = master_->ListJobs();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 3u);
  // The same request again: the same jobs, nothing new.
  const MasterState::SubmitResult first =
      SubmitArray(ArraySpec("0-2", 1), "again");
  const MasterState::SubmitResult second =
      SubmitArray(ArraySpec("0-2", 1), "again");
  EXPECT_TRUE(second.existing);
  EXPECT_EQ(second.id, first.id);
  EXPECT_EQ(second.array_job_ids, first.array_job_ids);
}

// Every bad request is refused at the door, naming the field, and stores
// nothing.
TEST_F(ArrayTest, BadArraysAreRefusedNamingTheField) {
  Open();
  struct Case {
    JobArraySpec array;
    const char* says;
  };
  for (const Case& c : {
           Case{{"5-2", 0}, "spec.array: \"5-2\": range ends (2) before it "
                            "starts (5)"},
           Case{{"a-b", 0}, "spec.array: \"a-b\": range bounds must be"},
           Case{{"0-10000", 0}, "at most 10000 jobs in one array"},
           Case{{"0-99", -1}, "spec.array: running limit %-1: expected 1"},
           Case{{"", 4}, "spec.array.indices: no indices, but a running "
                         "limit of 4"},
           Case{{"1,1", 0}, "index 1 is given twice"},
       }) {
    JobRequest spec = Spec(1);
    spec.array = c.array;
    auto refused = master_->SubmitJob(spec, "");
    ASSERT_FALSE(refused.ok()) << c.says;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr(c.says));
  }
  // 10,000 copies of a 100 KiB environment: about 1 GiB, refused.
  JobRequest big = ArraySpec("0-9999", 0);
  for (const char* name : {"D1", "D2", "D3", "D4"}) {
    big.env[name] = std::string(25 * 1024, 'x');
  }
  auto too_big = master_->SubmitJob(big, "");
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_big.status().message()),
              HasSubstr("spec.array: 10000 jobs of about 100 KiB each take "));
  EXPECT_THAT(std::string(too_big.status().message()),
              HasSubstr("at most 64 MiB in one array"));
  auto listed = master_->ListJobs();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  // Arrays go through SubmitJob, not SubmitJobs.
  auto bulk = master_->SubmitJobs({Spec(1), ArraySpec("0-1", 0)}, "");
  ASSERT_FALSE(bulk.ok());
  EXPECT_THAT(std::string(bulk.status().message()),
              HasSubstr("jobs[1].array: a job array is submitted on its own"));
}

// 0-5%2 on a node with 4 free GPUs: jobs 1 and 2 start; 3..6 wait with the
// array-limit reason though GPUs are free. Each end lets exactly the next
// lowest id in: never more than 2 in the desired state.
TEST_F(ArrayTest, RunningLimitHoldsAtEveryStep) {
  Open();
  const int64_t n1 = Register("n1", 4);
  SubmitArray(ArraySpec("0-5", 2));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  EXPECT_EQ(Ids(desired), (std::vector<JobId>{1, 2}));
  const JobRecord waiting = Get(3);
  EXPECT_EQ(waiting.state, JobRecordState::kPending);
  EXPECT_EQ(waiting.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  EXPECT_EQ(waiting.pending_reason,
            "array limit: 2 of array 1's jobs running, at most 2 at once");
  std::vector<JobId> started = {1, 2};
  std::vector<v1::TaskStatus> tasks = {Running(1, desired[1]),
                                       Running(2, desired[2])};
  JobId next = 3;
  while (!tasks.empty()) {
    clock_.Advance(Seconds{5});
    Pass();
    desired = Desired(n1, tasks);
    ASSERT_LE(desired.size(), 2u);
    // The oldest running one exits; the next pass starts exactly one more.
    const v1::TaskStatus done = tasks.front();
    tasks.erase(tasks.begin());
    tasks.push_back(Exited(done.task().job_id(),
                           {done.gpu_indexes().begin(),
                            done.gpu_indexes().end()}));
    Beat(n1, tasks);
    tasks.pop_back();  // acknowledged: the agent forgets it
    EXPECT_EQ(Get(done.task().job_id()).state, JobRecordState::kFinished);
    Pass();
    desired = Desired(n1, tasks);
    ASSERT_LE(desired.size(), 2u);
    if (next <= 6) {
      ASSERT_TRUE(desired.contains(next)) << "job " << next;
      tasks.push_back(Running(next, desired[next]));
      started.push_back(next);
      ++next;
    } else {
      EXPECT_EQ(desired.size(), tasks.size());
    }
  }
  EXPECT_EQ(started, (std::vector<JobId>{1, 2, 3, 4, 5, 6}));
}

// 0-3%1: job 1 runs; the master restarts; job 1 is re-adopted and 2..4
// still wait for the slot (the limit is in the stored spec). When 1 ends,
// 2 starts, alone.
TEST_F(ArrayTest, RestartKeepsTheLimit) {
  Open();
  int64_t n1 = Register("n1", 4);
  SubmitArray(ArraySpec("0-3", 1));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  ASSERT_EQ(Ids(desired), std::vector<JobId>{1});
  const v1::TaskStatus running = Running(1, desired[1]);
  Beat(n1, {running});
  master_.reset();
  Open();
  n1 = Register("n1", 4, {running});
  Pass();
  clock_.Advance(Seconds{5});
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {running})), std::vector<JobId>{1});
  EXPECT_EQ(Get(1).state, JobRecordState::kRunning);
  for (JobId id : {2, 3, 4}) {
    EXPECT_EQ(Get(id).pending_reason_kind,
              static_cast<int>(PendingReasonKind::kArrayLimit))
        << "job " << id;
  }
  Beat(n1, {Exited(1, desired[1])});
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {})), std::vector<JobId>{2});
}

// A restarted master gives the slot to the job that ran (preempted, to
// resume) rather than to a lower id that never ran.
TEST_F(ArrayTest, RestartGivesTheSlotToAJobThatRan) {
  Open();
  const int64_t n1 = Register("n1", 1);
  SubmitArray(ArraySpec("0-2", 1));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  ASSERT_EQ(Ids(desired), std::vector<JobId>{1});
  Beat(n1, {Running(1, desired[1])});
  // Job 1 is requeued (a preemption): it waits to resume, keeping its slot.
  auto requeued = master_->UpdateJobs(JobAction::kRequeue, {1}, Anyone);
  ASSERT_TRUE(requeued.ok());
  ASSERT_TRUE((*requeued)[0].status.ok()) << (*requeued)[0].status;
  v1::TaskStatus stopped = Task(1, 1, 0, v1::TASK_STATE_PREEMPTED, desired[1],
                                143, 1000.0);
  stopped.set_end_time(1001.0);
  Beat(n1, {stopped});
  EXPECT_EQ(Get(1).state, JobRecordState::kPreempted);
  EXPECT_EQ(Get(2).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  master_.reset();
  Open();
  EXPECT_EQ(Get(2).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  EXPECT_NE(Get(1).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
}

// A user's hold gives the slot back; the refill skips held jobs; a release
// waits for a free slot.
TEST_F(ArrayTest, HeldJobsGiveTheirSlotAndAreSkipped) {
  Open();
  const int64_t n1 = Register("n1", 4);
  SubmitArray(ArraySpec("0-2", 1));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  ASSERT_EQ(Ids(desired), std::vector<JobId>{1});
  Beat(n1, {Running(1, desired[1])});
  auto held = master_->UpdateJobs(JobAction::kHold, {2}, Anyone);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE((*held)[0].status.ok()) << (*held)[0].status;
  Beat(n1, {Exited(1, desired[1])});
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {})), std::vector<JobId>{3});  // 2 is held
  auto released = master_->UpdateJobs(JobAction::kRelease, {2}, Anyone);
  ASSERT_TRUE(released.ok());
  ASSERT_TRUE((*released)[0].status.ok()) << (*released)[0].status;
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {})), std::vector<JobId>{3});
  EXPECT_EQ(Get(2).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  // Job 3, which holds the slot, is cancelled (its task never reported:
  // the next report ends it); the released job 2 gets the slot.
  ASSERT_TRUE(master_->CancelJob(3).ok());
  Beat(n1, {});
  EXPECT_EQ(Get(3).state, JobRecordState::kCancelled);
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {})), std::vector<JobId>{2});
}

// 0-2%1 on 4 GPUs: job 1 runs, is requeued (its task checkpoints, still
// alive) and then held, which gives its slot back. Job 2 must not get the
// slot while job 1's task is still stopping (it waits for the array limit,
// not merely for GPUs being freed): that would let two of the array's jobs
// have live processes under a limit of 1. Once the task reports its end,
// job 2 starts.
// Job I of an array is stored with the request id "<id>#<I>": an id that
// leaves no room for the suffix within 128 bytes (as SubmitJobs) is
// refused, and one of 120 bytes is taken.
TEST_F(ArrayTest, AnArraysRequestIdLeavesRoomForTheIndex) {
  Open();
  auto refused = master_->SubmitJob(ArraySpec("0-9999", 0),
                                    std::string(121, 'r'));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("request_id: expected at most 120 bytes for a job "
                        "array, got 121"));
  EXPECT_TRUE(master_->SubmitJob(ArraySpec("0-1", 0), std::string(120, 'r'))
                  .ok());
}

TEST_F(ArrayTest, AJobHeldWhileStoppingKeepsTheLimitUntilItsTaskEnds) {
  Open();
  const int64_t n1 = Register("n1", 4);
  SubmitArray(ArraySpec("0-2", 1));
  Pass();
  std::map<JobId, std::vector<int>> desired = Desired(n1, {});
  ASSERT_EQ(Ids(desired), std::vector<JobId>{1});
  const v1::TaskStatus running = Running(1, desired[1]);
  Beat(n1, {running});
  auto requeued = master_->UpdateJobs(JobAction::kRequeue, {1}, Anyone);
  ASSERT_TRUE(requeued.ok());
  ASSERT_TRUE((*requeued)[0].status.ok()) << (*requeued)[0].status;
  auto held = master_->UpdateJobs(JobAction::kHold, {1}, Anyone);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE((*held)[0].status.ok()) << (*held)[0].status;
  Pass();
  clock_.Advance(Seconds{1});
  Pass();
  // Still checkpointing: the agent reports the task running.
  EXPECT_EQ(Ids(Desired(n1, {running})), std::vector<JobId>{});
  EXPECT_EQ(Get(2).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kArrayLimit));
  v1::TaskStatus stopped = Task(1, 1, 0, v1::TASK_STATE_PREEMPTED, desired[1],
                                143, 1000.0);
  stopped.set_end_time(1001.0);
  Beat(n1, {stopped});
  Pass();
  EXPECT_EQ(Ids(Desired(n1, {})), std::vector<JobId>{2});
}

// cancel --array: every unfinished job of that array, and no other job.
TEST_F(ArrayTest, CancelByArrayTakesTheWholeArrayOnly) {
  Open();
  const JobId other = Submit(Spec(1));
  const MasterState::SubmitResult made = SubmitArray(ArraySpec("0-3", 2));
  const MasterState::SubmitResult second = SubmitArray(ArraySpec("0-1", 0));
  MasterState::JobFilter filter;
  filter.array_id = made.id;
  auto results =
      master_->UpdateMatchingJobs(JobAction::kCancel, filter, Anyone);
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<JobId> acted;
  for (const auto& r : *results) {
    EXPECT_TRUE(r.status.ok()) << r.status;
    acted.push_back(r.id);
  }
  EXPECT_EQ(acted, made.array_job_ids);
  for (JobId id : made.array_job_ids) {
    EXPECT_EQ(Get(id).state, JobRecordState::kCancelled);
  }
  EXPECT_EQ(Get(other).state, JobRecordState::kPending);
  for (JobId id : second.array_job_ids) {
    EXPECT_EQ(Get(id).state, JobRecordState::kPending);
  }
  // Listing by array: that array's jobs, in id order.
  MasterState::JobListQuery query;
  query.array_id = second.id;
  auto page = master_->ListJobsPage(query);
  ASSERT_TRUE(page.ok());
  std::vector<JobId> listed;
  for (const JobRecord& rec : page->jobs) listed.push_back(rec.id);
  EXPECT_EQ(listed, second.array_job_ids);
}

}  // namespace

namespace master_testing {
namespace {

class ArrayGrpcTest : public FrontDoorTest {};

// Over the wire: the answer lists the array's jobs, ListJobs filters by
// array, UpdateJobs acts on an array, and bad requests name the field.
TEST_F(ArrayGrpcTest, SubmitListAndCancelAnArray) {
  Start();
  v1::SubmitJobRequest req = Request("sweep");
  req.mutable_spec()->mutable_array()->set_indices("1-3,7");
  req.mutable_spec()->mutable_array()->set_max_running(2);
  v1::SubmitJobResponse resp;
  ASSERT_TRUE(Submit(req, &resp).ok());
  EXPECT_EQ(resp.job_id(), 1);
  EXPECT_THAT(resp.array_job_ids(), ::testing::ElementsAre(1, 2, 3, 4));
  v1::SubmitJobResponse single;
  ASSERT_TRUE(Submit(Request("single"), &single).ok());
  EXPECT_EQ(single.job_id(), 5);
  EXPECT_EQ(single.array_job_ids_size(), 0);

  v1::ListJobsRequest list_req;
  list_req.set_array_id(1);
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), list_req, &list).ok());
  ASSERT_EQ(list.jobs_size(), 4);
  const int indices[] = {1, 2, 3, 7};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(list.jobs(i).array_id(), 1);
    EXPECT_EQ(list.jobs(i).array_index(), indices[i]);
    EXPECT_EQ(list.jobs(i).spec().array().indices(), "1-3,7");
    EXPECT_EQ(list.jobs(i).spec().array().max_running(), 2);
  }
  list_req.set_array_id(-1);
  grpc::Status bad = stub_->ListJobs(Context().get(), list_req, &list);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), ::testing::StartsWith("array_id: "));

  v1::UpdateJobsRequest cancel;
  cancel.set_action(v1::JOB_ACTION_CANCEL);
  cancel.set_array_id(1);
  v1::UpdateJobsResponse cancelled;
  ASSERT_TRUE(
      stub_->UpdateJobs(Context().get(), cancel, &cancelled).ok());
  ASSERT_EQ(cancelled.results_size(), 4);
  for (const v1::JobActionResult& r : cancelled.results()) {
    EXPECT_EQ(r.code(), 0) << r.error();
    EXPECT_EQ(r.state(), v1::JOB_STATE_CANCELLED);
  }
  v1::GetJobRequest get;
  get.set_job_id(5);
  v1::GetJobResponse job;
  ASSERT_TRUE(stub_->GetJob(Context().get(), get, &job).ok());
  EXPECT_EQ(job.job().state(), v1::JOB_STATE_PENDING);
  cancel.add_job_ids(5);
  grpc::Status both = stub_->UpdateJobs(Context().get(), cancel, &cancelled);
  EXPECT_EQ(both.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(both.error_message(), HasSubstr("not both"));

  req.mutable_spec()->mutable_array()->set_indices("5-2");
  bad = Submit(req, &resp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(),
              ::testing::StartsWith("spec.array: \"5-2\": range ends"));
  v1::SubmitJobsRequest bulk;
  *bulk.add_jobs() = req.spec();
  v1::SubmitJobsResponse bulk_resp;
  bad = stub_->SubmitJobs(Context().get(), bulk, &bulk_resp);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace master_testing
}  // namespace tiresias
