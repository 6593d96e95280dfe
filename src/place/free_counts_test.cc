// FreeCounts (core/free_counts.h) against Place itself: on random clusters
// of mixed servers, some cordoned, with random jobs holding GPUs, giving
// some jobs back (and taking some again) by counts answers exactly what
// Place answers on the cluster with those jobs' GPUs released. This is
// what lets the scheduler's walk set jobs aside without touching the
// cluster.
#include "core/free_counts.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "place/placement.h"

namespace tiresias {
namespace {

struct Holder {
  JobId id;
  std::vector<GpuId> gpus;
};

TEST(FreeCountsTest, AnswersWhatPlaceAnswers) {
  const Topology topo = *Topology::Create({{0, 2, ""},
                                           {0, 8, ""},
                                           {0, 4, ""},
                                           {1, 8, ""},
                                           {1, 2, ""},
                                           {1, 8, ""}});  // 32 GPUs
  Rng rng(11);
  int checked = 0;
  for (int round = 0; round < 200; ++round) {
    Cluster cluster(topo);
    if (round % 4 == 1)
      cluster.SetCordoned(static_cast<int>(rng.Below(6)), true);
    // Jobs of 1-4 GPUs on random free GPUs (any servers).
    std::vector<Holder> holders;
    for (JobId id = 1; id <= 12; ++id) {
      std::vector<GpuId> gpus;
      const int want = 1 + static_cast<int>(rng.Below(4));
      for (int tries = 0; tries < 64 && static_cast<int>(gpus.size()) < want;
           ++tries) {
        const GpuId g = static_cast<GpuId>(rng.Below(32));
        if (cluster.gpu_unheld(g) &&
            std::find(gpus.begin(), gpus.end(), g) == gpus.end()) {
          gpus.push_back(g);
        }
      }
      if (gpus.empty() || !cluster.Allocate(id, gpus).ok()) continue;
      holders.push_back({id, gpus});
    }
    for (const char* scheme : {"consolidate", "pack", "spread", "count"}) {
      auto placer = *MakePlacer(scheme);
      for (int want = 1; want <= 20; want += 1 + (want > 8 ? 3 : 0)) {
        const Job job(JobSpec{999, want, Seconds{0}, std::nullopt, ""});
        const Placer::FitRule rule = placer->FitRuleFor(job);
        ASSERT_NE(rule, Placer::FitRule::kOther) << scheme;
        FreeCounts counts;
        counts.Reset(cluster, rule, want);
        // The same, given a server's GPUs at a time (GiveOn).
        FreeCounts by_server;
        by_server.Reset(cluster, rule, want);
        auto give = [&](const std::vector<GpuId>& gpus, int sign) {
          counts.Give(gpus, sign);
          std::map<int, int> on;
          for (GpuId g : gpus) ++on[topo.ServerOf(g)];
          for (const auto& [server, count] : on) {
            by_server.GiveOn(server, count, sign);
          }
        };
        Cluster released = cluster;
        // Give back the holders in a random order, one at a time; every
        // third given back is taken again right away.
        std::vector<Holder> order = holders;
        for (size_t i = order.size(); i > 1; --i) {
          std::swap(order[i - 1], order[rng.Below(i)]);
        }
        auto check = [&] {
          std::vector<GpuId> out;
          Rng place_rng(1);
          const bool placed = placer->Place(released, job, place_rng, &out);
          EXPECT_EQ(counts.fits(), placed)
              << scheme << ", " << want << " GPUs, round " << round;
          EXPECT_EQ(by_server.fits(), placed)
              << scheme << ", " << want << " GPUs, round " << round;
          ++checked;
        };
        check();
        for (size_t i = 0; i < order.size(); ++i) {
          give(order[i].gpus, +1);
          released.Release(order[i].id, order[i].gpus);
          check();
          if (i % 3 == 2) {
            give(order[i].gpus, -1);
            ASSERT_TRUE(released.Allocate(order[i].id, order[i].gpus).ok());
            check();
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

TEST(FreeCountsTest, ProfiledFollowsTheSchemeOfTheJob) {
  auto profiled = *MakePlacer("profiled");
  const Job skewed(JobSpec{1, 4, Seconds{0}, std::nullopt, "vgg16"});
  const Job flat(JobSpec{2, 4, Seconds{0}, std::nullopt, "resnet50"});
  EXPECT_EQ(profiled->FitRuleFor(skewed), Placer::FitRule::kServerOrWhole);
  EXPECT_EQ(profiled->FitRuleFor(flat), Placer::FitRule::kAnyGpus);
  EXPECT_FALSE(profiled->single_scheme());
  // random draws from the stream: only Place can answer.
  const Job any(JobSpec{3, 4, Seconds{0}, std::nullopt, ""});
  EXPECT_EQ((*MakePlacer("random"))->FitRuleFor(any), Placer::FitRule::kOther);
  EXPECT_TRUE((*MakePlacer("consolidate"))->single_scheme());
}

// By hand: two 4-GPU servers, a 3-GPU job on each and a 1-GPU job beside
// the first. A 4-GPU consolidated job fits once the server holding only
// the 3-GPU job is given back, not when 3 GPUs come back spread out.
TEST(FreeCountsTest, OneServerOrWholeServersByHand) {
  const Topology topo = *Topology::Create({{0, 4, ""}, {0, 4, ""}});
  Cluster cluster(topo);
  ASSERT_TRUE(cluster.Allocate(1, std::vector<GpuId>{0, 1, 2}).ok());
  ASSERT_TRUE(cluster.Allocate(2, std::vector<GpuId>{3}).ok());
  ASSERT_TRUE(cluster.Allocate(3, std::vector<GpuId>{4, 5, 6}).ok());
  FreeCounts counts;
  counts.Reset(cluster, Placer::FitRule::kServerOrWhole, 4);
  EXPECT_FALSE(counts.fits());  // 1 free
  counts.Give(std::vector<GpuId>{0, 1, 2}, +1);
  EXPECT_FALSE(counts.fits());  // 3 + 1 free, on two servers
  counts.Give(std::vector<GpuId>{4, 5, 6}, +1);
  EXPECT_TRUE(counts.fits());  // server 1 whole
  counts.Give(std::vector<GpuId>{4, 5, 6}, -1);
  EXPECT_FALSE(counts.fits());
  // 8 GPUs: larger than a server, so whole servers.
  counts.Reset(cluster, Placer::FitRule::kServerOrWhole, 8);
  counts.Give(std::vector<GpuId>{0, 1, 2}, +1);
  counts.Give(std::vector<GpuId>{4, 5, 6}, +1);
  EXPECT_FALSE(counts.fits());  // 7 free: job 2 holds GPU 3
  counts.Give(std::vector<GpuId>{3}, +1);
  EXPECT_TRUE(counts.fits());
  // Any free GPUs: by the total.
  counts.Reset(cluster, Placer::FitRule::kAnyGpus, 4);
  counts.Give(std::vector<GpuId>{0, 1, 2}, +1);
  EXPECT_TRUE(counts.fits());
}

}  // namespace
}  // namespace tiresias
