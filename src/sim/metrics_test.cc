#include "sim/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(MetricsTest, PercentileNearestRank) {
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(v, 0.5), 5);
  EXPECT_EQ(Percentile(v, 0.95), 10);
  EXPECT_EQ(Percentile(v, 0.0), 1);
  EXPECT_EQ(Percentile({}, 0.5), 0);
}

TEST(MetricsTest, CdfDownsamplesAndEndsAtOne) {
  EXPECT_THAT(Cdf({3, 1, 2, 4}, 10),
              ElementsAre(Pair(1, 0.25), Pair(2, 0.5), Pair(3, 0.75),
                          Pair(4, 1.0)));
  EXPECT_THAT(Cdf({5, 1, 2, 3, 4}, 2),
              ElementsAre(Pair(3, 0.6), Pair(5, 1.0)));
}

JobResult Job(int gpus, double submit, double end, double duration,
              double executed) {
  return JobResult{0, gpus, "", submit, submit, end, duration, executed,
                   0,  0,    0,  0};
}

// Four jobs, one per bin; bins by GPUs (<= 4 small) and duration (< 800).
TEST(MetricsTest, SummarizesAndBins) {
  SimResult r;
  r.total_gpus = 8;
  r.first_submit = 0;
  r.last_end = 2000;
  r.busy_gpu_seconds = 4000;
  r.jobs = {Job(1, 0, 100, 100, 100),      // SS, no queueing
            Job(4, 0, 1000, 800, 800),     // SL, 200 s queueing
            Job(8, 100, 700, 500, 500),    // LS, 100 s
            Job(16, 0, 2000, 900, 1000)};  // LL, 1000 s
  Summary s = Summarize(r);
  EXPECT_EQ(s.jobs, 4);
  EXPECT_DOUBLE_EQ(s.avg_jct_s, (100 + 1000 + 600 + 2000) / 4.0);
  EXPECT_DOUBLE_EQ(s.median_jct_s, 600);
  EXPECT_DOUBLE_EQ(s.max_jct_s, 2000);
  EXPECT_DOUBLE_EQ(s.avg_queueing_s, (0 + 200 + 100 + 1000) / 4.0);
  EXPECT_DOUBLE_EQ(s.makespan_s, 2000);
  EXPECT_DOUBLE_EQ(s.gpu_utilization, 4000.0 / (8 * 2000));
  EXPECT_EQ(s.bins["SS"].jobs, 1);
  EXPECT_DOUBLE_EQ(s.bins["SL"].avg_jct_s, 1000);
  EXPECT_DOUBLE_EQ(s.bins["LS"].avg_queueing_s, 100);
  EXPECT_DOUBLE_EQ(s.bins["LL"].p95_jct_s, 2000);
  // The boundary is a parameter: at 1000 s, the 900-s job is short.
  Summary wide = Summarize(r, BinOptions{.short_max_seconds = 1000});
  EXPECT_EQ(wide.bins["LS"].jobs, 2);
  EXPECT_EQ(wide.bins["LL"].jobs, 0);
}

TEST(MetricsTest, UtilizationSeriesAveragesWindows) {
  SimResult r;
  r.first_submit = 0;
  r.last_end = 100;
  // 4 busy GPUs for [0, 25), 0 for [25, 100).
  r.timeseries = {{0, 4, 0, 1}, {25, 0, 0, 0}};
  EXPECT_THAT(UtilizationSeries(r, 2),
              ElementsAre(Pair(0, 2.0), Pair(50, 0.0)));
}

// 1..100, a point a decade: 99% of values are above 1, 10% above 90, 1%
// above 99; the largest value (nothing above it) is off a log axis.
TEST(TailTest, LogSpacedFractionsDownToOneValue) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);
  const auto tail = Tail(values, 1);
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(tail[0], (std::pair<double, double>{1, 0.99}));
  EXPECT_EQ(tail[1], (std::pair<double, double>{90, 0.1}));
  EXPECT_EQ(tail[2], (std::pair<double, double>{99, 0.01}));
  EXPECT_TRUE(Tail({}, 10).empty());
  EXPECT_TRUE(Tail({5}, 10).empty());  // one value: none above it
  // Ten a decade over 100,000 values: 51 fractions, of which those that
  // floor to the same count of values above are one point (3 of 3.98 and
  // 3.16; 1 of 1.99, 1.58, 1.26 and 1.00): 47, fractions descending.
  std::vector<double> many(100000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  const auto fine = Tail(many, 10);
  EXPECT_EQ(fine.size(), 47u);
  for (size_t i = 1; i < fine.size(); ++i) {
    EXPECT_LT(fine[i].second, fine[i - 1].second);
    EXPECT_GT(fine[i].first, fine[i - 1].first);
  }
  EXPECT_DOUBLE_EQ(fine.back().second, 1e-5);
}

}  // namespace
}  // namespace tiresias
