// The cluster's history in the store (cluster_history.h): samples kept in
// time order, range queries, pruning to the retention (thinning old points
// to one per bucket, dropping the oldest), and the upgrade of a file that
// predates the table.
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/cluster_history.h"
#include "master/old_state_file.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::RawSql;
using master_testing::TestDir;
using ::testing::ElementsAre;

// Retention small enough to work out by hand: full resolution for the last
// 100 s, one point per 50 s bucket before that, nothing older than 1000 s.
constexpr HistoryRetention kSmall{.full_resolution = Seconds{100},
                                  .coarse_bucket = Seconds{50},
                                  .keep = Seconds{1000},
                                  .max_rows = 1000};

ClusterSample At(double t, int busy = 1) {
  return ClusterSample{.time = Seconds{t},
                       .gpus_busy = busy,
                       .gpus_total = 8,
                       .jobs_waiting = 2,
                       .jobs_running = 1};
}

std::vector<double> Times(const Store& store, double since = 0,
                          double until = 1e12) {
  auto samples = store.ClusterHistory(Seconds{since}, Seconds{until});
  EXPECT_TRUE(samples.ok()) << samples.status();
  std::vector<double> out;
  if (samples.ok()) {
    for (const ClusterSample& s : *samples) out.push_back(s.time.count());
  }
  return out;
}

std::vector<double> Range(double from, double to, double step) {
  std::vector<double> out;
  for (double t = from; t <= to; t += step) out.push_back(t);
  return out;
}

TEST(StoreHistoryTest, SamplesComeBackInTimeOrderWithTheirCounts) {
  TestDir dir;
  auto store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddClusterSample(At(1020, 3), kSmall).ok());
  ASSERT_TRUE((*store)->AddClusterSample(At(1000, 1), kSmall).ok());
  ASSERT_TRUE((*store)->AddClusterSample(At(1010, 2), kSmall).ok());
  // A second sample at the same time replaces the first.
  ASSERT_TRUE((*store)->AddClusterSample(At(1010, 5), kSmall).ok());
  auto all = (*store)->ClusterHistory(Seconds{0}, Seconds{1e12});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, ElementsAre(At(1000, 1), At(1010, 5), At(1020, 3)));
  // Both ends are inclusive.
  EXPECT_THAT(Times(**store, 1010, 1020), ElementsAre(1010, 1020));
  EXPECT_THAT(Times(**store, 1001, 1019), ElementsAre(1010));
  EXPECT_TRUE(Times(**store, 2000, 3000).empty());
  // Survives a reopen.
  store->reset();
  store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(Times(**store), ElementsAre(1000, 1010, 1020));
}

TEST(StoreHistoryTest, BadSamplesAreRefusedNamingTheTime) {
  TestDir dir;
  auto store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status s = (*store)->AddClusterSample(At(1000, -1), kSmall);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "cluster sample at 1000: expected a finite time and non-negative "
            "counts");
  EXPECT_EQ((*store)->AddClusterSample(At(std::numeric_limits<double>::infinity()), kSmall).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Times(**store).empty());
}

// Samples every 10 s from 1000 to 1300. At 1300 everything before 1200 is
// past full resolution: one point per 50 s bucket stays (1000, 1050, 1100,
// 1150: the first of each), then 1200..1300 as sampled. A sample at 2150
// drops what is older than 1150 and thins what is older than 2050; one at
// 2160 with max_rows 3 keeps the newest three.
TEST(StoreHistoryTest, OldPointsAreThinnedThenDroppedAndRowsAreCapped) {
  TestDir dir;
  auto store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok()) << store.status();
  for (double t = 1000; t <= 1300; t += 10) {
    ASSERT_TRUE((*store)->AddClusterSample(At(t), kSmall).ok());
  }
  std::vector<double> expected = {1000, 1050, 1100, 1150};
  for (double t : Range(1200, 1300, 10)) expected.push_back(t);
  EXPECT_EQ(Times(**store), expected);

  ASSERT_TRUE((*store)->AddClusterSample(At(2150), kSmall).ok());
  EXPECT_THAT(Times(**store), ElementsAre(1150, 1200, 1250, 1300, 2150));
  EXPECT_THAT(Times(**store, 1200, 1300), ElementsAre(1200, 1250, 1300));

  HistoryRetention capped = kSmall;
  capped.max_rows = 3;
  ASSERT_TRUE((*store)->AddClusterSample(At(2160), capped).ok());
  EXPECT_THAT(Times(**store), ElementsAre(1300, 2150, 2160));
}

TEST(StoreHistoryTest, ThinSamplesKeepsEveryKthAndTheNewest) {
  std::vector<ClusterSample> ten;
  for (int i = 0; i < 10; ++i) ten.push_back(At(i));
  auto times = [](const std::vector<ClusterSample>& v) {
    std::vector<double> out;
    for (const ClusterSample& s : v) out.push_back(s.time.count());
    return out;
  };
  // ceil(10 / 4) = 3: 9, 6, 3, 0.
  EXPECT_THAT(times(ThinSamples(ten, 4)), ElementsAre(0, 3, 6, 9));
  // ceil(10 / 3) = 4: 9, 5, 1.
  EXPECT_THAT(times(ThinSamples(ten, 3)), ElementsAre(1, 5, 9));
  EXPECT_EQ(ThinSamples(ten, 10).size(), 10u);
  EXPECT_EQ(ThinSamples(ten, 0).size(), 10u);
  EXPECT_THAT(times(ThinSamples(ten, 1)), ElementsAre(9));
}

// A file from before the history table (schema version 11, as it would be
// found in the field: the upgrade creates the table, empty) is upgraded
// in place; the history then works and survives a reopen.
TEST(StoreHistoryTest, UpgradeAddsAnEmptyHistoryTable) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  master_testing::WriteOldStateFile(path, 11);
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE(Times(**store).empty());
    ASSERT_TRUE((*store)->AddClusterSample(At(1000), kSmall).ok());
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(Times(**store), ElementsAre(1000));
}

}  // namespace
}  // namespace tiresias
