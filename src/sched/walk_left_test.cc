// WalkLeft (walk_left.h): hand-counted cases of what a walk has left.
#include "sched/walk_left.h"

#include <gtest/gtest.h>

namespace tiresias {
namespace {

TEST(WalkLeftTest, FewestGpusLeftFollowsVisitsAndReturns) {
  WalkLeft left;
  left.Start({{1, 2}, {4, 1}, {16, 1}}, /*uniform=*/true, /*largest=*/8);
  EXPECT_EQ(left.min(), 1);
  left.Visit(1);
  EXPECT_EQ(left.min(), 1);
  left.Visit(1);
  EXPECT_EQ(left.min(), 4);
  left.Add(2, /*own=*/false);  // a displaced 2-GPU job, a count not seen
  EXPECT_EQ(left.min(), 2);
  left.Visit(2);
  left.Visit(4);
  EXPECT_EQ(left.min(), 16);
  left.Visit(16);
  EXPECT_EQ(left.min(), WalkLeft::kNone);
  left.Add(3, false);  // inserted below every count seen, when none is left
  EXPECT_EQ(left.min(), 3);
}

TEST(WalkLeftTest, KnownUnplaceableBySideOfTheLargestServer) {
  WalkLeft left;
  left.Start({{1, 1}, {2, 1}, {4, 1}, {12, 1}, {16, 1}}, true, 8);
  EXPECT_FALSE(left.KnownUnplaceable(4));
  left.Unplaceable(4);
  EXPECT_TRUE(left.KnownUnplaceable(4));
  EXPECT_TRUE(left.KnownUnplaceable(8));
  EXPECT_FALSE(left.KnownUnplaceable(2));
  // A job larger than every server takes whole servers: a 4-GPU failure
  // says nothing about it.
  EXPECT_FALSE(left.KnownUnplaceable(12));
  left.Unplaceable(16);
  EXPECT_FALSE(left.KnownUnplaceable(12));
  EXPECT_TRUE(left.KnownUnplaceable(16));
  EXPECT_TRUE(left.KnownUnplaceable(24));
  EXPECT_FALSE(left.AllKnownUnplaceable());  // 1, 2 and 12 left
  left.Visit(1);
  left.Visit(2);
  EXPECT_FALSE(left.AllKnownUnplaceable());  // 12 is not known
  left.Visit(12);
  EXPECT_TRUE(left.AllKnownUnplaceable());  // 4 and 16 are
  left.Add(1, false);
  EXPECT_FALSE(left.AllKnownUnplaceable());
}

TEST(WalkLeftTest, AJobOfItsOwnRuleKeepsEverythingUnknown) {
  WalkLeft left;
  left.Start({{4, 2}}, /*uniform=*/false, 8);
  left.Unplaceable(4);
  EXPECT_FALSE(left.KnownUnplaceable(4));
  EXPECT_FALSE(left.AllKnownUnplaceable());
  left.Start({{4, 2}}, true, 8);
  left.Unplaceable(4);
  EXPECT_TRUE(left.AllKnownUnplaceable());
  left.Add(8, /*own=*/true);  // displaced, placed by a rule of its own
  EXPECT_FALSE(left.KnownUnplaceable(8));
  EXPECT_FALSE(left.AllKnownUnplaceable());
}

}  // namespace
}  // namespace tiresias
