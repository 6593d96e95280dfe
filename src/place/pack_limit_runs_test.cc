#include "place/pack_limit_runs.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

PackLimitRuns Make(int min_samples = 8) {
  absl::StatusOr<PackLimitRuns> runs =
      PackLimitRuns::Create({.start = 0.5, .min_samples = min_samples});
  EXPECT_TRUE(runs.ok()) << runs.status();
  return *std::move(runs);
}

// "vgg" (skew 0.8) runs 2 s spread against 1 s consolidated: costly (2.0 >
// 1.1). "resnet" (skew 0) 1.05 s against 1 s: not. Two runs each way each:
// eight samples, four of each class, separable and balanced, so the boundary
// is the midpoint 0.4 (pack_limit_test's case, reached through runs).
TEST(PackLimitRunsTest, PairsRunsBySignatureAndFitsTheMidpoint) {
  PackLimitRuns runs = Make();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(runs.Add({1, i}, {"vgg", 0.8, true, 2.0}).ok());
    ASSERT_TRUE(runs.Add({2, i}, {"vgg", 0.8, false, 1.0}).ok());
    ASSERT_TRUE(runs.Add({3, i}, {"resnet", 0.0, true, 1.05}).ok());
    ASSERT_TRUE(runs.Add({4, i}, {"resnet", 0.0, false, 1.0}).ok());
  }
  EXPECT_TRUE(runs.dirty());
  EXPECT_EQ(runs.runs(), 8);
  EXPECT_EQ(runs.RunsOf("vgg", true), 2);
  EXPECT_EQ(runs.RunsOf("resnet", false), 2);
  EXPECT_EQ(runs.RunsOf("alexnet", false), 0);
  EXPECT_TRUE(runs.Refit());
  EXPECT_FALSE(runs.dirty());
  EXPECT_EQ(runs.fit(), PackLimitFit::kFitted);
  EXPECT_EQ(runs.samples(), 8);
  EXPECT_NEAR(runs.pack_limit(), 0.4, 1e-9);
  const std::map<std::string, double> slowdowns = runs.Slowdowns();
  ASSERT_EQ(slowdowns.size(), 2u);
  EXPECT_DOUBLE_EQ(slowdowns.at("vgg"), 2.0);
  EXPECT_DOUBLE_EQ(slowdowns.at("resnet"), 1.05);
  // Nothing new: the same fit, PACKLIMIT unchanged.
  EXPECT_FALSE(runs.Refit());
  EXPECT_NEAR(runs.pack_limit(), 0.4, 1e-9);
}

// Runs of a signature seen only one way are no samples: nothing says what
// spreading it costs.
TEST(PackLimitRunsTest, UnpairedRunsAreNoSamples) {
  PackLimitRuns runs = Make(/*min_samples=*/1);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(runs.Add({5, i}, {"vgg", 0.8, false, 1.0}).ok());
    ASSERT_TRUE(runs.Add({6, i}, {"resnet", 0.1, true, 1.0}).ok());
  }
  EXPECT_FALSE(runs.Refit());
  EXPECT_EQ(runs.samples(), 0);
  EXPECT_EQ(runs.fit(), PackLimitFit::kTooFewSamples);
  EXPECT_EQ(runs.pack_limit(), 0.5);
  EXPECT_TRUE(runs.Slowdowns().empty());
  // The first spread run of vgg pairs all six of its runs: one class only.
  ASSERT_TRUE(runs.Add({7, 0}, {"vgg", 0.8, true, 3.0}).ok());
  runs.Refit();
  EXPECT_EQ(runs.samples(), 6);
  EXPECT_EQ(runs.fit(), PackLimitFit::kOneClass);
  EXPECT_EQ(runs.pack_limit(), 0.5);
}

// The slowdown is a ratio of medians, so one outlier run does not flip a
// signature's label, and a later run can relabel earlier ones.
TEST(PackLimitRunsTest, MediansLabelAndLaterRunsRelabel) {
  PackLimitRuns runs = Make(/*min_samples=*/1);
  // Spread: 1.0, 1.02, 9.0 (a straggler): median 1.02; consolidated 1.0.
  ASSERT_TRUE(runs.Add({8, 0}, {"a", 0.3, true, 1.0}).ok());
  ASSERT_TRUE(runs.Add({9, 0}, {"a", 0.3, true, 9.0}).ok());
  ASSERT_TRUE(runs.Add({10, 0}, {"a", 0.3, true, 1.02}).ok());
  ASSERT_TRUE(runs.Add({11, 0}, {"a", 0.3, false, 1.0}).ok());
  runs.Refit();
  EXPECT_DOUBLE_EQ(runs.Slowdowns().at("a"), 1.02);
  ASSERT_EQ(runs.classifier().samples().size(), 4u);
  for (const PackLimitSample& s : runs.classifier().samples()) {
    EXPECT_FALSE(s.costly);
  }
  // Two more slow spread runs: median of (1.0, 1.02, 9, 9, 9) is 9.
  ASSERT_TRUE(runs.Add({12, 0}, {"a", 0.3, true, 9.0}).ok());
  ASSERT_TRUE(runs.Add({13, 0}, {"a", 0.3, true, 9.0}).ok());
  runs.Refit();
  EXPECT_DOUBLE_EQ(runs.Slowdowns().at("a"), 9.0);
  ASSERT_EQ(runs.classifier().samples().size(), 6u);
  for (const PackLimitSample& s : runs.classifier().samples()) {
    EXPECT_TRUE(s.costly);
    EXPECT_DOUBLE_EQ(s.skew, 0.3);
  }
}

TEST(PackLimitRunsTest, RefusesBadRunsAndAddsNothing) {
  PackLimitRuns runs = Make();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(runs.Add({14, 0}, {"", 0.5, true, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.Add({15, 0}, {"a", 1.5, true, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.Add({16, 0}, {"a", nan, true, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.Add({17, 0}, {"a", 0.5, true, 0}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.Add({18, 0}, {"a", 0.5, true, inf}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.Add({19, 0}, {"a", 0.5, true, -1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runs.runs(), 0);
  EXPECT_FALSE(runs.dirty());
  EXPECT_EQ(runs.RunsOf("a", true), 0);
  EXPECT_FALSE(PackLimitRuns::Create({.start = 2}).ok());
}

// A launch measured again (a better rank's profile) replaces its run: the
// counts follow, and the slowdown uses the new time.
TEST(PackLimitRunsTest, TheSameRunAddedAgainReplacesIt) {
  PackLimitRuns runs = Make(/*min_samples=*/1);
  ASSERT_TRUE(runs.Add({7, 1}, {"a", 0.3, false, 1.0}).ok());
  ASSERT_TRUE(runs.Add({7, 2}, {"a", 0.3, true, 1.0}).ok());
  ASSERT_TRUE(runs.Add({7, 2}, {"a", 0.7, true, 3.0}).ok());
  EXPECT_EQ(runs.runs(), 2);
  EXPECT_EQ(runs.RunsOf("a", true), 1);
  EXPECT_EQ(runs.RunsOf("a", false), 1);
  EXPECT_DOUBLE_EQ(runs.Slowdowns().at("a"), 3.0);
  // Moved to the other placement: counted there only.
  ASSERT_TRUE(runs.Add({7, 2}, {"a", 0.7, false, 1.0}).ok());
  EXPECT_EQ(runs.RunsOf("a", true), 0);
  EXPECT_EQ(runs.RunsOf("a", false), 2);
  EXPECT_TRUE(runs.Slowdowns().empty());
  runs.Refit();
  EXPECT_EQ(runs.samples(), 0);
}

}  // namespace
}  // namespace tiresias
