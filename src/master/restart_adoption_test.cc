#include "master/restart_adoption.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pointee;

TEST(RestartAdoptionTest, TheWindowEndsAtItsDeadlineMovedOnByStalls) {
  RestartAdoption r;
  r.Open(Seconds{100});
  EXPECT_FALSE(r.closed());
  EXPECT_FALSE(r.Due(Seconds{99}));
  EXPECT_TRUE(r.Due(Seconds{100}));
  r.Stall(Seconds{5});  // the master stood still: 5 s more
  EXPECT_FALSE(r.Due(Seconds{104}));
  EXPECT_TRUE(r.Due(Seconds{105}));
  EXPECT_FALSE(r.closed());  // the clock alone never closes it
  r.Open(Seconds{200});      // a new deadline
  EXPECT_FALSE(r.Due(Seconds{150}));
  EXPECT_TRUE(r.Due(Seconds{200}));
  EXPECT_THAT(r.Close(), IsEmpty());
  EXPECT_TRUE(r.closed());
  EXPECT_FALSE(r.Due(Seconds{1000}));  // closed once, for good
  r.Stall(Seconds{50});
  EXPECT_FALSE(r.Due(Seconds{1000}));
}

TEST(RestartAdoptionTest, EachNodeListsItsJobsStillBeingAdoptedOnce) {
  RestartAdoption r;
  r.Adopt(7, {"n1", "n2", "n1"});  // two ranks on n1
  r.Adopt(9, {"n1"});
  r.Adopt(3, {"n2"});
  EXPECT_TRUE(r.Adopting(7));
  EXPECT_FALSE(r.Adopting(8));
  EXPECT_THAT(r.AdoptingOn("n1"), ElementsAre(7, 9));  // as adopted
  EXPECT_THAT(r.AdoptingOn("n2"), ElementsAre(7, 3));
  EXPECT_THAT(r.AdoptingOn("n3"), IsEmpty());
  EXPECT_THAT(r.AdoptingJobs(), ElementsAre(3, 7, 9));  // id order
  r.StopAdopting(7);                                    // adopted whole
  EXPECT_FALSE(r.Adopting(7));
  EXPECT_THAT(r.AdoptingOn("n1"), ElementsAre(9));
  EXPECT_THAT(r.AdoptingOn("n2"), ElementsAre(3));
  EXPECT_THAT(r.AdoptingJobs(), ElementsAre(3, 9));
}

TEST(RestartAdoptionTest, ConflictsAreJobsStillBeingAdopted) {
  RestartAdoption r;
  r.Adopt(9, {"n1"});
  r.Adopt(4, {"n1"});
  r.Conflict(9);
  r.Conflict(8);  // not being adopted: no conflict of a restart's
  r.Conflict(4);
  EXPECT_THAT(r.Conflicts(), ElementsAre(4, 9));
  r.StopAdopting(9);  // given up
  EXPECT_THAT(r.Conflicts(), ElementsAre(4));
  r.Conflict(9);  // no longer being adopted
  EXPECT_THAT(r.Conflicts(), ElementsAre(4));
}

TEST(RestartAdoptionTest, ClosingNamesTheJobsLeftAndKeepsFencesAndCancels) {
  RestartAdoption r;
  r.Open(Seconds{10});
  r.Adopt(12, {"a"});
  r.Adopt(5, {"b"});
  r.Conflict(12);
  r.Fence(3, {"c"});
  r.CancelAfterRestart(4, {"d"});
  EXPECT_THAT(r.Close(), ElementsAre(5, 12));
  EXPECT_TRUE(r.closed());
  EXPECT_THAT(r.Conflicts(), IsEmpty());
  EXPECT_THAT(r.AdoptingOn("a"), IsEmpty());
  EXPECT_TRUE(r.Adopting(12));  // until the master gives each up
  EXPECT_TRUE(r.Fenced(3));     // each lifted at its next look
  EXPECT_TRUE(r.CancellingAfterRestart(4));
}

TEST(RestartAdoptionTest, AFenceIsItsNodesNotHeardFrom) {
  RestartAdoption r;
  r.Fence(3, {});  // nothing to wait for
  EXPECT_FALSE(r.Fenced(3));
  EXPECT_EQ(r.FenceOf(3), nullptr);
  r.Fence(3, {"a", "b"});
  ASSERT_NE(r.FenceOf(3), nullptr);
  r.FenceOf(3)->erase("a");  // a reported in
  EXPECT_THAT(r.FenceOf(3), Pointee(std::set<std::string>{"b"}));
  r.Fence(3, {});  // nothing new to wait for: the fence stands
  EXPECT_THAT(r.FenceOf(3), Pointee(std::set<std::string>{"b"}));
  r.Unfence(3);
  EXPECT_FALSE(r.Fenced(3));
  EXPECT_EQ(r.FenceOf(3), nullptr);
}

TEST(RestartAdoptionTest, CancelsAfterARestartWaitForTheirNodes) {
  RestartAdoption r;
  r.CancelAfterRestart(8, {"x", "y"});
  r.CancelAfterRestart(2, {"x"});
  EXPECT_THAT(r.CancellingJobs(), ElementsAre(2, 8));
  r.CancelNodesOf(8)->erase("x");
  EXPECT_THAT(r.CancelNodesOf(8), Pointee(std::set<std::string>{"y"}));
  EXPECT_EQ(r.CancelNodesOf(5), nullptr);
  r.EndCancel(2);
  EXPECT_THAT(r.CancellingJobs(), ElementsAre(8));
  EXPECT_FALSE(r.CancellingAfterRestart(2));
  // Unlike a fence, a cancel with no node left to hear from is kept: it
  // ends at the next look, once nothing of the job runs.
  r.CancelAfterRestart(5, {});
  EXPECT_TRUE(r.CancellingAfterRestart(5));
  EXPECT_THAT(r.CancelNodesOf(5), Pointee(IsEmpty()));
}

TEST(RestartAdoptionTest, AJobThatEndedLeavesNothingBehind) {
  RestartAdoption r;
  r.Adopt(1, {"x"});
  r.Conflict(1);
  r.Fence(1, {"y"});
  r.CancelAfterRestart(1, {"z"});
  r.Adopt(2, {"x"});
  r.Forget(1);
  EXPECT_FALSE(r.Adopting(1));
  EXPECT_THAT(r.Conflicts(), IsEmpty());
  EXPECT_FALSE(r.Fenced(1));
  EXPECT_FALSE(r.CancellingAfterRestart(1));
  EXPECT_THAT(r.AdoptingOn("x"), ElementsAre(2));
}

}  // namespace
}  // namespace tiresias
