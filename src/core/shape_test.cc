#include "core/shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/testing/lowest_free_placer.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;

// rack 0: s0 (2 GPUs: 0-1), s1 (8 GPUs: 2-9); rack 1: s2 (2 GPUs: 10-11)
Topology Mixed() {
  return *Topology::Create({{0, 2, ""}, {0, 8, ""}, {1, 2, ""}});
}

Job Shaped(int nodes, int per_node) {
  return Job(JobSpec{.id = 7,
                     .num_gpus = nodes * per_node,
                     .nodes = nodes,
                     .gpus_per_node = per_node});
}

using LowestFirst = test_support::LowestFreePlacer;

TEST(ShapeTest, TakesTheFullestServersThatHoldAWholeNodeEach) {
  Cluster cluster(Mixed());
  std::vector<GpuId> gpus;
  // Both 2-GPU servers before the 8-GPU one is broken into.
  ASSERT_TRUE(PlaceShaped(cluster, Shaped(2, 2), &gpus));
  EXPECT_THAT(gpus, ElementsAre(0, 1, 10, 11));
  // With s0 down to one free GPU: s2, then two of s1.
  ASSERT_TRUE(cluster.Allocate(1, std::vector<GpuId>{0}).ok());
  gpus.clear();
  ASSERT_TRUE(PlaceShaped(cluster, Shaped(2, 2), &gpus));
  EXPECT_THAT(gpus, ElementsAre(10, 11, 2, 3));
  // A 1x4 fits only s1.
  gpus.clear();
  ASSERT_TRUE(PlaceShaped(cluster, Shaped(1, 4), &gpus));
  EXPECT_THAT(gpus, ElementsAre(2, 3, 4, 5));
}

TEST(ShapeTest, RefusesWithoutEnoughServersChangingNothing) {
  Cluster cluster(Mixed());
  ASSERT_TRUE(cluster.Allocate(1, std::vector<GpuId>{0}).ok());
  std::vector<GpuId> gpus = {42};
  // 11 GPUs are free, but only two servers have 2 of them.
  EXPECT_FALSE(PlaceShaped(cluster, Shaped(3, 2), &gpus));
  EXPECT_FALSE(PlaceShaped(cluster, Shaped(1, 9), &gpus));  // no such server
  EXPECT_FALSE(PlaceShaped(cluster, Shaped(2, 8), &gpus));
  EXPECT_THAT(gpus, ElementsAre(42));
  EXPECT_EQ(ServersWithAtLeast(cluster, 2), 2);
  EXPECT_EQ(ServersWithAtLeast(cluster, 1), 3);
  EXPECT_EQ(ServersWithAtLeast(cluster, 3), 1);
  // A cordoned server gives nothing.
  cluster.SetCordoned(2, true);
  EXPECT_EQ(ServersWithAtLeast(cluster, 2), 1);
  EXPECT_FALSE(PlaceShaped(cluster, Shaped(2, 2), &gpus));
  EXPECT_THAT(gpus, ElementsAre(42));
}

TEST(ShapeTest, OnlyShapedJobsBypassTheScheme) {
  Cluster cluster(Mixed());
  LowestFirst placer;
  Rng rng(1);
  std::vector<GpuId> gpus;
  // Unshaped: the scheme's choice (0, 1, 2: over two servers).
  ASSERT_TRUE(PlaceJob(placer, cluster, Job(JobSpec{.id = 1, .num_gpus = 3}),
                       rng, &gpus));
  EXPECT_THAT(gpus, ElementsAre(0, 1, 2));
  EXPECT_EQ(placer.calls, 1);
  gpus.clear();
  ASSERT_TRUE(PlaceJob(placer, cluster, Shaped(3, 1), rng, &gpus));
  EXPECT_THAT(gpus, ElementsAre(0, 10, 2));  // one per server, fullest first
  EXPECT_EQ(placer.calls, 1);
}

TEST(ShapeTest, MightFitCountsServersForShapedJobs) {
  const Topology topology = Mixed();
  LowestFirst placer;
  EXPECT_TRUE(JobMightFit(placer, topology, {2, 8, 1}, 11, Shaped(2, 2)));
  EXPECT_FALSE(JobMightFit(placer, topology, {1, 8, 1}, 10, Shaped(2, 2)));
  EXPECT_TRUE(JobMightFit(placer, topology, {1, 8, 1}, 10, Shaped(1, 8)));
  // Unshaped: the scheme's own check (counts).
  EXPECT_TRUE(JobMightFit(placer, topology, {1, 8, 1}, 10,
                          Job(JobSpec{.id = 1, .num_gpus = 10})));
  EXPECT_FALSE(JobMightFit(placer, topology, {1, 8, 1}, 10,
                           Job(JobSpec{.id = 1, .num_gpus = 11})));
}

}  // namespace
}  // namespace tiresias
