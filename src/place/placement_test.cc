#include "place/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "place/model_skew.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;

// Rack 0: s0 (2 GPUs: 0-1), s1 (8: 2-9), s2 (2: 10-11), s3 (8: 12-19).
Topology Mixed() {
  return *Topology::Create(
      {{0, 2, ""}, {0, 8, ""}, {0, 2, ""}, {0, 8, ""}});
}

std::optional<std::vector<GpuId>> PlaceWith(const std::string& scheme,
                                            const Cluster& cluster, int gpus,
                                            const std::string& model = "",
                                            uint64_t seed = 1) {
  auto placer = *MakePlacer(scheme);
  Rng rng(seed);
  Job job(JobSpec{99, gpus, Seconds{0}, std::nullopt, model});
  std::vector<GpuId> out;
  if (!placer->Place(cluster, job, rng, &out)) {
    EXPECT_TRUE(out.empty()) << "partial allocation on failure";
    return std::nullopt;
  }
  EXPECT_EQ(static_cast<int>(out.size()), gpus);
  return out;
}

TEST(ConsolidateTest, BestFitSingleServer) {
  Cluster c(Mixed());
  // 2 GPUs: the fullest server that holds it is a 2-GPU server.
  EXPECT_THAT(*PlaceWith("consolidate", c, 2), ElementsAre(0, 1));
  // 4 GPUs fit only an 8-GPU server; lowest index first.
  EXPECT_THAT(*PlaceWith("consolidate", c, 4), ElementsAre(2, 3, 4, 5));
  // With s1 half used, a 3-GPU job goes to s1 (4 free), not the empty s3.
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{2, 3, 4, 5}).ok());
  EXPECT_THAT(*PlaceWith("consolidate", c, 3), ElementsAre(6, 7, 8));
}

TEST(ConsolidateTest, LargeJobTakesWholeServers) {
  Cluster c(Mixed());
  // 12 GPUs: whole free servers, largest first: s1 (8) + 4 of s3.
  EXPECT_THAT(*PlaceWith("consolidate", c, 12),
              ElementsAre(2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15));
  // With one GPU used on each 8-GPU server, no whole server is left for a
  // 10-GPU job, and no single server holds an 8-GPU one.
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{2}).ok());
  ASSERT_TRUE(c.Allocate(2, std::vector<GpuId>{12}).ok());
  EXPECT_FALSE(PlaceWith("consolidate", c, 10));
  EXPECT_FALSE(PlaceWith("consolidate", c, 8));
  EXPECT_TRUE(PlaceWith("spread", c, 8));
}

TEST(ConsolidateTest, PrefersOneRack) {
  // Rack 0: s0, s1; rack 1: s2, s3; 4 GPUs each. s0 is partly used, so an
  // 8-GPU job takes rack 1's two whole servers instead of spanning racks.
  Cluster c(*Topology::Create(
      {{0, 4, ""}, {0, 4, ""}, {1, 4, ""}, {1, 4, ""}}));
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{0}).ok());
  EXPECT_THAT(*PlaceWith("consolidate", c, 8),
              ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
}

// Fewest servers first, racks second: rack 0 has eight 2-GPU servers, racks
// 1 and 2 one 8-GPU server each. A 16-GPU job takes the two 8-GPU servers
// (2 servers, 2 racks) rather than all of rack 0 (8 servers, 1 rack).
TEST(ConsolidateTest, FewestServersBeforeFewestRacks) {
  std::vector<ServerSpec> specs;
  for (int i = 0; i < 8; ++i) specs.push_back({0, 2, ""});
  specs.push_back({1, 8, ""});  // GPUs 16-23
  specs.push_back({2, 8, ""});  // GPUs 24-31
  Cluster c(*Topology::Create(specs));
  std::vector<GpuId> want;
  for (GpuId g = 16; g < 32; ++g) want.push_back(g);
  EXPECT_EQ(*PlaceWith("consolidate", c, 16), want);
}

// Whole free servers of 8, 8 and 2 GPUs: a 10-GPU job takes an 8 and the
// 2 (best fit for the rest), leaving the other 8-GPU server whole.
TEST(ConsolidateTest, LastServerIsBestFit) {
  Cluster c(*Topology::Create({{0, 8, ""}, {0, 8, ""}, {0, 2, ""}}));
  EXPECT_THAT(*PlaceWith("consolidate", c, 10),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 16, 17));
}

TEST(SpreadTest, LeastLoadedServersFirst) {
  Cluster c(Mixed());
  // Empty: s1 and s3 have 8 free; picks alternate 8,8,7,7 -> 2 on each.
  EXPECT_THAT(*PlaceWith("spread", c, 4), ElementsAre(2, 3, 12, 13));
  // s1 with 6 used (2 free) vs s3 (8 free), s0, s2 (2 free): all from s3
  // until it drops to the others' level.
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{2, 3, 4, 5, 6, 7}).ok());
  EXPECT_THAT(*PlaceWith("spread", c, 5), ElementsAre(12, 13, 14, 15, 16));
  EXPECT_FALSE(PlaceWith("spread", c, 15));  // 14 free
}

TEST(PackTest, BestFitElseFullestServersFirst) {
  Cluster c(Mixed());
  // Fits one server: best fit, as consolidate.
  EXPECT_EQ(*PlaceWith("pack", c, 4), *PlaceWith("consolidate", c, 4));
  // s0: 1 free (GPU 1), s1: 3 free (7-9), s2: 2 free (10-11), s3: 2 free
  // (18-19). No server holds 6: take the fullest first: s0's 1, then the
  // 2-free servers s2 and s3, then 1 of s1's 3.
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{0, 2, 3, 4, 5, 6}).ok());
  ASSERT_TRUE(
      c.Allocate(2, std::vector<GpuId>{12, 13, 14, 15, 16, 17}).ok());
  EXPECT_THAT(*PlaceWith("pack", c, 6), ElementsAre(1, 10, 11, 18, 19, 7));
  EXPECT_FALSE(PlaceWith("pack", c, 9));  // 8 free
}

TEST(CountTest, LowestNumberedFreeGpus) {
  Cluster c(Mixed());
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{1, 2}).ok());
  EXPECT_THAT(*PlaceWith("count", c, 3), ElementsAre(0, 3, 4));
  EXPECT_TRUE(PlaceWith("count", c, 18));
  EXPECT_FALSE(PlaceWith("count", c, 19));
}

TEST(RandomTest, SeededDistinctFreeGpus) {
  Cluster c(Mixed());
  ASSERT_TRUE(c.Allocate(1, std::vector<GpuId>{0, 1, 2, 3}).ok());
  auto a = *PlaceWith("random", c, 6, "", 7);
  auto b = *PlaceWith("random", c, 6, "", 7);
  EXPECT_EQ(a, b);  // same seed, same choice
  std::set<GpuId> distinct(a.begin(), a.end());
  EXPECT_EQ(distinct.size(), 6u);
  for (GpuId g : a) EXPECT_TRUE(c.gpu_free(g));
  // Over many seeds every free GPU gets picked at least once.
  std::set<GpuId> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<GpuId> one = *PlaceWith("random", c, 1, "", seed);
    seen.insert(one[0]);
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(ProfiledTest, ConsolidatesOnlySkewedModels) {
  Cluster c(Mixed());
  // vgg16 (skew 0.744 > 0.5) is consolidated, resnet50 (0.092) packed.
  EXPECT_EQ(*PlaceWith("profiled", c, 4, "vgg16"),
            *PlaceWith("consolidate", c, 4));
  EXPECT_EQ(*PlaceWith("profiled", c, 4, "resnet50"),
            *PlaceWith("pack", c, 4));
  // Unknown model: consolidated (safe default).
  EXPECT_EQ(*PlaceWith("profiled", c, 4, "mystery"),
            *PlaceWith("consolidate", c, 4));
  // PACKLIMIT is a parameter: at 0.05, resnet50 counts as skewed.
  auto low = *MakePlacer("profiled", PlacementOptions{.pack_limit = 0.05});
  Rng rng(1);
  std::vector<GpuId> out;
  ASSERT_TRUE(low->Place(c, Job(JobSpec{1, 4, Seconds{0}, {}, "resnet50"}),
                         rng, &out));
  EXPECT_EQ(out, *PlaceWith("consolidate", c, 4));
}

// The skew measured from a job's traffic overrides its --model hint, both
// ways, and a measured skew alone is enough. SchemeFor is what the
// scheduler caches per job, and Place follows it.
TEST(ProfiledTest, MeasuredSkewOverridesModelTable) {
  auto profiled = *MakePlacer("profiled");
  auto scheme = [&](const std::string& model, std::optional<double> measured) {
    JobSpec spec{1, 4, Seconds{0}, std::nullopt, model};
    spec.measured_skew = measured;
    return std::string(profiled->SchemeFor(Job(spec)));
  };
  // The table says vgg16 is skewed (0.744); it measured 0.1: packed.
  EXPECT_EQ(scheme("vgg16", std::nullopt), "consolidate");
  EXPECT_EQ(scheme("vgg16", 0.1), "pack");
  // The table says resnet50 is not (0.092); it measured 0.9: consolidated.
  EXPECT_EQ(scheme("resnet50", std::nullopt), "pack");
  EXPECT_EQ(scheme("resnet50", 0.9), "consolidate");
  // No hint: measured low, packed; not measured, consolidated (safe).
  EXPECT_EQ(scheme("", 0.2), "pack");
  EXPECT_EQ(scheme("", std::nullopt), "consolidate");
  // Place follows the scheme.
  Cluster c(Mixed());
  JobSpec spec{1, 4, Seconds{0}, std::nullopt, "vgg16"};
  spec.measured_skew = 0.1;
  Rng rng(1);
  std::vector<GpuId> out;
  ASSERT_TRUE(profiled->Place(c, Job(spec), rng, &out));
  EXPECT_EQ(out, *PlaceWith("pack", c, 4));
}

TEST(ModelSkewTest, PaperRanges) {
  for (const ModelInfo& m : BuiltinModels()) {
    bool high = m.name.starts_with("vgg") || m.name == "alexnet";
    if (high) {
      EXPECT_GE(m.skew, 0.61) << m.name;
      EXPECT_LE(m.skew, 0.78) << m.name;
    } else {
      EXPECT_GE(m.skew, 0.036) << m.name;
      EXPECT_LE(m.skew, 0.146) << m.name;
    }
  }
  EXPECT_FALSE(ModelSkew("gpt5"));
}

bool MightFitWith(const std::string& scheme, const Topology& topo,
                  const std::vector<int>& avail, int gpus,
                  const std::string& model = "") {
  auto placer = *MakePlacer(scheme);
  Job job(JobSpec{99, gpus, Seconds{0}, std::nullopt, model});
  int total = 0;
  for (int a : avail) total += a;
  return placer->MightFit(topo, avail, total, job);
}

TEST(MightFitTest, ConsolidateNeedsOneServerOrWholeServers) {
  const Topology topo = Mixed();  // 2, 8, 2, 8 GPUs
  EXPECT_TRUE(MightFitWith("consolidate", topo, {0, 4, 0, 0}, 4));
  EXPECT_FALSE(MightFitWith("consolidate", topo, {2, 3, 2, 3}, 4));  // 10 free
  EXPECT_TRUE(MightFitWith("consolidate", topo, {2, 8, 0, 8}, 16));
  EXPECT_FALSE(MightFitWith("consolidate", topo, {2, 8, 2, 7}, 16));  // 19 free
  EXPECT_TRUE(MightFitWith("consolidate", topo, {2, 8, 2, 7}, 10));  // 8 + 2
  // Schemes that take any free GPUs go by count.
  for (const char* scheme : {"pack", "spread", "random", "count"}) {
    EXPECT_TRUE(MightFitWith(scheme, topo, {2, 3, 2, 3}, 10)) << scheme;
    EXPECT_FALSE(MightFitWith(scheme, topo, {2, 3, 2, 3}, 11)) << scheme;
  }
  // profiled: consolidate's rule for a skewed model, pack's otherwise.
  EXPECT_FALSE(MightFitWith("profiled", topo, {2, 3, 2, 3}, 4, "vgg16"));
  EXPECT_TRUE(MightFitWith("profiled", topo, {2, 3, 2, 3}, 4, "resnet50"));
}

// The contract the scheduler relies on: wherever Place succeeds, MightFit
// (given the free GPUs per server) says so too; for consolidate, exactly.
TEST(MightFitTest, NeverFalseWherePlaceSucceeds) {
  const Topology topo = Mixed();
  Rng rng(7);
  for (int round = 0; round < 300; ++round) {
    Cluster c(topo);
    for (GpuId g = 0; g < 20; ++g) {
      if (rng.Below(3) == 0) {
        ASSERT_TRUE(c.Allocate(1000 + g, std::vector<GpuId>{g}).ok());
      }
    }
    std::vector<int> avail;
    for (int s = 0; s < topo.num_servers(); ++s) avail.push_back(c.free_on(s));
    for (const char* scheme :
         {"consolidate", "spread", "pack", "random", "count"}) {
      for (int gpus = 1; gpus <= 20; ++gpus) {
        const bool placed = PlaceWith(scheme, c, gpus).has_value();
        const bool might = MightFitWith(scheme, topo, avail, gpus);
        if (placed) {
          EXPECT_TRUE(might) << scheme << " " << gpus;
        }
        if (std::string(scheme) == "consolidate") {
          EXPECT_EQ(placed, might) << gpus << " GPUs, round " << round;
        }
      }
    }
  }
}

TEST(PlacerRegistryTest, Names) {
  EXPECT_THAT(PlacerNames(), ElementsAre("consolidate", "spread", "pack",
                                         "random", "profiled", "count"));
  EXPECT_EQ(MakePlacer("tetris").status().message(),
            "unknown placement \"tetris\"; expected one of consolidate, "
            "spread, pack, random, profiled, count");
}

}  // namespace
}  // namespace tiresias
