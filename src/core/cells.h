// Cells: how a virtual cluster's quota is bound to physical GPUs, HiveD's
// way (Zhao et al., OSDI'20, "HiveD: Sharing a GPU Cluster for Deep
// Learning with Guarantees").
//
// A quota is a multiset of cells, each a power-of-two number of GPUs of one
// server ("2x8,4x1": two whole 8-GPU servers and four single GPUs). A cell
// is bound to physical GPUs only while its virtual cluster runs a job on
// it, and to an aligned block of one server: a cell of size k sits at an
// offset that is a multiple of k, inside one of the server's top blocks
// (its GPU count split into powers of two, largest first: 6 GPUs are a
// 4-block and a 2-block).
//
// Binding is buddy best fit: of the free aligned blocks that hold the cell,
// the one whose largest enclosing free block is smallest, so whole servers
// stay whole for the cells that need them. Among equally good blocks, the
// caller's cost (the borrowed jobs it would preempt) decides, then the
// cell's home server, then the lowest server and offset.
//
// Safety (HiveD's Theorem 1, for power-of-two cells and best fit): if every
// virtual cluster's cells fit the pool at once (CanBindAll on an empty
// pool), then while no server is cordoned, a cell of any virtual cluster
// that is not bound can always be bound, whatever was bound and unbound
// before. The scheduler's property test checks exactly that, CanBindAll of
// every unbound cell, at every event of random multi-VC workloads.
//
// A cordoned server (drained, lost) takes no new binding; the cells bound
// there stay until their jobs leave, then bind elsewhere.
//
// Not thread-safe.
#ifndef TIRESIAS_CORE_CELLS_H_
#define TIRESIAS_CORE_CELLS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/job.h"
#include "core/topology.h"

namespace tiresias {

struct PhysicalCell {
  int server = -1;
  int offset = 0;  // GPUs from the server's first one
  int size = 0;
  auto operator<=>(const PhysicalCell&) const = default;
};

class CellPool {
 public:
  // Servers of more than 64 GPUs hold cells only in their first 64.
  explicit CellPool(const Topology& topology);

  // Chooses and binds a free cell of `size` GPUs (a power of two) on a
  // server not cordoned: buddy best fit, then `cost` (lower first; may be
  // empty), then `home` (a server index, or -1), then the lowest server and
  // offset. nullopt when no free aligned block holds it.
  using CostFn = std::function<int64_t(const PhysicalCell&)>;
  std::optional<PhysicalCell> Bind(int size, int home = -1,
                                   const CostFn& cost = {});
  // Binds exactly `cell` (a job already running there is adopted into its
  // VC's quota: a restarted master, a changed cluster): false, changing
  // nothing, unless it is an aligned power-of-two block inside one of the
  // server's top blocks and free. A cordoned server is allowed (what runs
  // there stays).
  bool BindAt(const PhysicalCell& cell);
  bool CanBindAt(const PhysicalCell& cell) const;
  // Frees a bound cell (asserted bound).
  void Unbind(const PhysicalCell& cell);
  void SetCordoned(int server, bool cordoned);

  // Whether cells of every size in `sizes` could be bound together now
  // (best fit, largest first, on a copy). O(cells x pool).
  bool CanBindAll(std::vector<int> sizes) const;
  // GPUs bound in all.
  int bound_gpus() const { return bound_gpus_; }
  bool bound(int server, int offset) const {
    return bound_[server] >> offset & 1;
  }

 private:
  // The largest free aligned block holding [offset, offset + size) of
  // `server` (at least `size`), within its top block.
  int EnclosingFree(int server, int offset, int size) const;
  bool Free(int server, int offset, int size) const;

  std::vector<int> gpus_;        // per server, at most 64
  std::vector<uint64_t> bound_;  // per server, a bit per GPU
  std::vector<bool> cordoned_;
  int bound_gpus_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_CELLS_H_
