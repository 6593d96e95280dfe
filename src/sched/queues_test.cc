#include "sched/queues.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tiresias {
namespace {

TEST(QueueConfigTest, PresetsAndBounds) {
  QueueConfig paper = QueueConfig::PaperDefault();
  EXPECT_EQ(paper.num_queues(), 2);
  EXPECT_EQ(paper.upper_bound(0), 3600);
  EXPECT_TRUE(std::isinf(paper.upper_bound(1)));
  QueueConfig orig = QueueConfig::OriginalSimulator();
  EXPECT_EQ(orig.num_queues(), 3);
  EXPECT_EQ(orig.QueueFor(0), 0);
  EXPECT_EQ(orig.QueueFor(3249.9), 0);
  EXPECT_EQ(orig.QueueFor(3250), 1);  // [lo, hi)
  EXPECT_EQ(orig.QueueFor(7200), 2);
  EXPECT_TRUE(orig.is_last(2));
}

TEST(QueueConfigTest, Parses) {
  auto q = QueueConfig::Parse("3250: 7200");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->thresholds(), (std::vector<double>{3250, 7200}));
  EXPECT_EQ(QueueConfig::Parse("3600")->num_queues(), 2);
}

TEST(QueueConfigTest, RejectsBadThresholds) {
  EXPECT_EQ(QueueConfig::Parse("7200:3250").status().message(),
            "queue thresholds must ascend: 7200 then 3250");
  EXPECT_EQ(QueueConfig::Parse("1h").status().message(),
            "thresholds \"1h\": expected GPU-seconds separated by ':', "
            "e.g. 3250:7200");
  // One syntax, one meaning: a comma separates sweep values, never the
  // thresholds of one setting.
  EXPECT_EQ(QueueConfig::Parse("3250,7200").status().message(),
            "thresholds \"3250,7200\": separate a K-queue list's thresholds "
            "with ':', e.g. 3250:7200 (K = 3); ',' separates the values of a "
            "--sweep");
  EXPECT_EQ(QueueConfig::Parse("0").status().message(),
            "queue threshold 1: expected a positive number of GPU-seconds, "
            "got 0");
  EXPECT_FALSE(QueueConfig::Parse("").ok());
}

}  // namespace
}  // namespace tiresias
