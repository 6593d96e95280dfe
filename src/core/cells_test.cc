#include "core/cells.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/rng.h"

namespace tiresias {
namespace {

TEST(CellPoolTest, BuddyBestFitKeepsWholeServersWhole) {
  CellPool pool(Topology::Uniform(1, 2, 8));
  // Nothing bound: every block is in a whole free server; server 0 first.
  EXPECT_EQ(pool.Bind(1), (PhysicalCell{0, 0, 1}));
  // Its buddy (a free block of 1) beats anything in a bigger free block.
  EXPECT_EQ(pool.Bind(1), (PhysicalCell{0, 1, 1}));
  EXPECT_EQ(pool.Bind(2), (PhysicalCell{0, 2, 2}));
  // Server 1 is still whole for a cell that needs a whole server.
  EXPECT_EQ(pool.Bind(8), (PhysicalCell{1, 0, 8}));
  EXPECT_EQ(pool.Bind(4), (PhysicalCell{0, 4, 4}));
  EXPECT_EQ(pool.Bind(1), std::nullopt);
  EXPECT_EQ(pool.bound_gpus(), 16);
  pool.Unbind({0, 1, 1});
  EXPECT_EQ(pool.Bind(2), std::nullopt);  // one GPU free, not a 2-block
  EXPECT_EQ(pool.Bind(1), (PhysicalCell{0, 1, 1}));
}

TEST(CellPoolTest, UnbindingMergesBuddiesBack) {
  CellPool pool(Topology::Uniform(1, 1, 8));
  std::vector<PhysicalCell> ones;
  for (int i = 0; i < 8; ++i) ones.push_back(*pool.Bind(1));
  EXPECT_EQ(pool.Bind(1), std::nullopt);
  for (const PhysicalCell& c : ones) pool.Unbind(c);
  EXPECT_EQ(pool.Bind(8), (PhysicalCell{0, 0, 8}));
}

TEST(CellPoolTest, BindAtTakesOnlyAFreeAlignedBlockOfATopBlock) {
  std::vector<ServerSpec> servers = {{0, 6, "six"}, {0, 8, "eight"}};
  CellPool pool(*Topology::Create(servers));
  EXPECT_FALSE(pool.BindAt({0, 4, 4}));  // past the 6 GPUs
  EXPECT_FALSE(pool.BindAt({0, 2, 4}));  // not aligned
  EXPECT_FALSE(pool.BindAt({0, 0, 3}));  // not a power of two
  EXPECT_FALSE(pool.BindAt({2, 0, 1}));  // no such server
  EXPECT_TRUE(pool.BindAt({0, 4, 2}));   // the 2-block of 6
  EXPECT_TRUE(pool.BindAt({1, 2, 2}));
  EXPECT_FALSE(pool.BindAt({1, 0, 4}));  // overlaps the bound 2-cell
  EXPECT_EQ(pool.bound_gpus(), 4);
  pool.SetCordoned(1, true);
  EXPECT_TRUE(pool.BindAt({1, 4, 4}));  // what runs there stays
  EXPECT_EQ(pool.bound_gpus(), 8);
  // Best fit around what BindAt took: the 4-block of the 6-GPU server.
  EXPECT_EQ(pool.Bind(4), (PhysicalCell{0, 0, 4}));
}

TEST(CellPoolTest, CostThenHomeBreakTiesNotBestFit) {
  CellPool pool(Topology::Uniform(1, 3, 4));
  // Equal blocks everywhere: the cost decides.
  auto cost = [](const PhysicalCell& c) { return c.server == 1 ? 0 : 5; };
  EXPECT_EQ(pool.Bind(4, -1, cost), (PhysicalCell{1, 0, 4}));
  // Equal cost: the home server.
  EXPECT_EQ(pool.Bind(4, 2), (PhysicalCell{2, 0, 4}));
  // Best fit comes before cost: a 1-cell goes into the split server even
  // though the cost prefers the whole one.
  CellPool split(Topology::Uniform(1, 2, 4));
  ASSERT_EQ(split.Bind(2), (PhysicalCell{0, 0, 2}));
  auto prefer_1 = [](const PhysicalCell& c) { return c.server == 1 ? 0 : 9; };
  EXPECT_EQ(split.Bind(1, 1, prefer_1), (PhysicalCell{0, 2, 1}));
}

TEST(CellPoolTest, CordonedServersTakeNoNewBinding) {
  CellPool pool(Topology::Uniform(1, 2, 8));
  const PhysicalCell kept = *pool.Bind(8);
  pool.SetCordoned(0, true);
  EXPECT_EQ(pool.Bind(8), (PhysicalCell{1, 0, 8}));
  EXPECT_EQ(pool.Bind(1), std::nullopt);
  pool.Unbind(kept);  // its jobs left
  EXPECT_EQ(pool.Bind(1), std::nullopt);
  pool.SetCordoned(0, false);
  EXPECT_EQ(pool.Bind(1), (PhysicalCell{0, 0, 1}));
}

TEST(CellPoolTest, ServersOfOtherSizesSplitIntoPowerOfTwoBlocks) {
  // 6 GPUs: a 4-block and a 2-block; no cell of 8, no 4 at offset 2.
  CellPool pool(*Topology::Create({{0, 6, ""}}));
  EXPECT_FALSE(pool.CanBindAll({8}));
  EXPECT_TRUE(pool.CanBindAll({4, 2}));
  EXPECT_FALSE(pool.CanBindAll({4, 4}));
  EXPECT_EQ(pool.Bind(2), (PhysicalCell{0, 4, 2}));  // best fit: the 2-block
  EXPECT_EQ(pool.Bind(4), (PhysicalCell{0, 0, 4}));
}

TEST(CellPoolTest, CanBindAllLeavesThePoolAlone) {
  CellPool pool(Topology::Uniform(1, 2, 8));
  EXPECT_TRUE(pool.CanBindAll({1, 8, 4, 2, 1}));
  EXPECT_FALSE(pool.CanBindAll({8, 8, 1}));
  EXPECT_EQ(pool.bound_gpus(), 0);
}

// HiveD's safety, checked: virtual clusters whose cells fit the pool
// together bind and unbind their cells in random order, each never holding
// more cells of a size than it has; every bind must succeed.
TEST(CellPoolTest, BestFitNeverFailsACellWithinAFeasibleQuota) {
  Rng rng(7);
  for (int round = 0; round < 200; ++round) {
    const int servers = 1 + static_cast<int>(rng.Below(6));
    const int per = 1 << rng.Below(4);  // 1, 2, 4 or 8 GPUs
    const Topology topology = Topology::Uniform(1, servers, per);
    // Random quotas: cells drawn until the next one would not fit.
    std::vector<std::map<int, int>> quota(1 + rng.Below(4));
    CellPool fit(topology);
    for (int tries = 0; tries < 40; ++tries) {
      const int size = 1 << rng.Below(4);
      if (size > per || !fit.Bind(size)) continue;
      ++quota[rng.Below(quota.size())][size];
    }
    CellPool pool(topology);
    std::vector<std::vector<PhysicalCell>> held(quota.size());
    std::vector<std::map<int, int>> unbound = quota;
    for (int step = 0; step < 300; ++step) {
      const size_t vc = rng.Below(quota.size());
      const bool bind = rng.Below(2) == 0 || held[vc].empty();
      if (bind) {
        std::vector<int> sizes;
        for (auto [size, n] : unbound[vc]) {
          if (n > 0) sizes.push_back(size);
        }
        if (sizes.empty()) continue;
        const int size = sizes[rng.Below(sizes.size())];
        const std::optional<PhysicalCell> cell = pool.Bind(size);
        ASSERT_TRUE(cell) << "round " << round << " step " << step << ": a "
                          << size << "-GPU cell within quota";
        held[vc].push_back(*cell);
        --unbound[vc][size];
      } else {
        const size_t i = rng.Below(held[vc].size());
        pool.Unbind(held[vc][i]);
        ++unbound[vc][held[vc][i].size];
        held[vc].erase(held[vc].begin() + static_cast<long>(i));
      }
    }
  }
}

}  // namespace
}  // namespace tiresias
