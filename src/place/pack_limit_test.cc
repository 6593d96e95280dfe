#include "place/pack_limit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tiresias {
namespace {

PackLimitClassifier Make(PackLimitOptions options = {}) {
  return *PackLimitClassifier::Create(options);
}

void AddN(PackLimitClassifier& c, int n, double skew, bool costly) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(c.AddLabel(skew, false, costly).ok());
}

// ResNet-like 0.1 never costly, VGG-like 0.7 always: balanced and
// symmetric about the mean skew 0.4, so the fitted intercept (centred) is 0
// and the boundary is the midpoint.
TEST(PackLimitTest, SeparableBalancedDataPutsTheBoundaryAtTheMidpoint) {
  PackLimitClassifier c = Make();
  AddN(c, 4, 0.1, false);
  AddN(c, 4, 0.7, true);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kFitted);
  EXPECT_NEAR(c.pack_limit(), 0.4, 1e-9);
  EXPECT_GT(c.slope(), 0);
  EXPECT_NEAR(c.Probability(0.4), 0.5, 1e-9);
  EXPECT_LT(c.Probability(0.1), 0.05);
  EXPECT_GT(c.Probability(0.7), 0.95);
  EXPECT_EQ(c.fitted_samples(), 8);
}

// Overlapping but symmetric: at 0.2 one of four costly, at 0.6 three of
// four. Still the midpoint.
TEST(PackLimitTest, SymmetricOverlappingDataPutsTheBoundaryAtTheMidpoint) {
  PackLimitClassifier c = Make();
  AddN(c, 3, 0.2, false);
  AddN(c, 1, 0.2, true);
  AddN(c, 3, 0.6, true);
  AddN(c, 1, 0.6, false);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kFitted);
  EXPECT_NEAR(c.pack_limit(), 0.4, 1e-9);
}

// Two skews, so with (almost) no penalty the fit is saturated: it passes
// through the observed log-odds, logit(1/4) = -ln 3 at 0.2 and logit(2/4)
// = 0 at 0.6. The boundary is 0.6 and the slope ln 3 / 0.4.
TEST(PackLimitTest, UnpenalisedTwoPointFitMatchesTheObservedOdds) {
  PackLimitClassifier c = Make({.l2 = 1e-9});
  AddN(c, 3, 0.2, false);
  AddN(c, 1, 0.2, true);
  AddN(c, 2, 0.6, false);
  AddN(c, 2, 0.6, true);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kFitted);
  EXPECT_NEAR(c.pack_limit(), 0.6, 1e-4);
  EXPECT_NEAR(c.slope(), std::log(3.0) / 0.4, 1e-3);
  EXPECT_NEAR(c.Probability(0.2), 0.25, 1e-6);
}

TEST(PackLimitTest, TooFewSamplesKeepTheStartValue) {
  PackLimitClassifier c = Make({.start = 0.3, .min_samples = 8});
  AddN(c, 3, 0.1, false);
  AddN(c, 4, 0.7, true);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kTooFewSamples);
  EXPECT_EQ(c.pack_limit(), 0.3);
  AddN(c, 1, 0.1, false);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kFitted);
  EXPECT_NE(c.pack_limit(), 0.3);
}

TEST(PackLimitTest, OneClassKeepsTheStartValue) {
  PackLimitClassifier c = Make({.start = 0.5});
  AddN(c, 10, 0.1, false);
  AddN(c, 10, 0.8, false);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kOneClass);
  EXPECT_EQ(c.pack_limit(), 0.5);
  EXPECT_EQ(c.samples().size(), 20u);
}

// Costly at low skew, cheap at high: no threshold "above which to
// consolidate" fits that, so PACKLIMIT stays where it started.
TEST(PackLimitTest, DecreasingTrendKeepsTheStartValue) {
  PackLimitClassifier c = Make({.start = 0.5});
  AddN(c, 4, 0.1, true);
  AddN(c, 4, 0.7, false);
  c.Refresh();
  EXPECT_EQ(c.fit(), PackLimitFit::kNoTrend);
  EXPECT_EQ(c.pack_limit(), 0.5);
  EXPECT_LT(c.slope(), 0);
}

// Unpenalised two-point fits whose boundary lies outside the skews:
// logit(4/5) = ln 4 at 0.5 and logit(9/10) = ln 9 at 1.0 cross 0 at
// 0.5 - ln 4 / (2 ln 9 - 2 ln 4) = -0.355; the mirror image at 1.355.
TEST(PackLimitTest, BoundaryIsClampedToTheSkewRange) {
  PackLimitClassifier low = Make({.l2 = 1e-9});
  AddN(low, 4, 0.5, true);
  AddN(low, 1, 0.5, false);
  AddN(low, 9, 1.0, true);
  AddN(low, 1, 1.0, false);
  low.Refresh();
  EXPECT_EQ(low.fit(), PackLimitFit::kFitted);
  EXPECT_NEAR(low.intercept() / -low.slope(), -0.355, 1e-3);
  EXPECT_EQ(low.pack_limit(), 0.0);

  PackLimitClassifier high = Make({.l2 = 1e-9});
  AddN(high, 1, 0.0, true);
  AddN(high, 9, 0.0, false);
  AddN(high, 1, 0.5, true);
  AddN(high, 4, 0.5, false);
  high.Refresh();
  EXPECT_EQ(high.fit(), PackLimitFit::kFitted);
  EXPECT_NEAR(high.intercept() / -high.slope(), 1.355, 1e-3);
  EXPECT_EQ(high.pack_limit(), 1.0);
}

TEST(PackLimitTest, SlowdownIsLabelledAgainstTheCostThreshold) {
  PackLimitClassifier c = Make({.cost_threshold = 0.10});
  ASSERT_TRUE(c.AddSlowdown(0.74, true, 1.50).ok());
  ASSERT_TRUE(c.AddSlowdown(0.09, true, 1.05).ok());
  ASSERT_TRUE(c.AddSlowdown(0.20, false, 1.10).ok());  // not more than 10%
  ASSERT_TRUE(c.AddSlowdown(0.30, true, 0.95).ok());   // spreading helped
  ASSERT_EQ(c.samples().size(), 4u);
  EXPECT_TRUE(c.samples()[0].costly);
  EXPECT_FALSE(c.samples()[1].costly);
  EXPECT_FALSE(c.samples()[2].costly);
  EXPECT_FALSE(c.samples()[3].costly);
  EXPECT_TRUE(c.samples()[0].spread);
  EXPECT_FALSE(c.samples()[2].spread);
}

TEST(PackLimitTest, BadSamplesAreRejectedAndNotAdded) {
  PackLimitClassifier c = Make();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double skew : {nan, -0.01, 1.01, inf}) {
    absl::Status s = c.AddSlowdown(skew, true, 1.5);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << skew;
    EXPECT_NE(s.message().find("skew"), std::string_view::npos) << s;
    EXPECT_EQ(c.AddLabel(skew, true, true).code(),
              absl::StatusCode::kInvalidArgument);
  }
  for (double slowdown : {nan, 0.0, -1.0, inf}) {
    absl::Status s = c.AddSlowdown(0.5, true, slowdown);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << slowdown;
    EXPECT_NE(s.message().find("slowdown"), std::string_view::npos) << s;
  }
  EXPECT_TRUE(c.samples().empty());
  EXPECT_TRUE(c.AddLabel(0.0, false, false).ok());
  EXPECT_TRUE(c.AddLabel(1.0, false, true).ok());
}

TEST(PackLimitTest, BadOptionsAreRejected) {
  EXPECT_FALSE(PackLimitClassifier::Create({.start = 1.5}).ok());
  EXPECT_FALSE(PackLimitClassifier::Create({.start = NAN}).ok());
  EXPECT_FALSE(PackLimitClassifier::Create({.cost_threshold = -0.1}).ok());
  EXPECT_FALSE(PackLimitClassifier::Create({.min_samples = 0}).ok());
  EXPECT_FALSE(PackLimitClassifier::Create({.l2 = 0}).ok());
  EXPECT_TRUE(PackLimitClassifier::Create({}).ok());
}

TEST(PackLimitTest, RefreshIsDeterministic) {
  auto fill = [](PackLimitClassifier& c) {
    // A mix with overlap, in a fixed order.
    const double skews[] = {0.04, 0.09,  0.15, 0.62, 0.72,  0.77,
                            0.05, 0.146, 0.74, 0.09, 0.618, 0.039};
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(c.AddLabel(skews[i], i % 2, skews[i] > 0.5 || i == 2).ok());
    }
  };
  PackLimitClassifier a = Make(), b = Make();
  fill(a);
  fill(b);
  a.Refresh();
  b.Refresh();
  a.Refresh();  // refreshing again changes nothing
  EXPECT_EQ(a.fit(), PackLimitFit::kFitted);
  EXPECT_EQ(a.pack_limit(), b.pack_limit());
  EXPECT_EQ(a.intercept(), b.intercept());
  EXPECT_EQ(a.slope(), b.slope());
  EXPECT_GT(a.pack_limit(), 0.15);
  EXPECT_LT(a.pack_limit(), 0.618);
}

}  // namespace
}  // namespace tiresias
