#include "tune/drift.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace tiresias {
namespace {

using ::testing::ElementsAre;

TEST(DriftTest, IdenticalSamplesAreNoDrift) {
  std::vector<double> a;
  for (int i = 0; i < 100; ++i) a.push_back(i);
  DriftTest t = TestDrift(a, a);
  EXPECT_EQ(t.statistic, 0);
  EXPECT_EQ(t.p_value, 1);
  EXPECT_FALSE(t.drift);
}

// ECDFs of {1,2,3,4} and {3,4,5,6}: at 2 they are 0.5 and 0, at 3 0.75
// and 0.25, at 4 1 and 0.5: D = 0.5.
TEST(DriftTest, StatisticIsTheLargestGapBetweenTheCdfs) {
  DriftTest t = TestDrift({4, 3, 2, 1}, {6, 5, 4, 3});
  EXPECT_DOUBLE_EQ(t.statistic, 0.5);
  EXPECT_EQ(t.n_before, 4);
  EXPECT_EQ(t.n_recent, 4);
  EXPECT_FALSE(t.drift);  // too few jobs to say
}

// n1 = n2 = 100, D = 0.2: lambda = (sqrt(50) + 0.12 + 0.11 / sqrt(50)) x
// 0.2 = 1.4413; Q = 2 (e^(-2 lambda^2) - e^(-8 lambda^2) + ...) = 0.031377.
TEST(DriftTest, PValueIsKolmogorovsWithStephensCorrection) {
  std::vector<double> a, b;
  for (int i = 0; i < 100; ++i) {
    a.push_back(i);
    b.push_back(i + 20);  // the CDFs are 0.2 apart between 20 and 99
  }
  DriftTest t = TestDrift(a, b);
  EXPECT_NEAR(t.statistic, 0.2, 1e-12);
  EXPECT_NEAR(t.p_value, 0.031377, 1e-5);
  EXPECT_FALSE(t.drift);  // not below 0.01
  EXPECT_TRUE(TestDrift(a, b, 0.05).drift);
}

// Sizes drawn from one log-normal distribution twice are no drift at 1%
// (in 20 seeded tries, at most one false alarm); a distribution with a
// median 3x larger is drift every time.
TEST(DriftTest, SameDistributionRarelyAndShiftedAlwaysDrifts) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> sizes(8, 2);
  int false_alarms = 0;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> before, same, shifted;
    for (int i = 0; i < 500; ++i) before.push_back(sizes(rng));
    for (int i = 0; i < 300; ++i) same.push_back(sizes(rng));
    for (int i = 0; i < 300; ++i) shifted.push_back(3 * sizes(rng));
    if (TestDrift(before, same).drift) ++false_alarms;
    EXPECT_TRUE(TestDrift(before, shifted).drift) << trial;
  }
  EXPECT_LE(false_alarms, 1);
}

TEST(DriftTest, QuantileSampleKeepsEvenlySpacedRanks) {
  std::vector<double> values;
  for (int i = 1001; i >= 1; --i) values.push_back(i);
  EXPECT_THAT(QuantileSample(values, 11),
              ElementsAre(1, 101, 201, 301, 401, 501, 601, 701, 801, 901,
                          1001));
  EXPECT_EQ(QuantileSample({3, 1, 2}, 11).size(), 3u);
}

}  // namespace
}  // namespace tiresias
