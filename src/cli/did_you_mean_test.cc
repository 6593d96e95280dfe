#include "cli/did_you_mean.h"

#include <gtest/gtest.h>

namespace tiresias {
namespace {

TEST(EditDistanceTest, CountsEachKindOfEditOnce) {
  EXPECT_EQ(EditDistance("jobs", "jobs"), 0);
  EXPECT_EQ(EditDistance("jbos", "jobs"), 1);   // swap
  EXPECT_EQ(EditDistance("job", "jobs"), 1);    // insertion
  EXPECT_EQ(EditDistance("jobss", "jobs"), 1);  // deletion
  EXPECT_EQ(EditDistance("jibs", "jobs"), 1);   // substitution
  EXPECT_EQ(EditDistance("simualte", "simulate"), 1);
  EXPECT_EQ(EditDistance("", "up"), 2);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(NearestNameTest, SuggestsOnlyWhatLooksLikeATypo) {
  const std::vector<std::string> commands = {"simulate", "submit", "jobs",
                                             "job", "up", "nodes"};
  EXPECT_EQ(NearestName("simualte", commands), "simulate");
  EXPECT_EQ(NearestName("jbos", commands), "jobs");
  EXPECT_EQ(NearestName("sumbit", commands), "submit");
  EXPECT_EQ(NearestName("nodez", commands), "nodes");
  EXPECT_EQ(NearestName("frobnicate", commands), "");
  // Two letters, one wrong: half the word, not a typo of "up".
  EXPECT_EQ(NearestName("ux", commands), "");
}

}  // namespace
}  // namespace tiresias
