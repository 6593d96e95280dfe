#include "sched/gittins.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

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

namespace tiresias {
namespace {

// Samples 100, 200, 5000 (n = 3), quantum 3,250, Python 2 arithmetic:
//   a = 99:   idx 0, a + 3250 = 3349 -> idx_delta 2; p = 2/3 = 0.66667;
//             e = (100 + 200 + 3250 x 1) // 3 = 1183; 666,670 / 1183 =
//             563.5418
//   a = 199:  idx 1, idx_delta 2; p = 0.5; e = (200 + 3250) // 2 = 1725;
//             500,000 / 1725 = 289.8551
//   a = 4999: idx 2; a + 3250 is past the largest: idx_delta = n - 1 = 2;
//             p = 0: 0
// Lookup buckets up: attained 0-99 -> the first, 100-199 -> the second,
// 200-5000 -> the third (0), above 5000 -> 0.
TEST(OriginalGittinsIndexTest, HandWorkedSmallDistribution) {
  OriginalGittinsIndex index({5000, 100, 200});
  EXPECT_DOUBLE_EQ(index.Compute(99), 563.5418);
  EXPECT_DOUBLE_EQ(index.Compute(199), 289.8551);
  EXPECT_DOUBLE_EQ(index.Compute(4999), 0);
  EXPECT_DOUBLE_EQ(index.Compute(5000), 0);
  EXPECT_DOUBLE_EQ(index.Lookup(0), 563.5418);
  EXPECT_DOUBLE_EQ(index.Lookup(99.9), 563.5418);
  EXPECT_DOUBLE_EQ(index.Lookup(100.7), 289.8551);
  EXPECT_DOUBLE_EQ(index.Lookup(199), 289.8551);
  EXPECT_DOUBLE_EQ(index.Lookup(200), 0);
  EXPECT_DOUBLE_EQ(index.Lookup(1e9), 0);
  EXPECT_DOUBLE_EQ(OriginalGittinsIndex({}).Lookup(5), 0);
}

// The released code's own values on its own distribution (1,001 samples
// of data/yarn-gput1000.csv), from its functions run with Python 2's
// integer division: 299.701 at 0, 89.4121 at 3,000, 36.7358 at 7,200.
TEST(OriginalGittinsIndexTest, TheReleasedValuesOnYarnGput1000) {
  std::ifstream in("data/yarn-gput1000.csv");
  ASSERT_TRUE(in) << "run from the source tree";
  std::string line;
  std::getline(in, line);  // duration
  std::vector<double> samples;
  while (std::getline(in, line)) {
    if (!line.empty()) samples.push_back(std::stod(line));
  }
  ASSERT_EQ(samples.size(), 1001u);
  OriginalGittinsIndex index(samples);
  EXPECT_DOUBLE_EQ(index.Lookup(0), 299.701);
  EXPECT_DOUBLE_EQ(index.Lookup(3000), 89.4121);
  EXPECT_DOUBLE_EQ(index.Lookup(7200), 36.7358);
}

}  // namespace
}  // namespace tiresias
