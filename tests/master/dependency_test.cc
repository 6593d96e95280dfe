// Job dependencies in MasterState (fake clock, real SQLite, agents'
// reports by hand): a dependent job is never started before its
// dependencies are met, ends failed when one can never be, keeps waiting
// across a master restart, and the jobs it may name are checked at
// submission.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias {
namespace {

using master_testing::MasterFixture;
using master_testing::Spec;
using master_testing::Starts;
using master_testing::Task;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

class DependencyTest : public MasterFixture {
 protected:
  static JobRequest After(DependencyKind kind, std::vector<JobId> ids) {
    JobRequest spec = Spec(1);
    for (JobId id : ids) spec.dependencies.push_back({kind, id});
    return spec;
  }
  // The jobs the node is told to run, as a heartbeat reporting `tasks`
  // (the tasks it has) is answered.
  std::vector<JobId> Running(int64_t node,
                             std::vector<v1::TaskStatus> tasks = {}) {
    std::vector<JobId> ids;
    for (const v1::StartTask& s : Starts(Beat(node, tasks))) {
      ids.push_back(s.task().job_id());
    }
    return ids;
  }
  // Job `id`'s only task, attempt 1, on GPU `gpu`, exited with `code`.
  void Exit(int64_t node, JobId id, int gpu, int code) {
    Beat(node, {Task(id, 1, 0, TASK_STATE_EXITED, {gpu}, code, 1000.0)});
  }
  bool HasEvent(JobId id, const std::string& kind, const std::string& text) {
    for (const JobEvent& e : Get(id).events) {
      if (e.kind == kind && e.detail.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
  static bool Anyone(const JobRecord&) { return true; }
};

// Two free GPUs, so only the dependency keeps B from running beside A.
// B waits (reason: waiting for job A (afterok)); once A's task exited 0
// and A finished, the next pass starts B.
TEST_F(DependencyTest, AfterOkRunsOnlyOnceTheJobFinished) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  const JobId b = Submit(After(DependencyKind::kAfterOk, {a}));
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{a});
  const v1::TaskStatus running_a =
      Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {running_a});
  clock_.Advance(Seconds{3});
  Pass();
  for (JobId told : Running(n1, {running_a})) EXPECT_NE(told, b);
  JobRecord waiting = Get(b);
  EXPECT_EQ(waiting.state, JobRecordState::kPending);
  EXPECT_TRUE(waiting.waiting_on_dependencies);
  EXPECT_EQ(waiting.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kDependency));
  EXPECT_EQ(waiting.pending_reason,
            "waiting for job " + std::to_string(a) + " (afterok)");

  Exit(n1, a, 0, 0);
  EXPECT_EQ(Get(a).state, JobRecordState::kFinished);
  EXPECT_FALSE(Get(b).waiting_on_dependencies);
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{b});
  EXPECT_TRUE(HasEvent(b, "dependency", "afterok:" + std::to_string(a)));
}

// A exits 3: B (afterok A) can never run and ends failed naming the
// dependency, C (afterok B) after it in the same write; D (afternotok A)
// and E (afterany A) run. F (afternotok on a finished job) fails.
// As Slurm's: a dependency on an array's id (its first job's) waits for
// every job of the array. Array X = {x, x+1} on 2 of 4 GPUs; B afterok X,
// C afternotok X. x finishes: neither B nor C may start (x+1 still runs).
// x+1 fails: B can never run (ends failed), C runs.
TEST_F(DependencyTest, ADependencyOnAnArrayWaitsForTheWholeArray) {
  Open();
  const int64_t n1 = Register("n1", 4);
  JobRequest array = Spec(1);
  array.array = {"0-1", 0};
  const JobId x = Submit(array);
  const JobId b = Submit(After(DependencyKind::kAfterOk, {x}));
  const JobId c = Submit(After(DependencyKind::kAfterNotOk, {x}));
  Pass();
  std::map<JobId, int> gpu;
  for (const v1::StartTask& s : Starts(Beat(n1))) {
    gpu[s.task().job_id()] = s.gpu_indexes(0);
  }
  ASSERT_EQ(gpu.size(), 2u);
  ASSERT_TRUE(gpu.contains(x) && gpu.contains(x + 1));
  const v1::TaskStatus second_running =
      Task(x + 1, 1, 0, TASK_STATE_RUNNING, {gpu[x + 1]}, {}, 1000.0);
  Beat(n1,
       {Task(x, 1, 0, TASK_STATE_EXITED, {gpu[x]}, 0, 1000.0), second_running});
  EXPECT_EQ(Get(x).state, JobRecordState::kFinished);
  Pass();
  for (JobId told : Running(n1, {second_running})) {
    EXPECT_TRUE(told != b && told != c) << told;
  }
  EXPECT_TRUE(Get(b).waiting_on_dependencies);
  EXPECT_TRUE(Get(c).waiting_on_dependencies);
  Exit(n1, x + 1, gpu[x + 1], 3);
  EXPECT_EQ(Get(x + 1).state, JobRecordState::kFailed);
  Pass();
  EXPECT_EQ(Get(b).state, JobRecordState::kFailed);
  EXPECT_TRUE(HasEvent(b, "failed",
                       "can never be met: array " + std::to_string(x) +
                           " had a job end other than finished"));
  EXPECT_EQ(Running(n1), std::vector<JobId>{c});
}

TEST_F(DependencyTest, FailureEndsAfterOkChainsAndRunsAfterNotOkAndAny) {
  Open();
  const int64_t n1 = Register("n1", 4);
  const JobId a = Submit(Spec(1));
  const JobId ok = Submit(Spec(1));
  const JobId b = Submit(After(DependencyKind::kAfterOk, {a}));
  const JobId c = Submit(After(DependencyKind::kAfterOk, {b}));
  const JobId d = Submit(After(DependencyKind::kAfterNotOk, {a}));
  const JobId e = Submit(After(DependencyKind::kAfterAny, {a}));
  const JobId f = Submit(After(DependencyKind::kAfterNotOk, {ok}));
  Pass();
  std::vector<JobId> first = Running(n1);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<JobId>{a, ok}));
  Exit(n1, a, 0, 3);
  Exit(n1, ok, 1, 0);
  EXPECT_EQ(Get(a).state, JobRecordState::kFailed);
  const std::string as = std::to_string(a);
  EXPECT_EQ(Get(b).state, JobRecordState::kFailed);
  EXPECT_TRUE(HasEvent(b, "failed",
                       "dependency afterok:" + as +
                           " can never be met: job " + as + " ended failed"));
  EXPECT_FALSE(Get(b).exit_code.has_value());
  EXPECT_EQ(Get(c).state, JobRecordState::kFailed);
  EXPECT_TRUE(HasEvent(c, "failed", "job " + std::to_string(b) +
                                        " ended failed"));
  EXPECT_EQ(Get(f).state, JobRecordState::kFailed);
  EXPECT_TRUE(HasEvent(f, "failed", "ended finished"));
  Pass();
  std::vector<JobId> next = Running(n1);
  std::sort(next.begin(), next.end());
  EXPECT_EQ(next, (std::vector<JobId>{d, e}));
}

// Dependencies on jobs that ended already are decided at submission:
// met ones run at the next pass, broken ones end at once.
TEST_F(DependencyTest, DependenciesOnEndedJobsAreDecidedAtSubmission) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  ASSERT_TRUE(master_->CancelJob(a).ok());
  const JobId never = Submit(After(DependencyKind::kAfterOk, {a}));
  EXPECT_EQ(Get(never).state, JobRecordState::kFailed);
  EXPECT_TRUE(HasEvent(never, "failed", "ended cancelled"));
  const JobId runs = Submit(After(DependencyKind::kAfterNotOk, {a}));
  EXPECT_FALSE(Get(runs).waiting_on_dependencies);
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{runs});
}

// A master restart while B waits: B still waits (the wait is worked out
// again from its stored dependencies), and runs once A, re-adopted,
// finishes.
TEST_F(DependencyTest, WaitSurvivesAMasterRestart) {
  Open();
  int64_t n1 = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  const JobId b = Submit(After(DependencyKind::kAfterOk, {a}));
  Pass();
  const v1::TaskStatus running =
      Task(a, 1, 0, TASK_STATE_RUNNING, {0}, {}, 1000.0);
  Beat(n1, {running});
  master_.reset();
  Open();
  n1 = Register("n1", 2, {running});
  Pass();
  for (JobId told : Running(n1, {running})) EXPECT_NE(told, b);
  EXPECT_EQ(Get(a).state, JobRecordState::kRunning);  // re-adopted
  EXPECT_TRUE(Get(b).waiting_on_dependencies);
  EXPECT_EQ(Get(b).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kDependency));
  EXPECT_EQ(Get(b).spec.dependencies,
            (std::vector<JobDependency>{{DependencyKind::kAfterOk, a}}));
  Exit(n1, a, 0, 0);
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{b});
}

// After a restart, B (afterany on A, which finished, and on blocker, still
// pending) still waits: A's end is read back from the store, blocker's is
// not there yet. Cancelling blocker (afterany: any end) releases B.
TEST_F(DependencyTest, RestartDecidesWaitsOnEndedJobs) {
  Open();
  const int64_t n1 = Register("n1", 1);
  const JobId a = Submit(Spec(1));
  const JobId blocker = Submit(Spec(1));
  // b waits for a and for blocker; a finishes, blocker is still pending.
  const JobId b = Submit(After(DependencyKind::kAfterAny, {a, blocker}));
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{a});
  Exit(n1, a, 0, 0);
  EXPECT_EQ(Get(b).pending_reason,
            "waiting for job " + std::to_string(blocker) + " (afterany)");
  master_.reset();
  Open();
  EXPECT_TRUE(Get(b).waiting_on_dependencies);
  ASSERT_TRUE(master_->CancelJob(blocker).ok());
  EXPECT_FALSE(Get(b).waiting_on_dependencies);
  EXPECT_EQ(Get(b).state, JobRecordState::kPending);
}

// The user's hold and the dependency wait are two reasons: a release does
// not end the wait, and a job held while it waits stays held when its
// dependencies are met.
TEST_F(DependencyTest, UserHoldAndReleaseDoNotMixWithTheWait) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  JobRequest held_spec = After(DependencyKind::kAfterOk, {a});
  held_spec.hold = true;
  const JobId held = Submit(held_spec);
  const JobId b = Submit(After(DependencyKind::kAfterOk, {a}));
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{a});
  // Releasing a job that is only waiting changes nothing.
  auto results = master_->UpdateJobs(JobAction::kRelease, {b}, Anyone);
  ASSERT_TRUE(results.ok());
  EXPECT_TRUE((*results)[0].unchanged);
  // Releasing the held one lifts the hold, not the wait.
  results = master_->UpdateJobs(JobAction::kRelease, {held}, Anyone);
  ASSERT_TRUE(results.ok());
  EXPECT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
  EXPECT_TRUE((*results)[0].job.waiting_on_dependencies);
  // Holding b while it waits works.
  results = master_->UpdateJobs(JobAction::kHold, {b}, Anyone);
  ASSERT_TRUE(results.ok());
  EXPECT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{a});
  Exit(n1, a, 0, 0);
  Pass();
  EXPECT_EQ(Running(n1), std::vector<JobId>{held});  // b is still held
  EXPECT_EQ(Get(b).pending_reason_kind,
            static_cast<int>(PendingReasonKind::kHeld));
  results = master_->UpdateJobs(JobAction::kRelease, {b}, Anyone);
  ASSERT_TRUE(results.ok());
  Pass();
  std::vector<JobId> both = Running(n1);
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, (std::vector<JobId>{held, b}));
}

// A job cancelled while it waits ends cancelled; the end of the job it
// waited for later changes nothing.
TEST_F(DependencyTest, CancelledWhileWaiting) {
  Open();
  const int64_t n1 = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  const JobId b = Submit(After(DependencyKind::kAfterOk, {a}));
  Pass();
  ASSERT_TRUE(master_->CancelJob(b).ok());
  EXPECT_EQ(Get(b).state, JobRecordState::kCancelled);
  EXPECT_FALSE(Get(b).waiting_on_dependencies);
  Exit(n1, a, 0, 0);
  Pass();
  EXPECT_TRUE(Running(n1).empty());
  EXPECT_EQ(Get(b).state, JobRecordState::kCancelled);
}

// Unknown ids, the job itself (the id it would get) and a later one are
// refused with INVALID_ARGUMENT naming the id; nothing is created.
TEST_F(DependencyTest, UnknownAndSelfDependenciesAreRefused) {
  Open();
  const JobId a = Submit(Spec(1));
  auto unknown = master_->SubmitJob(After(DependencyKind::kAfterOk, {a, 99}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find(
                "spec.dependencies: afterok:99: there is no job 99"),
            std::string::npos)
      << unknown.status();
  const JobId self = a + 1;  // the id the next job gets
  auto itself = master_->SubmitJob(After(DependencyKind::kAfterAny, {self}));
  ASSERT_FALSE(itself.ok());
  EXPECT_EQ(itself.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(itself.status().message().find("never on itself"),
            std::string::npos)
      << itself.status();
  auto bulk = master_->SubmitJobs(
      {Spec(1), After(DependencyKind::kAfterOk, {77})}, "");
  ASSERT_FALSE(bulk.ok());
  EXPECT_NE(bulk.status().message().find("jobs[1].dependencies: afterok:77"),
            std::string::npos)
      << bulk.status();
  // Nothing was created: the next job gets a + 1.
  EXPECT_EQ(Submit(Spec(1)), a + 1);
}

// Ownership as the RPC layer asks it (service.cc): a non-admin may depend
// only on jobs of the spec's user.
TEST_F(DependencyTest, AnotherUsersJobIsRefusedForANonAdmin) {
  Open();
  JobRequest bobs = Spec(1);
  bobs.user = "bob";
  const JobId theirs = Submit(bobs);
  JobRequest mine = After(DependencyKind::kAfterOk, {theirs});
  mine.user = "alice";
  const auto same_user = [&](const JobRecord& target) {
    return target.spec.user == mine.user;
  };
  absl::Status refused = master_->CheckDependencyTargets(mine, same_user);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("job " + std::to_string(theirs) +
                                   " is bob's"),
            std::string::npos)
      << refused;
  mine.user = "bob";
  EXPECT_TRUE(master_->CheckDependencyTargets(mine, same_user).ok());
}

}  // namespace
}  // namespace tiresias
