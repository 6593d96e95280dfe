#include "core/cells.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <tuple>

namespace tiresias {
namespace {
uint64_t Mask(int offset, int size) {
  const uint64_t ones = size >= 64 ? ~uint64_t{0} : (uint64_t{1} << size) - 1;
  return ones << offset;
}
// The top block (a power of two) of a server of `gpus` GPUs that holds
// GPU `offset`: its GPU count split into powers of two, largest first.
int TopBlockSize(int gpus, int offset) {
  int start = 0;
  while (true) {
    const int block = std::bit_floor(static_cast<unsigned>(gpus - start));
    if (offset < start + block) return block;
    start += block;
  }
}
}  // namespace

CellPool::CellPool(const Topology& topology)
    : gpus_(topology.num_servers()),
      bound_(topology.num_servers(), 0),
      cordoned_(topology.num_servers(), false) {
  for (int s = 0; s < topology.num_servers(); ++s) {
    gpus_[s] = std::min(64, topology.server(s).num_gpus);
  }
}

bool CellPool::Free(int server, int offset, int size) const {
  return (bound_[server] & Mask(offset, size)) == 0;
}

int CellPool::EnclosingFree(int server, int offset, int size) const {
  const int top = TopBlockSize(gpus_[server], offset);
  int best = size;
  for (int k = size * 2; k <= top; k *= 2) {
    const int start = offset - offset % k;
    if (!Free(server, start, k)) break;
    best = k;
  }
  return best;
}

std::optional<PhysicalCell> CellPool::Bind(int size, int home,
                                           const CostFn& cost) {
  assert(size > 0 && std::has_single_bit(static_cast<unsigned>(size)));
  std::optional<PhysicalCell> best;
  std::tuple<int, int64_t, bool> best_rank{};
  for (int s = 0; s < static_cast<int>(gpus_.size()); ++s) {
    if (cordoned_[s]) continue;
    for (int o = 0; o + size <= gpus_[s]; o += size) {
      if (TopBlockSize(gpus_[s], o) < size || !Free(s, o, size)) continue;
      const PhysicalCell cell{s, o, size};
      const std::tuple<int, int64_t, bool> rank{
          EnclosingFree(s, o, size), cost ? cost(cell) : 0, s != home};
      // Strictly better only: the lowest server and offset win ties.
      if (!best || rank < best_rank) {
        best = cell;
        best_rank = rank;
      }
    }
  }
  if (best) {
    bound_[best->server] |= Mask(best->offset, size);
    bound_gpus_ += size;
  }
  return best;
}

bool CellPool::CanBindAt(const PhysicalCell& cell) const {
  const int s = cell.server;
  return s >= 0 && s < static_cast<int>(gpus_.size()) && cell.size > 0 &&
         std::has_single_bit(static_cast<unsigned>(cell.size)) &&
         cell.offset >= 0 && cell.offset % cell.size == 0 &&
         cell.offset + cell.size <= gpus_[s] &&
         TopBlockSize(gpus_[s], cell.offset) >= cell.size &&
         Free(s, cell.offset, cell.size);
}

bool CellPool::BindAt(const PhysicalCell& cell) {
  if (!CanBindAt(cell)) return false;
  const int s = cell.server;
  bound_[s] |= Mask(cell.offset, cell.size);
  bound_gpus_ += cell.size;
  return true;
}

void CellPool::Unbind(const PhysicalCell& cell) {
  const uint64_t mask = Mask(cell.offset, cell.size);
  assert((bound_[cell.server] & mask) == mask);
  bound_[cell.server] &= ~mask;
  bound_gpus_ -= cell.size;
}

void CellPool::SetCordoned(int server, bool cordoned) {
  cordoned_[server] = cordoned;
}

bool CellPool::CanBindAll(std::vector<int> sizes) const {
  std::sort(sizes.rbegin(), sizes.rend());
  CellPool copy = *this;
  for (int size : sizes) {
    if (!copy.Bind(size)) return false;
  }
  return true;
}

}  // namespace tiresias
