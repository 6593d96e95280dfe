#include "core/node_filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/cluster.h"
#include "core/placer.h"
#include "core/shape.h"
#include "core/testing/lowest_free_placer.h"
#include "core/topology.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseConstraintTest, AndBindsTighterThanOr) {
  absl::StatusOr<Constraint> c = ParseConstraint("ib&nvme|big");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_THAT((*c)[0], ElementsAre("ib", "nvme"));
  EXPECT_THAT((*c)[1], ElementsAre("big"));
  EXPECT_THAT(*ParseConstraint(""), IsEmpty());
  EXPECT_THAT((*ParseConstraint("a&a"))[0], ElementsAre("a"));
}

TEST(ParseConstraintTest, RefusesWhatItCannotRead) {
  for (const char* bad : {"a&&b", "|a", "a|", "ib[2]", "a b", "gpu*"}) {
    absl::StatusOr<Constraint> c = ParseConstraint(bad);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr(bad)) << bad;
  }
  EXPECT_FALSE(ParseConstraint(std::string(kMaxConstraintBytes + 1, 'a')).ok());
  EXPECT_FALSE(ParseConstraint(std::string(kMaxFeatureBytes + 1, 'a')).ok());
  EXPECT_TRUE(ParseConstraint(std::string(kMaxFeatureBytes, 'a')).ok());
}

TEST(GpuTypeMatchesTest, AWordOfTheModelOrTheWholeModelCaseIgnored) {
  EXPECT_TRUE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "a100"));
  EXPECT_TRUE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "A100"));
  EXPECT_TRUE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "80gb"));
  EXPECT_TRUE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "nvidia a100-sxm4-80gb"));
  EXPECT_TRUE(GpuTypeMatches("Tesla V100_SXM2", "v100"));
  EXPECT_FALSE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "a10"));
  EXPECT_FALSE(GpuTypeMatches("NVIDIA A100-SXM4-80GB", "a100-sxm4"));
  EXPECT_FALSE(GpuTypeMatches("", "a100"));
  EXPECT_FALSE(GpuTypeMatches("NVIDIA H200", ""));
}

Server MakeServer(std::string name, std::string model,
                  std::vector<std::string> features) {
  return Server{
      0, 8, 0, std::move(name), std::move(model), std::move(features)};
}

TEST(NodeFilterTest, EveryPartMustPass) {
  const Server a = MakeServer("a", "NVIDIA A100", {"ib", "nvme"});
  const Server b = MakeServer("b", "NVIDIA H200", {"ib"});
  const Server c = MakeServer("c", "", {});
  NodeFilter any;
  EXPECT_TRUE(any.empty());
  EXPECT_TRUE(any.Admits(a) && any.Admits(c));

  NodeFilter type{.gpu_type = "a100"};
  EXPECT_TRUE(type.Admits(a));
  EXPECT_FALSE(type.Admits(b));
  EXPECT_FALSE(type.Admits(c));  // an unknown model has no type

  NodeFilter both{.constraint = *ParseConstraint("ib&nvme"),
                  .constraint_text = "ib&nvme"};
  EXPECT_TRUE(both.Admits(a));
  EXPECT_FALSE(both.Admits(b));
  NodeFilter either{.constraint = *ParseConstraint("nvme|ib")};
  EXPECT_TRUE(either.Admits(a) && either.Admits(b));
  EXPECT_FALSE(either.Admits(c));

  NodeFilter listed{.nodelist = {"b", "c"}, .exclude = {"c"}};
  EXPECT_FALSE(listed.Admits(a));
  EXPECT_TRUE(listed.Admits(b));
  EXPECT_FALSE(listed.Admits(c));  // exclude wins

  NodeFilter all{.gpu_type = "h200",
                 .constraint = *ParseConstraint("ib"),
                 .constraint_text = "ib",
                 .nodelist = {"a", "b"},
                 .exclude = {"z"}};
  EXPECT_TRUE(all.Admits(b));
  EXPECT_FALSE(all.Admits(a));
  EXPECT_EQ(all.Describe(), "GPU type h200, features ib, nodes a,b, not z");
  EXPECT_EQ(listed.Describe(), "nodes b,c, not c");
}

// Filters whose descriptions read alike (a GPU type may hold ", nodes")
// still get keys of their own; equal filters share one.
TEST(NodeFilterTest, KeysTellApartFiltersThatReadAlike) {
  const NodeFilter typed{.gpu_type = "a100, node n1"};
  const NodeFilter listed{.gpu_type = "a100", .nodelist = {"n1"}};
  EXPECT_EQ(typed.Describe(), listed.Describe());
  EXPECT_NE(typed.Key(), listed.Key());
  const NodeFilter two{.nodelist = {"a,b"}};
  const NodeFilter split{.nodelist = {"a", "b"}};
  EXPECT_NE(two.Key(), split.Key());
  const NodeFilter in{.nodelist = {"a"}};
  const NodeFilter out{.exclude = {"a"}};
  EXPECT_NE(in.Key(), out.Key());
  const NodeFilter ab{.constraint = *ParseConstraint("a&b")};
  const NodeFilter a_or_b{.constraint = *ParseConstraint("a|b")};
  EXPECT_NE(ab.Key(), a_or_b.Key());
  EXPECT_NE(NodeFilter{.cpus_per_gpu = 12}.Key(),
            NodeFilter{.mem_per_gpu_mib = 12}.Key());
  EXPECT_EQ(NodeFilter(listed).Key(), listed.Key());
}

// Each GPU's slice of a server's CPUs and memory, rounded down, must hold
// what the job asks; a server that told neither takes no job that asks.
TEST(NodeFilterTest, CpusAndMemoryMustFitAGpusSlice) {
  Server big = MakeServer("big", "", {});  // 8 GPUs
  big.cpus = 70;                           // 8 per GPU (8.75)
  big.memory_mib = 8 * 32768;              // 32G per GPU
  const Server unknown = MakeServer("unknown", "", {});
  EXPECT_TRUE(NodeFilter{.cpus_per_gpu = 8}.Admits(big));
  EXPECT_FALSE(NodeFilter{.cpus_per_gpu = 9}.Admits(big));
  EXPECT_TRUE(NodeFilter{.mem_per_gpu_mib = 32768}.Admits(big));
  EXPECT_FALSE(NodeFilter{.mem_per_gpu_mib = 32769}.Admits(big));
  EXPECT_FALSE(NodeFilter{.cpus_per_gpu = 1}.Admits(unknown));
  EXPECT_FALSE(NodeFilter{.mem_per_gpu_mib = 1}.Admits(unknown));
  EXPECT_TRUE(NodeFilter{}.Admits(unknown));
  EXPECT_FALSE(NodeFilter{.cpus_per_gpu = 1}.empty());
  EXPECT_EQ((NodeFilter{.cpus_per_gpu = 1, .mem_per_gpu_mib = 1536}).Describe(),
            "1 CPU per GPU, 1536M memory per GPU");
}

// s0: A100 x 4 (GPUs 0-3), s1: H200 x 4 (4-7) with "ib", s2: H200 x 2
// (8-9).
Topology Typed() {
  return *Topology::Create({{0, 4, "s0", "NVIDIA A100", {}},
                            {0, 4, "s1", "NVIDIA H200", {"ib"}},
                            {0, 2, "s2", "NVIDIA H200", {}}});
}

using AnyFree = test_support::LowestFreePlacer;

Job Filtered(int gpus, NodeFilter filter, int nodes = 0) {
  return Job(
      JobSpec{.id = 9,
              .num_gpus = gpus,
              .nodes = nodes,
              .gpus_per_node = nodes > 0 ? gpus / nodes : 0,
              .filter = std::make_shared<const NodeFilter>(std::move(filter))});
}

TEST(PlaceJobTest, AFilteredJobTakesOnlyAdmittedServers) {
  Cluster cluster(Typed());
  AnyFree placer;
  Rng rng(1);
  std::vector<GpuId> gpus;
  // Any free GPUs would be 0-2 (the A100s); H200s only: 4-6.
  ASSERT_TRUE(
      PlaceJob(placer, cluster, Filtered(3, {.gpu_type = "h200"}), rng, &gpus));
  EXPECT_THAT(gpus, ElementsAre(4, 5, 6));
  // Six H200s in all: a seventh does not fit, though 10 are free.
  gpus.clear();
  EXPECT_FALSE(
      PlaceJob(placer, cluster, Filtered(7, {.gpu_type = "h200"}), rng, &gpus));
  EXPECT_THAT(gpus, IsEmpty());
  // Excluding s1 and the A100s leaves s2.
  gpus.clear();
  ASSERT_TRUE(PlaceJob(placer, cluster,
                       Filtered(2, {.gpu_type = "h200", .exclude = {"s1"}}),
                       rng, &gpus));
  EXPECT_THAT(gpus, ElementsAre(8, 9));
  // A shape keeps its rule inside the filter: 2 nodes x 2 of the H200s.
  gpus.clear();
  ASSERT_TRUE(PlaceJob(placer, cluster,
                       Filtered(4, {.gpu_type = "h200"}, /*nodes=*/2), rng,
                       &gpus));
  EXPECT_THAT(gpus, ElementsAre(8, 9, 4, 5));  // the fuller server first
  // What is placed on the original cluster: nothing was allocated, and
  // cordoned servers stay out.
  EXPECT_EQ(cluster.free_gpus(), 10);
  cluster.SetCordoned(2, true);
  gpus.clear();
  EXPECT_FALSE(PlaceJob(placer, cluster,
                        Filtered(2, {.gpu_type = "h200", .exclude = {"s1"}}),
                        rng, &gpus));
}

TEST(JobMightFitTest, CountsOnlyAdmittedServers) {
  const Topology topology = Typed();
  AnyFree placer;
  const std::vector<int> avail = {4, 1, 2};
  EXPECT_TRUE(JobMightFit(placer, topology, avail, 7,
                          Filtered(3, {.gpu_type = "h200"})));
  EXPECT_FALSE(JobMightFit(placer, topology, avail, 7,
                           Filtered(4, {.gpu_type = "h200"})));
  EXPECT_FALSE(JobMightFit(placer, topology, avail, 7,
                           Filtered(2, {.constraint = {{"ib"}}})));
}

}  // namespace
}  // namespace tiresias
