#include "master/array_slots.h"

#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Claim = ArraySlotTable::Claim;

constexpr JobId kArray = 100;

// Refill with nothing stopping and every waiting job taking a free slot,
// except those in `waits` (a user's hold, a begin time) and `ended`; told
// only about the jobs Marked names.
std::vector<JobId> RefillAll(ArraySlotTable& t, std::set<JobId> waits = {},
                             std::set<JobId> ended = {},
                             std::set<JobId> stopping = {}) {
  absl::flat_hash_map<JobId, ArraySlotTable::WaitingJob> told;
  for (JobId id : t.Marked()) {
    ArraySlotTable::WaitingJob& job = told[id];
    job.stopping = stopping.contains(id);
    if (ended.contains(id)) {
      job.claim = Claim::kEnded;
    } else if (waits.contains(id)) {
      job.claim = Claim::kWaits;
    } else {
      job.claim = Claim::kTakes;
    }
  }
  return t.Refill(told);
}

TEST(ArraySlotTableTest, JobsPastTheLimitWaitAndFreedSlotsGoToTheLowestIds) {
  ArraySlotTable t;
  EXPECT_TRUE(t.Join(kArray, 2, 101, /*may_take=*/true));
  EXPECT_TRUE(t.Join(kArray, 2, 102, true));
  EXPECT_FALSE(t.Join(kArray, 2, 104, true));
  EXPECT_FALSE(t.Join(kArray, 2, 103, true));
  EXPECT_FALSE(t.Queued(kArray, 101));
  EXPECT_TRUE(t.Queued(kArray, 103));
  EXPECT_TRUE(t.Queued(kArray, 104));
  // Nothing freed: no array to look at.
  EXPECT_THAT(RefillAll(t), IsEmpty());
  // 102 ends: its slot goes to 103 (lowest id), not 104.
  t.Leave(kArray, 102, /*held=*/false);
  EXPECT_THAT(RefillAll(t), ElementsAre(103));
  EXPECT_FALSE(t.Queued(kArray, 103));
  EXPECT_TRUE(t.Queued(kArray, 104));
  ASSERT_NE(t.Find(kArray), nullptr);
  EXPECT_THAT(t.Find(kArray)->holding, ElementsAre(101, 103));
  EXPECT_EQ(t.Find(kArray)->max_running, 2);
  // A second Refill with nothing freed gives nothing.
  EXPECT_THAT(RefillAll(t), IsEmpty());
}

TEST(ArraySlotTableTest, AJobHeldByItsUserGivesItsSlotBackAndWaits) {
  ArraySlotTable t;
  t.Join(kArray, 1, 1, true);
  t.Join(kArray, 1, 2, true);
  // 1 is held by its user: it waits again, and 2 takes the slot.
  t.Leave(kArray, 1, /*held=*/true);
  EXPECT_TRUE(t.Queued(kArray, 1));
  EXPECT_THAT(RefillAll(t, /*waits=*/{1}), ElementsAre(2));
  EXPECT_TRUE(t.Queued(kArray, 1));
  // 2 ends while 1 is still held: the slot stays free ...
  t.Leave(kArray, 2, false);
  EXPECT_THAT(RefillAll(t, /*waits=*/{1}), IsEmpty());
  EXPECT_THAT(t.Find(kArray)->holding, IsEmpty());
  // ... until its hold is lifted and the array looked at again.
  EXPECT_THAT(RefillAll(t), IsEmpty());  // not marked: not looked at
  t.Recheck(kArray);
  EXPECT_THAT(RefillAll(t), ElementsAre(1));
}

TEST(ArraySlotTableTest, AJobHeldWhileStillStoppingCountsUntilItsLaunchEnds) {
  ArraySlotTable t;
  t.Join(kArray, 2, 1, true);
  t.Join(kArray, 2, 2, true);
  t.Join(kArray, 2, 3, true);
  // 1 is held while its launch is still checkpointing: it counts against
  // the limit (job 1 stopping and job 2 holding make two), so 3 gets no
  // slot ...
  t.Leave(kArray, 1, /*held=*/true);
  EXPECT_THAT(RefillAll(t, /*waits=*/{1}, {}, /*stopping=*/{1}), IsEmpty());
  EXPECT_TRUE(t.Queued(kArray, 3));
  // ... and the array is looked at again at the next Refill, when the
  // launch has ended.
  EXPECT_THAT(RefillAll(t, /*waits=*/{1}), ElementsAre(3));
}

TEST(ArraySlotTableTest, EndedJobsLeaveAndAnEmptyArrayIsDropped) {
  ArraySlotTable t;
  t.Join(kArray, 1, 1, true);
  t.Join(kArray, 1, 2, true);
  t.Join(kArray, 1, 3, true);
  // 1 ends; 2 ended meanwhile (Finalize let it go): it leaves, 3 takes.
  t.Leave(kArray, 1, false);
  EXPECT_THAT(RefillAll(t, {}, /*ended=*/{2}), ElementsAre(3));
  EXPECT_FALSE(t.Queued(kArray, 2));
  t.Leave(kArray, 3, false);
  EXPECT_EQ(t.Find(kArray), nullptr);
  EXPECT_TRUE(t.empty());
  // A waiting job that ends leaves too.
  t.Join(kArray, 1, 4, true);
  t.Join(kArray, 1, 5, true);
  t.Leave(kArray, 5, false);
  EXPECT_FALSE(t.Queued(kArray, 5));
  EXPECT_THAT(t.Find(kArray)->holding, ElementsAre(4));
  EXPECT_THAT(t.Find(kArray)->queued, IsEmpty());
}

TEST(ArraySlotTableTest, SlotsGoArrayByArrayAndOnlyAsFarAsTheyLast) {
  ArraySlotTable t;
  const JobId a = 10, b = 20;
  t.Join(b, 1, 21, true);
  t.Join(b, 1, 22, true);
  t.Join(a, 1, 11, true);
  t.Join(a, 1, 12, true);
  t.Join(a, 1, 13, true);
  // Both arrays free a slot, b's first; the slots go in array order.
  t.Leave(b, 21, false);
  t.Leave(a, 11, false);
  // In array order; in a, 12 takes the one slot and the loop stops there:
  // 13, told it ended, is not reached and stays (its end is applied when
  // a slot is next free for it).
  EXPECT_THAT(RefillAll(t, {}, /*ended=*/{13}), ElementsAre(12, 22));
  EXPECT_TRUE(t.Queued(a, 13));
  // A job Refill was not told of waits.
  t.Leave(a, 12, false);
  EXPECT_THAT(t.Refill({}), IsEmpty());
  EXPECT_TRUE(t.Queued(a, 13));
}

TEST(ArraySlotTableTest, JoinTakesNoSlotUnlessAllowedOrForced) {
  ArraySlotTable t;
  // Held or beginning later: it waits although a slot is free.
  EXPECT_FALSE(t.Join(kArray, 2, 1, /*may_take=*/false));
  EXPECT_TRUE(t.Queued(kArray, 1));
  // Running at a restart: it holds a slot whatever the limit says.
  EXPECT_TRUE(t.Join(kArray, 1, 2, false, /*force=*/true));
  EXPECT_TRUE(t.Join(kArray, 1, 3, false, /*force=*/true));
  EXPECT_THAT(t.Find(kArray)->holding, ElementsAre(2, 3));
  // Joining again changes nothing.
  EXPECT_FALSE(t.Join(kArray, 1, 1, true, true));
  EXPECT_TRUE(t.Join(kArray, 1, 2, false));
  EXPECT_THAT(t.Find(kArray)->queued, ElementsAre(1));
  // Arrays are apart: another array's slots are its own.
  EXPECT_TRUE(t.Join(kArray + 1, 1, 7, true));
  EXPECT_FALSE(t.Queued(kArray, 7));
}

}  // namespace
}  // namespace tiresias
