#include "core/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"

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
            "server 1: expected a positive GPU count (0 only with spare CPUs), "
            "got 0");
}

// A server without GPUs but with spare CPUs (a node for CPU-only jobs)
// holds no GPU id, is never free of GPUs to give, and keeps its CPUs.
TEST(TopologyTest, AServerWithoutGpusKeepsSpareCpus) {
  auto t = Topology::Create(
      {{0, 2, "g"}, {.rack = 0, .num_gpus = 0, .name = "c", .spare_cpus = 4}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->total_gpus(), 2);
  EXPECT_EQ(t->server(1).first_gpu, 2);
  Cluster c(*t);
  EXPECT_EQ(c.free_gpus(), 2);
  EXPECT_EQ(c.free_on(1), 0);
  EXPECT_EQ(c.spare_free_cpus(1), 4);
  c.SetCordoned(1, true);
  EXPECT_EQ(c.free_gpus(), 2);
  EXPECT_EQ(c.cordoned_gpus(), 0);
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

// An exclusive job's server keeps its other GPUs from everyone until the
// job releases all of its GPUs there; cordons and reservations compose.
TEST(ClusterTest, AnExclusiveJobReservesItsServers) {
  Cluster c(Mixed());  // s0: 0-1, s1: 2-9, s2: 10-11
  const std::vector<GpuId> mine = {2, 3, 10};
  ASSERT_TRUE(c.Allocate(7, mine, /*exclusive=*/true).ok());
  EXPECT_TRUE(c.reserved(1) && c.reserved(2) && !c.reserved(0));
  EXPECT_EQ(c.free_gpus(), 2);  // s0's alone
  EXPECT_EQ(c.free_on(1), 0);
  EXPECT_FALSE(c.gpu_free(4));
  EXPECT_TRUE(c.exclusive_gpu(3) && !c.exclusive_gpu(4));
  EXPECT_EQ(c.whole_free_gpus(), 2);
  EXPECT_EQ(c.cordoned_gpus(), 0);  // reserved is not drained
  std::vector<GpuId> free;
  c.AppendFreeGpus(1, 8, &free);
  EXPECT_TRUE(free.empty());
  EXPECT_THAT(c.ServersWithFree(0), ElementsAre(1, 2));
  // Nobody else may take a reserved server's GPUs, and an exclusive job
  // no server another job holds a GPU of.
  EXPECT_FALSE(c.Fits(std::vector<GpuId>{4}, false));
  EXPECT_EQ(c.Allocate(9, std::vector<GpuId>{4}).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(c.Allocate(9, std::vector<GpuId>{0}).ok());
  EXPECT_FALSE(c.Fits(std::vector<GpuId>{1}, true));
  EXPECT_TRUE(c.Fits(std::vector<GpuId>{1}, false));
  c.Release(9, std::vector<GpuId>{0});
  EXPECT_TRUE(c.Fits(std::vector<GpuId>{0, 1}, true));
  // A drain on top, lifted while still reserved: nothing frees.
  c.SetCordoned(1, true);
  EXPECT_EQ(c.cordoned_idle_gpus(), 6);
  c.SetCordoned(1, false);
  EXPECT_EQ(c.free_gpus(), 2);
  // Partly released: still reserved; all released: free again.
  c.Release(7, std::vector<GpuId>{2});
  EXPECT_TRUE(c.reserved(1));
  EXPECT_EQ(c.free_on(1), 0);
  c.Release(7, std::vector<GpuId>{3, 10});
  EXPECT_FALSE(c.reserved(1) || c.reserved(2));
  EXPECT_EQ(c.free_gpus(), 12);
  EXPECT_EQ(c.whole_free_gpus(), 12);
  EXPECT_EQ(c.free_on(1), 8);
  EXPECT_FALSE(c.exclusive_gpu(3));
  // Cordoned while reserved, released, then uncordoned: counts line up.
  ASSERT_TRUE(c.Allocate(8, std::vector<GpuId>{0}, true).ok());
  c.SetCordoned(0, true);
  c.Release(8, std::vector<GpuId>{0});
  EXPECT_EQ(c.cordoned_idle_gpus(), 2);
  EXPECT_EQ(c.free_gpus(), 10);
  c.SetCordoned(0, false);
  EXPECT_EQ(c.free_gpus(), 12);
  EXPECT_EQ(c.free_on(0), 2);
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

// A server added to a cluster in use: what was numbered keeps its number
// and holder; the new server is free, indexed by its count, and a larger
// one than any before makes room in the index.
TEST(ClusterTest, AddServerLeavesWhatIsThereAlone) {
  Cluster c(Mixed());
  ASSERT_TRUE(c.Allocate(7, std::vector<GpuId>{2, 3, 4}).ok());
  auto added = c.AddServer(ServerSpec{0, 16, "big"});
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 3);
  EXPECT_EQ(c.topology().server(3).first_gpu, 12);
  EXPECT_EQ(c.topology().ServerOf(27), 3);
  EXPECT_EQ(c.topology().max_gpus_per_server(), 16);
  EXPECT_EQ(c.total_gpus(), 28);
  EXPECT_EQ(c.free_gpus(), 25);
  EXPECT_EQ(c.whole_free_gpus(), 2 + 2 + 16);
  EXPECT_EQ(c.owner(3), 7);
  EXPECT_TRUE(c.gpu_free(27));
  EXPECT_THAT(c.ServersWithFree(16), ElementsAre(3));
  EXPECT_THAT(c.ServersWithFree(5), ElementsAre(1));
  ASSERT_TRUE(c.Allocate(8, std::vector<GpuId>{12, 13}, true).ok());
  EXPECT_TRUE(c.reserved(3));
  EXPECT_EQ(c.free_gpus(), 9);
  // A bad server changes nothing.
  auto bad = c.AddServer(ServerSpec{0, 0, "empty"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "server 4: expected a positive GPU count (0 only with spare CPUs), "
            "got 0");
  EXPECT_EQ(c.topology().num_servers(), 4);
  EXPECT_EQ(c.total_gpus(), 28);
}

// Property: a cluster grown server by server answers every query as one
// built at once from the same servers, before and after the same
// allocations, cordons and releases (random shapes, past 64 servers so
// that the bitsets grow).
TEST(ClusterTest, GrownServerByServerEqualsBuiltAtOnce) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    std::vector<ServerSpec> specs;
    const int n = 1 + static_cast<int>(rng.Below(150));
    for (int i = 0; i < n; ++i) {
      const int gpus = static_cast<int>(rng.Below(9));
      specs.push_back(ServerSpec{static_cast<int>(rng.Below(3)),
                                 gpus,
                                 "",
                                 "",
                                 {},
                                 0,
                                 0,
                                 gpus == 0 ? 4 : 0,
                                 gpus == 0 ? 1024 : 0});
    }
    Cluster whole(*Topology::Create(specs));
    Cluster grown(*Topology::Create({specs[0]}));
    for (int i = 1; i < n; ++i) ASSERT_TRUE(grown.AddServer(specs[i]).ok());
    auto same = [&](const char* when) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << ", " << when);
      ASSERT_EQ(grown.total_gpus(), whole.total_gpus());
      EXPECT_EQ(grown.free_gpus(), whole.free_gpus());
      EXPECT_EQ(grown.whole_free_gpus(), whole.whole_free_gpus());
      EXPECT_EQ(grown.cordoned_gpus(), whole.cordoned_gpus());
      EXPECT_EQ(grown.cordoned_idle_gpus(), whole.cordoned_idle_gpus());
      EXPECT_EQ(grown.reserved_servers(), whole.reserved_servers());
      const Topology& t = whole.topology();
      EXPECT_EQ(grown.topology().max_gpus_per_server(),
                t.max_gpus_per_server());
      EXPECT_EQ(grown.topology().num_racks(), t.num_racks());
      for (int f = 0; f <= t.max_gpus_per_server(); ++f) {
        EXPECT_THAT(grown.ServersWithFree(f),
                    testing::ElementsAreArray(
                        std::vector<int>(whole.ServersWithFree(f).begin(),
                                         whole.ServersWithFree(f).end())))
            << "free " << f;
      }
      for (int s = 0; s < t.num_servers(); ++s) {
        EXPECT_EQ(grown.topology().server(s).first_gpu, t.server(s).first_gpu);
        EXPECT_EQ(grown.free_on(s), whole.free_on(s));
        EXPECT_EQ(grown.spare_free_cpus(s), whole.spare_free_cpus(s));
      }
      for (GpuId g = 0; g < t.total_gpus(); ++g) {
        EXPECT_EQ(grown.owner(g), whole.owner(g));
        EXPECT_EQ(grown.topology().ServerOf(g), t.ServerOf(g));
      }
    };
    same("built");
    std::vector<std::vector<GpuId>> held;
    for (int j = 0; j < 40 && whole.total_gpus() > 0; ++j) {
      const GpuId g = static_cast<GpuId>(rng.Below(whole.total_gpus()));
      if (!whole.gpu_free(g)) continue;
      const bool exclusive = rng.Below(4) == 0;
      const std::vector<GpuId> gpus{g};
      const bool a = whole.Allocate(j, gpus, exclusive).ok();
      ASSERT_EQ(grown.Allocate(j, gpus, exclusive).ok(), a);
      if (a) held.push_back(gpus);
      if (rng.Below(5) == 0) {
        const int s = static_cast<int>(rng.Below(n));
        const bool on = rng.Below(2) == 0;
        whole.SetCordoned(s, on);
        grown.SetCordoned(s, on);
      }
    }
    same("allocated");
    for (size_t j = 0; j < held.size(); j += 2) {
      const JobId owner = whole.owner(held[j][0]);
      whole.Release(owner, held[j]);
      grown.Release(owner, held[j]);
    }
    same("released");
  }
}

}  // namespace
}  // namespace tiresias
