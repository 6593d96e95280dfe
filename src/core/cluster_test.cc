#include "core/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias {
namespace {

using ::testing::ElementsAre;

Topology Mixed() {
  // rack 0: s0 (2 GPUs), s1 (8 GPUs); rack 1: s2 (2 GPUs)
  return *Topology::Create({{0, 2, ""}, {0, 8, ""}, {1, 2, "gpu-box"}});
}

TEST(TopologyTest, NumbersGpusServerByServer) {
  Topology t = Mixed();
  EXPECT_EQ(t.total_gpus(), 12);
  EXPECT_EQ(t.num_racks(), 2);
  EXPECT_EQ(t.max_gpus_per_server(), 8);
  EXPECT_EQ(t.server(1).first_gpu, 2);
  EXPECT_EQ(t.ServerOf(9), 1);
  EXPECT_EQ(t.ServerOf(10), 2);
  EXPECT_EQ(t.server(0).name, "s0");
  EXPECT_EQ(t.server(2).name, "gpu-box");
  EXPECT_EQ(t.Describe(), "3 servers (2x2, 1x8), 12 GPUs, 2 racks");
  EXPECT_EQ(Topology::Uniform(1, 60, 8).Describe(),
            "60 servers x 8 GPUs, 480 GPUs, 1 rack");
}

TEST(TopologyTest, RejectsBadServers) {
  EXPECT_FALSE(Topology::Create({}).ok());
  auto bad = Topology::Create({{0, 4, ""}, {0, 0, ""}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "server 1: expected a positive GPU count, got 0");
}

TEST(ClusterTest, AllocateIsAllOrNothing) {
  Cluster c(Mixed());
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{0, 1}).ok());
  EXPECT_EQ(c.free_gpus(), 10);
  EXPECT_EQ(c.owner(1), 1);
  // GPU 1 is taken: nothing of this request is applied.
  auto st = c.Allocate(2, std::vector<GpuId>{2, 1});
  EXPECT_EQ(st.message(), "GPU 1 is already held by job 1");
  EXPECT_TRUE(c.gpu_free(2));
  EXPECT_EQ(c.free_gpus(), 10);
  EXPECT_FALSE(c.Allocate(2, std::vector<GpuId>{3, 3}).ok());
  EXPECT_FALSE(c.Allocate(2, std::vector<GpuId>{12}).ok());
  EXPECT_EQ(c.free_gpus(), 10);
}

TEST(ClusterTest, IndexesServersByFreeCount) {
  Cluster c(Mixed());
  EXPECT_THAT(c.ServersWithFree(2), ElementsAre(0, 2));
  EXPECT_THAT(c.ServersWithFree(8), ElementsAre(1));
  ASSERT_TRUE(c.Allocate(5, std::vector<GpuId>{2, 3, 4, 5, 6, 7}).ok());
  EXPECT_THAT(c.ServersWithFree(2), ElementsAre(0, 1, 2));
  EXPECT_TRUE(c.ServersWithFree(8).empty());
  std::vector<GpuId> free;
  c.AppendFreeGpus(1, 5, &free);
  EXPECT_THAT(free, ElementsAre(8, 9));
  c.Release(5, std::vector<GpuId>{2, 3, 4, 5, 6, 7});
  EXPECT_THAT(c.ServersWithFree(8), ElementsAre(1));
  EXPECT_EQ(c.free_gpus(), 12);
}

}  // namespace
}  // namespace tiresias
