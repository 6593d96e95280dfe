#include "master/dependency_table.h"

#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

JobDependency AfterOk(JobId id) { return {DependencyKind::kAfterOk, id}; }
JobDependency AfterAny(JobId id) { return {DependencyKind::kAfterAny, id}; }

// Every queued check, lowest id first.
std::vector<JobId> TakeAll(DependencyTable& t) {
  std::vector<JobId> out;
  while (std::optional<JobId> id = t.TakeCheck()) out.push_back(*id);
  return out;
}

TEST(DependencyTableTest, AWaitIsCheckedOnceAtFirstThenWhenItsTargetEnds) {
  DependencyTable t;
  const std::vector<JobDependency> deps = {AfterOk(3), AfterAny(4)};
  t.Wait(7, deps);
  EXPECT_TRUE(t.Waiting(7));
  ASSERT_NE(t.WaitOf(7), nullptr);
  EXPECT_EQ(t.WaitOf(7)->verdict, DependencyVerdict::kWaiting);
  EXPECT_EQ(t.WaitOf(7)->index, 0u);
  EXPECT_EQ(t.WaitOf(7)->unmet, 2);
  EXPECT_EQ(t.num_waited_for(), 2u);  // 3 and 4
  EXPECT_THAT(TakeAll(t), ElementsAre(7));
  EXPECT_FALSE(t.HasChecks());

  // Job 4 ends: only its dependents are queued, and it leaves the lists.
  t.Ended(4, {}, /*array_id=*/0, /*finished=*/false);
  EXPECT_EQ(t.num_waited_for(), 1u);
  EXPECT_THAT(TakeAll(t), ElementsAre(7));
  t.StillWaiting(7, {DependencyVerdict::kWaiting, 0, 1});
  EXPECT_EQ(t.WaitOf(7)->unmet, 1);

  // A job nobody waits for ends: nothing to check.
  t.Ended(5, {}, 0, true);
  EXPECT_FALSE(t.HasChecks());

  t.Ended(3, {}, 0, true);
  EXPECT_THAT(TakeAll(t), ElementsAre(7));
  t.StopWaiting(7, deps);
  EXPECT_FALSE(t.Waiting(7));
  EXPECT_EQ(t.WaitOf(7), nullptr);
  EXPECT_EQ(t.num_waiting(), 0u);
  EXPECT_EQ(t.num_waited_for(), 0u);
}

TEST(DependencyTableTest, ChecksComeLowestIdFirstEachOnce) {
  DependencyTable t;
  t.Wait(9, {AfterOk(3)});
  t.Wait(8, {AfterOk(3), AfterOk(2)});
  EXPECT_THAT(TakeAll(t), ElementsAre(8, 9));
  t.Ended(2, {}, 0, true);
  t.Ended(3, {}, 0, true);
  EXPECT_THAT(TakeAll(t), ElementsAre(8, 9));  // 8 once, queued by both
  EXPECT_EQ(t.num_waited_for(), 0u);
}

TEST(DependencyTableTest, AJobThatEndsWhileWaitingLeavesEveryList) {
  DependencyTable t;
  const std::vector<JobDependency> deps = {AfterOk(3), AfterOk(4)};
  t.Wait(5, deps);
  t.Wait(6, {AfterOk(5)});
  TakeAll(t);
  // 5 is cancelled while it waits: it waits no more, is no longer listed
  // under 3 and 4, and 6 (waiting for 5) is queued.
  t.Ended(5, deps, 0, false);
  EXPECT_FALSE(t.Waiting(5));
  EXPECT_TRUE(t.Waiting(6));
  EXPECT_EQ(t.num_waited_for(), 0u);
  EXPECT_THAT(TakeAll(t), ElementsAre(6));
  t.Ended(3, {}, 0, true);
  EXPECT_FALSE(t.HasChecks());
  // A check for a job that does not wait changes nothing.
  t.StillWaiting(5, {DependencyVerdict::kWaiting, 1, 1});
  EXPECT_EQ(t.WaitOf(5), nullptr);
}

TEST(DependencyTableTest, AnArrayWaitedForWholeStandsByEveryJob) {
  DependencyTable t;
  // Array 10: jobs 10 (admitted), 11 and 12 (split off its record).
  t.AddArrayJobs(10, 1);
  t.AddArrayJobs(10, 2);
  t.Wait(20, {AfterOk(10)});  // the whole array
  t.Wait(21, {AfterOk(11)});  // one job of it
  TakeAll(t);
  EXPECT_THAT(t.ArrayTarget(10), Optional(DependencyTarget::kUnfinished));

  t.Ended(11, {}, 10, true);  // queues both: 21 for 11, 20 for the array
  EXPECT_THAT(TakeAll(t), ElementsAre(20, 21));
  t.StopWaiting(21, {AfterOk(11)});
  t.Ended(10, {}, 10, true);  // the first job: its list stays
  EXPECT_THAT(TakeAll(t), ElementsAre(20));
  EXPECT_EQ(t.num_waited_for(), 1u);
  EXPECT_THAT(t.ArrayTarget(10), Optional(DependencyTarget::kUnfinished));
  t.Ended(12, {}, 10, true);  // the last one
  EXPECT_THAT(TakeAll(t), ElementsAre(20));
  // Every job finished: nothing seen here says otherwise (the master asks
  // the store, which has them all).
  EXPECT_EQ(t.ArrayTarget(10), std::nullopt);
  // 20's dependency is met: it leaves the list kept under the array's id.
  t.StopWaiting(20, {AfterOk(10)});
  EXPECT_EQ(t.num_waited_for(), 0u);
}

TEST(DependencyTableTest, AnArrayJobCancelledWhileWaitingEndsItsWaitAndFails) {
  DependencyTable t;
  t.AddArrayJobs(50, 2);  // 50 and 51, both waiting for job 3
  const std::vector<JobDependency> deps = {AfterOk(3)};
  t.Wait(50, deps);
  t.Wait(51, deps);
  t.Wait(60, {AfterOk(50)});  // the whole array
  TakeAll(t);
  t.Ended(51, deps, 50, /*finished=*/false);  // cancelled
  EXPECT_FALSE(t.Waiting(51));
  EXPECT_TRUE(t.Waiting(50));
  EXPECT_THAT(TakeAll(t), ElementsAre(60));  // its array had a job end
  EXPECT_THAT(t.ArrayTarget(50), Optional(DependencyTarget::kUnfinished));
  t.Ended(50, deps, 50, false);
  EXPECT_THAT(t.ArrayTarget(50), Optional(DependencyTarget::kFailed));
  EXPECT_EQ(t.num_waited_for(), 1u);  // 60, under the array's id
  // A job of an array never counted here (its first job ended before
  // this start) that fails still fails the array.
  t.Ended(71, {}, 70, false);
  EXPECT_THAT(t.ArrayTarget(70), Optional(DependencyTarget::kFailed));
}

TEST(DependencyTableTest, AnArrayFailsOnceAJobEndsOtherThanFinished) {
  DependencyTable t;
  t.AddArrayJobs(30, 2);  // 30 and 31
  t.AddArrayJobs(40, 0);  // counts nothing
  EXPECT_EQ(t.ArrayTarget(40), std::nullopt);
  t.Ended(31, {}, 30, /*finished=*/false);
  // Still unfinished while 30 runs, failed once it ends (even finished).
  EXPECT_THAT(t.ArrayTarget(30), Optional(DependencyTarget::kUnfinished));
  t.Ended(30, {}, 30, true);
  EXPECT_THAT(t.ArrayTarget(30), Optional(DependencyTarget::kFailed));
  EXPECT_THAT(TakeAll(t), IsEmpty());
}

}  // namespace
}  // namespace tiresias
