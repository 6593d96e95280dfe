#include "sched/pending_reason.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/rng.h"
#include "core/shape.h"
#include "sched/scheduler.h"

namespace tiresias {

std::string_view PendingReasonKindName(PendingReasonKind kind) {
  switch (kind) {
    case PendingReasonKind::kNone: return "";
    case PendingReasonKind::kNextPass: return "next-pass";
    case PendingReasonKind::kNoNodes: return "no-nodes";
    case PendingReasonKind::kTooLarge: return "too-large";
    case PendingReasonKind::kDrained: return "drained";
    case PendingReasonKind::kPriority: return "priority";
    case PendingReasonKind::kResources: return "resources";
    case PendingReasonKind::kPlacement: return "placement";
    case PendingReasonKind::kCheckpointing: return "checkpointing";
    case PendingReasonKind::kHeld: return "held";
    case PendingReasonKind::kDependency: return "dependency";
    case PendingReasonKind::kArrayLimit: return "array-limit";
  }
  return "";
}

namespace {

std::string Gpus(int n) { return absl::StrCat(n, n == 1 ? " GPU" : " GPUs"); }
std::string Nodes(int n) {
  return absl::StrCat(n, n == 1 ? " node" : " nodes");
}

// "2 nodes with 4 GPUs each" (`free`: "4 free GPUs").
std::string Shape(const PendingReason& r, bool free) {
  return absl::StrCat(
      Nodes(r.nodes), " with ", r.gpus_per_node, free ? " free" : "",
      r.gpus_per_node == 1 ? " GPU" : " GPUs", r.nodes == 1 ? "" : " each");
}

// The sentences of a shaped job, where they differ.
std::string FormatShaped(const PendingReason& r) {
  switch (r.kind) {
    case PendingReasonKind::kTooLarge:
      return absl::StrCat("needs ", Shape(r, false), ", up nodes have ",
                          r.capacity, " such: cannot run as configured");
    case PendingReasonKind::kDrained:
      return absl::StrCat("needs ", Shape(r, false),
                          ", nodes not drained have ", r.capacity,
                          " such (nodes drained)");
    case PendingReasonKind::kResources:
      return absl::StrCat("needs ", Shape(r, false), " (", Gpus(r.gpus),
                          "), only ", r.free, " free");
    case PendingReasonKind::kPlacement:
      return absl::StrCat("needs ", Shape(r, true), ", ", r.fitting,
                          r.fitting == 1 ? " node has" : " nodes have",
                          " that many free");
    default:
      return "";
  }
}

}  // namespace

std::string FormatPendingReason(const PendingReason& r) {
  if (r.nodes > 0) {
    if (std::string shaped = FormatShaped(r); !shaped.empty()) return shaped;
  }
  switch (r.kind) {
    case PendingReasonKind::kNone:
      return "";
    case PendingReasonKind::kNextPass:
      return "waiting for the next scheduling pass";
    case PendingReasonKind::kNoNodes:
      return "no node is up";
    case PendingReasonKind::kTooLarge:
      return absl::StrCat("needs ", Gpus(r.gpus),
                          ", more than every up node has together (",
                          r.capacity, "): cannot run as configured");
    case PendingReasonKind::kDrained:
      if (r.capacity == 0) {
        return absl::StrCat("needs ", Gpus(r.gpus),
                            "; every up node is drained");
      }
      return absl::StrCat("needs ", Gpus(r.gpus), ", nodes not drained have ",
                          r.capacity, " (nodes drained)");
    case PendingReasonKind::kPriority: {
      std::string text =
          absl::StrCat("in queue ", r.queue, " behind ", r.ahead,
                       r.ahead == 1 ? " waiting job" : " waiting jobs",
                       " of higher priority");
      if (r.gpus > r.free) {
        absl::StrAppend(&text, " (needs ", Gpus(r.gpus), ", ", r.free,
                        " free)");
      }
      return text;
    }
    case PendingReasonKind::kResources:
      return absl::StrCat("needs ", Gpus(r.gpus), ", only ", r.free,
                          " free");
    case PendingReasonKind::kPlacement:
      if (r.one_server) {
        return absl::StrCat("needs ", Gpus(r.gpus),
                            " on one server, largest free block is ",
                            r.largest_free);
      }
      return absl::StrCat("needs ", Gpus(r.gpus),
                          " on whole servers, entirely free servers have ",
                          r.whole_free);
    case PendingReasonKind::kCheckpointing:
      if (r.own_launch) {
        return "waiting for its previous launch's tasks to stop";
      }
      return absl::StrCat("waiting for job ", r.blocker,
                          "'s tasks to checkpoint (GPUs being freed by a "
                          "preemption)");
    case PendingReasonKind::kHeld:
      return "held (`tiresias release` to let it run)";
    case PendingReasonKind::kDependency: {
      std::string text =
          absl::StrCat("waiting for job ", r.blocker, " (",
                       std::string(DependencyKindName(r.dependency)), ")");
      if (r.unmet > 1) {
        absl::StrAppend(&text, " and ", r.unmet - 1,
                        r.unmet == 2 ? " other dependency"
                                     : " other dependencies");
      }
      return text;
    }
    case PendingReasonKind::kArrayLimit:
      return absl::StrCat("array limit: ", r.ahead, " of array ", r.blocker,
                          "'s jobs running, at most ", r.capacity,
                          " at once");
  }
  return "";
}

std::vector<std::pair<JobId, PendingReason>> ExplainWaiting(
    const Scheduler& scheduler, const Cluster& cluster) {
  std::vector<std::pair<JobId, PendingReason>> out;
  const int total = cluster.total_gpus();
  const int undrained = total - cluster.cordoned_gpus();
  const int free = cluster.free_gpus();
  int largest_free = 0;
  for (int f = cluster.topology().max_gpus_per_server(); f > 0; --f) {
    if (!cluster.ServersWithFree(f).empty()) {
      largest_free = f;
      break;
    }
  }
  const bool head_of_line =
      scheduler.policy().traits().head_of_line_blocking;
  // Whether a job of (scheme, GPUs) fits the free GPUs now: one placement
  // try per pair. The generator is a throwaway: nothing is allocated.
  // A shaped job's key is its shape (scheme "").
  std::map<std::tuple<std::string_view, int, int>, bool> fits;
  // Servers with at least G GPUs (undrained ones: and not cordoned), by G.
  std::map<int, std::pair<int, int>> servers_with;
  auto count_servers = [&](int per_node) {
    auto [it, added] = servers_with.try_emplace(per_node);
    if (added) {
      for (int s = 0; s < cluster.topology().num_servers(); ++s) {
        if (cluster.topology().server(s).num_gpus < per_node) continue;
        ++it->second.first;
        if (!cluster.cordoned(s)) ++it->second.second;
      }
    }
    return it->second;
  };
  Rng rng(1);
  std::vector<GpuId> scratch;
  int ahead = 0;
  scheduler.ForEachWaiting([&](const Job& job) {
    PendingReason r;
    r.gpus = job.num_gpus();
    r.queue = job.queue();
    r.free = free;
    r.ahead = ahead++;
    const bool shaped = job.spec().shaped();
    std::pair<int, int> with_shape = {0, 0};  // servers, undrained ones
    if (shaped) {
      r.nodes = job.spec().nodes;
      r.gpus_per_node = job.spec().gpus_per_node;
      with_shape = count_servers(r.gpus_per_node);
    }
    if (total == 0) {
      r.kind = PendingReasonKind::kNoNodes;
    } else if (shaped && with_shape.first < r.nodes) {
      r.kind = PendingReasonKind::kTooLarge;
      r.capacity = with_shape.first;
    } else if (shaped && with_shape.second < r.nodes) {
      r.kind = PendingReasonKind::kDrained;
      r.capacity = with_shape.second;
    } else if (r.gpus > total) {
      r.kind = PendingReasonKind::kTooLarge;
      r.capacity = total;
    } else if (r.gpus > undrained) {
      r.kind = PendingReasonKind::kDrained;
      r.capacity = undrained;
    } else {
      const std::string_view scheme =
          shaped ? std::string_view() : scheduler.placer().SchemeFor(job);
      auto [it, added] =
          fits.try_emplace({scheme, r.gpus, r.gpus_per_node}, false);
      if (added && r.gpus <= free) {
        scratch.clear();
        it->second = PlaceJob(scheduler.placer(), cluster, job, rng, &scratch);
      }
      if (it->second) {
        r.kind = head_of_line && r.ahead > 0 ? PendingReasonKind::kPriority
                                             : PendingReasonKind::kNextPass;
      } else if (r.gpus > free) {
        r.kind = r.ahead > 0 ? PendingReasonKind::kPriority
                             : PendingReasonKind::kResources;
      } else {
        r.kind = PendingReasonKind::kPlacement;
        if (shaped) r.fitting = ServersWithAtLeast(cluster, r.gpus_per_node);
        r.one_server = r.gpus <= cluster.topology().max_gpus_per_server();
        r.largest_free = largest_free;
        r.whole_free = cluster.whole_free_gpus();
      }
    }
    out.emplace_back(job.id(), r);
  });
  return out;
}

}  // namespace tiresias
