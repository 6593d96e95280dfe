// Virtual clusters (teams): each owns a quota of cells (core/cells.h), may
// borrow idle GPUs beyond it and lend its own idle ones, within limits.
// The scheduler (sched/scheduler.h) runs its policy inside each.
//
// A VC file, one VC per line ('#' starts a comment):
//
//   NAME quota=CELLS [weight=W] [borrow=N|all] [lend=N|all] [fair=user|job]
//        [fair-quantum=GPU_SECONDS]
//
// CELLS is COUNTxSIZE[,COUNTxSIZE...] ("2x8,4x1": two whole 8-GPU servers
// and four single GPUs; SIZE a power of two, "8" alone is one cell).
// `borrow`: GPUs beyond its quota it may use at once (default all);
// `lend`: GPUs of its idle quota others may use at once (default all);
// `weight` (default 1): its share when VCs compete for what is lent;
// `fair=user`: per-user fair share inside it (default job: the policy's
// order alone), stepping every `fair-quantum` GPU-seconds (default 600).
#ifndef TIRESIAS_SCHED_VCS_H_
#define TIRESIAS_SCHED_VCS_H_

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/topology.h"

namespace tiresias {

inline constexpr int kUnlimited = std::numeric_limits<int>::max();
// GPU-seconds of a user's service per step of per-user fair share: users
// change places only when one gets this much ahead, not at every pass.
inline constexpr double kDefaultFairQuantum = 600;

struct VcSpec {
  std::string name;
  std::vector<int> cells;  // cell sizes, largest first
  double weight = 1;
  int borrow_limit = kUnlimited;
  int lend_limit = kUnlimited;
  // Per-user fair share inside it (`fair=user`): jobs are ordered first
  // by their user's attained GPU service (in quanta of `fair_quantum`
  // GPU-seconds), then as the policy orders them.
  bool fair_per_user = false;
  double fair_quantum = kDefaultFairQuantum;

  int quota_gpus() const;
};

// "2x8,4x1" -> {8, 8, 1, 1, 1, 1}. An empty text is no cell.
absl::StatusOr<std::vector<int>> ParseCells(std::string_view text);
// The cells' text, largest first: {8, 8, 1} -> "2x8,1x1".
std::string CellsText(const std::vector<int>& cells);
// A VC file's text; errors name `source`, the line and the field.
absl::StatusOr<std::vector<VcSpec>> ParseVcs(std::string_view text,
                                             std::string_view source);
absl::StatusOr<std::vector<VcSpec>> ReadVcFile(const std::string& path);
// OK when every VC's cells can be bound at once on `topology` (so each can
// always get its quota: core/cells.h); else which sizes do not fit.
absl::Status CheckVcsFit(const std::vector<VcSpec>& vcs,
                         const Topology& topology);

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_VCS_H_
