#include "sched/gittins.h"

#include <gtest/gtest.h>

#include <random>

namespace tiresias {
namespace {

// Samples {1, 2, 3, 4, 10}. C(x) = #samples <= x, F(x) = sum min(s, x):
// F(0)=0, F(1)=5, F(2)=9, F(3)=12, F(4)=14, F(10)=20, F(2.5)=10.5.
// The ratio at d = s - a is (C(s) - C(a)) / (F(s) - F(a)).
const std::vector<double> kSamples = {10, 3, 1, 4, 2};

TEST(GittinsTest, MatchesHandComputedValues) {
  GittinsDistribution dist(kSamples);
  // a=0, D=5: ratios 1/5, 2/9, 3/12, 4/14 -> 4/14.
  EXPECT_DOUBLE_EQ(dist.Exact(0, 5), 4.0 / 14);
  // a=2, D=5: (3-2)/(12-9) = 1/3, (4-2)/(14-9) = 2/5 -> 2/5. By definition:
  // given S > 2 ({3,4,10}), d=2: P = 2/3, E[min(S-2,2)] = 5/3.
  EXPECT_DOUBLE_EQ(dist.Exact(2, 5), 0.4);
  // a=2.5, D=1: only 3 in (2.5, 3.5]: (3-2)/(12-10.5) = 2/3.
  EXPECT_DOUBLE_EQ(dist.Exact(2.5, 1), 2.0 / 3);
  // a=4: nothing in (4, 9] -> 0; with D=6, 10 is in: (5-4)/(20-14) = 1/6.
  EXPECT_DOUBLE_EQ(dist.Exact(4, 5), 0.0);
  EXPECT_DOUBLE_EQ(dist.Exact(4, 6), 1.0 / 6);
  // Past every sample.
  EXPECT_DOUBLE_EQ(dist.Exact(10, 100), 0.0);
}

TEST(GittinsTest, TiedSamplesCountTogether) {
  // {2, 2, 6}, a=0, D=10: at d=2 both 2s are done: 2 / F(2) = 2/6;
  // at d=6: 3 / F(6) = 3/10. Max 1/3.
  GittinsDistribution dist({2, 2, 6});
  EXPECT_DOUBLE_EQ(dist.Exact(0, 10), 1.0 / 3);
}

TEST(GittinsTest, TableIsExactAtBreakpointsAndNeverAbove) {
  GittinsDistribution dist(kSamples);
  auto table = dist.MakeTable(5);
  EXPECT_DOUBLE_EQ(table.Lookup(0), 4.0 / 14);
  EXPECT_DOUBLE_EQ(table.Lookup(2), 0.4);
  EXPECT_DOUBLE_EQ(table.Lookup(5), dist.Exact(5, 5));  // 10 - 5 breakpoint
  EXPECT_DOUBLE_EQ(table.Lookup(2.5), 0.4);  // value at breakpoint 2
  EXPECT_LE(table.Lookup(2.5), dist.Exact(2.5, 5));
}

// Property on a random distribution: between breakpoints G only grows, so
// the table's step function stays at or under the exact index, and equals
// it at the breakpoint.
TEST(GittinsTest, TableLowerBoundsExactOnRandomDistribution) {
  std::mt19937_64 gen(42);
  std::lognormal_distribution<double> size(7, 1.5);
  std::vector<double> samples;
  for (int i = 0; i < 500; ++i) samples.push_back(size(gen));
  GittinsDistribution dist(samples);
  for (double delta : {500.0, 3600.0}) {
    auto table = dist.MakeTable(delta);
    std::uniform_real_distribution<double> at(0, 20000);
    for (int i = 0; i < 2000; ++i) {
      double a = at(gen);
      ASSERT_LE(table.Lookup(a), dist.Exact(a, delta) + 1e-15) << a;
    }
    for (double s : samples) {
      ASSERT_DOUBLE_EQ(table.Lookup(s), dist.Exact(s, delta)) << s;
    }
  }
}

TEST(GittinsTest, QuantilesKeepEndsAndSpacing) {
  std::vector<double> samples;
  for (int i = 100; i >= 0; --i) samples.push_back(i);  // 0..100, reversed
  EXPECT_EQ(GittinsDistribution::Quantiles(samples, 5),
            (std::vector<double>{0, 25, 50, 75, 100}));
  EXPECT_EQ(GittinsDistribution::Quantiles({3, 1, 2}, 5),
            (std::vector<double>{1, 2, 3}));
}

}  // namespace
}  // namespace tiresias
