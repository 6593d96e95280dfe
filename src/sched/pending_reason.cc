#include "sched/pending_reason.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/node_filter.h"
#include "core/rng.h"
#include "core/shape.h"
#include "sched/pending_reason_internal.h"
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
    case PendingReasonKind::kNoMatch:
      return "no-match";
    case PendingReasonKind::kVcQuota:
      return "vc-quota";
    case PendingReasonKind::kQosLimit:
      return "qos-limit";
    case PendingReasonKind::kBeginTime:
      return "begin-time";
  }
  return "";
}

namespace pending_reason_internal {
std::string Gpus(int n) { return absl::StrCat(n, n == 1 ? " GPU" : " GPUs"); }
}  // namespace pending_reason_internal
using pending_reason_internal::Gpus;

namespace {

// "42s", "5m07s", "1h05m", "2d03h": at least 1 s.
std::string Countdown(double seconds) {
  const int64_t s =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(seconds)));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, s % 86400 / 3600);
}

std::string Nodes(int n) {
  return absl::StrCat(n, n == 1 ? " node" : " nodes");
}

// "; 4 held by jobs never preempted" when some are.
std::string NoPreempt(const PendingReason& r) {
  if (r.no_preempt == 0) return "";
  return absl::StrCat("; ", r.no_preempt,
                      " held by jobs never preempted (--no-preempt)");
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

namespace {
std::string FormatUnfiltered(const PendingReason& r);
std::string FormatGeneral(const PendingReason& r);
}  // namespace
using pending_reason_internal::ExplainQos;
using pending_reason_internal::ExplainVc;
using pending_reason_internal::VcNumbers;

std::string FormatPendingReason(const PendingReason& r) {
  if (r.kind == PendingReasonKind::kQosLimit) {
    return absl::StrCat(
        "qos ", r.qos, ": ", r.user.empty() ? "its user" : r.user,
        "'s running jobs hold ", r.qos_user_gpus, " of at most ",
        Gpus(r.qos_limit), " per user (needs ", Gpus(r.gpus), ")");
  }
  if (r.kind == PendingReasonKind::kVcQuota) {
    std::string text = VcNumbers(r);
    if (r.no_borrow_never_preempted) {
      absl::StrAppend(&text, "; needs ", Gpus(r.gpus),
                      " and, never preempted (--no-preempt), may run only "
                      "on its VC's quota");
    } else if (r.vc_borrow_limit == 0) {
      absl::StrAppend(&text, "; needs ", Gpus(r.gpus),
                      " and may not borrow (borrowing limit 0)");
    } else if (r.lend_limited) {
      absl::StrAppend(&text, "; needs ", Gpus(r.gpus),
                      " beyond it, the other VCs' lending limits leave ",
                      r.vc_lendable, " to borrow");
    } else if (r.vc_borrowed >= r.vc_borrow_limit) {
      absl::StrAppend(&text, ", borrowing limit ", r.vc_borrow_limit,
                      " reached (needs ", Gpus(r.gpus), ")");
    } else {
      absl::StrAppend(&text, "; needs ", Gpus(r.gpus), ", its borrowing limit ",
                      r.vc_borrow_limit, " leaves ",
                      r.vc_borrow_limit - r.vc_borrowed);
    }
    return text;
  }
  std::string text = FormatGeneral(r);
  if (r.in_vc && !text.empty()) absl::StrAppend(&text, " (", VcNumbers(r), ")");
  return text;
}

namespace {
std::string FormatGeneral(const PendingReason& r) {
  if (r.kind == PendingReasonKind::kNoMatch) {
    return absl::StrCat("no up node matches ", r.filter,
                        ": waiting for one that does");
  }
  std::string text;
  if (r.exclusive && r.kind == PendingReasonKind::kPlacement) {
    text =
        r.nodes > 0
            ? absl::StrCat("needs ", Shape(r, false),
                           " of its own (--exclusive), ", r.fitting,
                           r.fitting == 1 ? " such node is" : " such nodes are",
                           " entirely free")
            : absl::StrCat("needs ", Gpus(r.gpus),
                           " on nodes of its own (--exclusive), entirely "
                           "free nodes have ",
                           r.whole_free);
  } else {
    text = FormatUnfiltered(r);
  }
  if (r.filter.empty() || text.empty()) return text;
  absl::StrAppend(
      &text, " (on the ", r.matching == 1 ? "" : absl::StrCat(r.matching, " "),
      r.matching == 1 ? "node" : "nodes", " matching ", r.filter, ": ",
      absl::StrJoin(r.matching_names, ", "),
      r.matching > static_cast<int>(r.matching_names.size()) ? ", ..." : "",
      ")");
  return text;
}
}  // namespace

namespace {
// The sentences of a CPU-only job.
std::string FormatCpuOnly(const PendingReason& r) {
  const std::string needs = absl::StrCat(
      "needs ", r.cpus, r.cpus == 1 ? " spare CPU" : " spare CPUs",
      r.mem_mib > 0 ? absl::StrCat(" and ", r.mem_mib, " MiB") : "",
      " on one node");
  switch (r.kind) {
    case PendingReasonKind::kTooLarge:
      return absl::StrCat(needs, ", up nodes keep at most ", r.capacity,
                          " for CPU-only jobs (agent --spare-cpus): cannot "
                          "run as configured");
    case PendingReasonKind::kDrained:
      return absl::StrCat(needs, ", nodes not drained keep at most ",
                          r.capacity, " (nodes drained)");
    case PendingReasonKind::kResources:
      return absl::StrCat(
          needs, ", the most free on one node is ", r.largest_free, " (",
          r.free, " free in all",
          r.ahead > 0
              ? absl::StrCat("; ", r.ahead,
                             r.ahead == 1 ? " CPU-only job" : " CPU-only jobs",
                             " before it")
              : "",
          ")");
    default:
      return "";
  }
}

std::string FormatUnfiltered(const PendingReason& r) {
  if (r.cpus > 0) {
    if (std::string text = FormatCpuOnly(r); !text.empty()) return text;
  }
  if (r.nodes > 0) {
    if (std::string shaped = FormatShaped(r); !shaped.empty()) return shaped;
  }
  switch (r.kind) {
    case PendingReasonKind::kNone:
    case PendingReasonKind::kNoMatch:  // FormatPendingReason's
    case PendingReasonKind::kVcQuota:
    case PendingReasonKind::kQosLimit:
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
        absl::StrAppend(&text, " (needs ", Gpus(r.gpus), ", ", r.free, " free",
                        NoPreempt(r), ")");
      }
      return text;
    }
    case PendingReasonKind::kResources:
      return absl::StrCat("needs ", Gpus(r.gpus), ", only ", r.free, " free",
                          NoPreempt(r));
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
    case PendingReasonKind::kBeginTime:
      return absl::StrCat("begins in ", Countdown(r.begin_in),
                          " (its --begin time)");
  }
  return "";
}

}  // namespace

namespace {

// The part of a cluster a job may use, with what its reasons read of it:
// the whole cluster for a job without a node filter, else a copy holding
// only the servers its filter admits (their holders and cordons kept).
class View {
 public:
  explicit View(const Cluster& cluster) : cluster_(&cluster) { Count(); }
  View(const Cluster& cluster, const NodeFilter& filter) {
    std::vector<int> admitted;
    std::vector<ServerSpec> specs;
    const Topology& topology = cluster.topology();
    for (int s = 0; s < topology.num_servers(); ++s) {
      const Server& server = topology.server(s);
      if (!filter.Admits(server)) continue;
      admitted.push_back(s);
      specs.push_back(ServerSpec{server.rack, server.num_gpus, server.name,
                                 server.gpu_model, server.features, server.cpus,
                                 server.memory_mib, server.spare_cpus,
                                 server.spare_memory_mib});
    }
    matching_ = static_cast<int>(admitted.size());
    constexpr size_t kNamesShown = 4;
    for (size_t i = 0; i < admitted.size() && i < kNamesShown; ++i) {
      names_.push_back(topology.server(admitted[i]).name);
    }
    if (admitted.empty()) return;
    absl::StatusOr<Topology> sub = Topology::Create(std::move(specs));
    assert(sub.ok());
    owned_ = std::make_unique<Cluster>(*std::move(sub));
    // Each holder's GPUs there, in the copy's numbering, given at once (an
    // exclusive holder reserves its servers on its first GPU).
    std::map<JobId, std::pair<std::vector<GpuId>, bool>> held;
    for (size_t i = 0; i < admitted.size(); ++i) {
      const Server& from = topology.server(admitted[i]);
      const GpuId to = owned_->topology().server(static_cast<int>(i)).first_gpu;
      for (int g = 0; g < from.num_gpus; ++g) {
        const JobId owner = cluster.owner(from.first_gpu + g);
        if (owner == kNoJob) continue;
        auto& [gpus, exclusive] = held[owner];
        gpus.push_back(to + g);
        exclusive = exclusive || cluster.exclusive_gpu(from.first_gpu + g);
      }
      if (cluster.cordoned(admitted[i])) {
        owned_->SetCordoned(static_cast<int>(i), true);
      }
    }
    for (const auto& [owner, gpus] : held) {
      // Refused only where `cluster` broke its own invariant: the copy
      // then counts those GPUs free, which a reason may overstate.
      owned_->Allocate(owner, gpus.first, gpus.second).IgnoreError();
    }
    cluster_ = owned_.get();
    Count();
  }

  // Null when the filter admits no server.
  const Cluster* cluster() const { return cluster_; }
  int total = 0, undrained = 0, free = 0, largest_free = 0;
  // Whether a job of (scheme, GPUs, GPUs per node, exclusive) fits the
  // free GPUs now: one placement try per key. A shaped job's scheme is "".
  std::map<std::tuple<std::string_view, int, int, bool>, bool> fits;

  // Servers with at least G GPUs, and of those the ones not cordoned.
  std::pair<int, int> ServersWith(int per_node) {
    auto [it, added] = servers_with_.try_emplace(per_node);
    if (added) {
      for (int s = 0; s < cluster_->topology().num_servers(); ++s) {
        if (cluster_->topology().server(s).num_gpus < per_node) continue;
        ++it->second.first;
        if (!cluster_->cordoned(s)) ++it->second.second;
      }
    }
    return it->second;
  }
  void Describe(const NodeFilter& filter, PendingReason* r) const {
    r->filter = filter.Describe();
    r->matching = matching_;
    r->matching_names = names_;
  }

 private:
  void Count() {
    total = cluster_->total_gpus();
    undrained = total - cluster_->cordoned_gpus();
    free = cluster_->free_gpus();
    for (int f = cluster_->topology().max_gpus_per_server(); f > 0; --f) {
      if (!cluster_->ServersWithFree(f).empty()) {
        largest_free = f;
        break;
      }
    }
  }

  const Cluster* cluster_ = nullptr;
  std::unique_ptr<Cluster> owned_;
  int matching_ = 0;
  std::vector<std::string> names_;
  std::map<int, std::pair<int, int>> servers_with_;
};

}  // namespace

namespace {

// A waiting CPU-only job's reason: O(servers).
PendingReason ExplainCpuOnly(const Job& job, const Cluster& cluster,
                             int ahead) {
  PendingReason r;
  const JobSpec& spec = job.spec();
  r.cpus = spec.cpus;
  r.mem_mib = spec.mem_mib;
  r.ahead = ahead;
  const NodeFilter* filter = spec.filter.get();
  const Topology& topology = cluster.topology();
  int up = 0, undrained = 0;
  bool fits_up = false, fits_undrained = false, fits_now = false;
  constexpr size_t kNamesShown = 4;
  for (int s = 0; s < topology.num_servers(); ++s) {
    const Server& server = topology.server(s);
    if (filter != nullptr && !filter->Admits(server)) continue;
    ++r.matching;
    if (r.matching_names.size() < kNamesShown) {
      r.matching_names.push_back(server.name);
    }
    const bool holds =
        spec.cpus <= server.spare_cpus &&
        cluster.SpareMemoryFor(s, spec) <= server.spare_memory_mib;
    up = std::max(up, server.spare_cpus);
    fits_up = fits_up || holds;
    if (cluster.cordoned(s)) continue;
    undrained = std::max(undrained, server.spare_cpus);
    fits_undrained = fits_undrained || holds;
    r.free += cluster.spare_free_cpus(s);
    r.largest_free = std::max(r.largest_free, cluster.spare_free_cpus(s));
    fits_now = fits_now || cluster.SpareFits(s, spec);
  }
  if (filter != nullptr) {
    r.filter = filter->Describe();
  } else {
    r.matching = 0;
    r.matching_names.clear();
  }
  if (filter != nullptr && r.matching == 0) {
    r.kind = PendingReasonKind::kNoMatch;
  } else if (!fits_up) {
    r.kind = PendingReasonKind::kTooLarge;
    r.capacity = up;
  } else if (!fits_undrained) {
    r.kind = PendingReasonKind::kDrained;
    r.capacity = undrained;
  } else if (fits_now) {
    r.kind = PendingReasonKind::kNextPass;
  } else {
    r.kind = PendingReasonKind::kResources;
  }
  return r;
}

}  // namespace

std::vector<std::pair<JobId, PendingReason>> ExplainWaiting(
    const Scheduler& scheduler, const Cluster& cluster) {
  std::vector<std::pair<JobId, PendingReason>> out;
  const bool head_of_line = scheduler.policy().traits().head_of_line_blocking;
  View whole(cluster);
  // One view per distinct filter (jobs of an array share theirs).
  std::map<std::string, View> filtered;
  Rng rng(1);  // a throwaway: nothing is allocated
  std::vector<GpuId> scratch;
  int ahead = 0;
  int cpu_ahead = 0;
  // GPUs held by jobs never preempted: O(GPUs), once.
  int no_preempt = 0;
  for (GpuId g = 0; g < cluster.total_gpus(); ++g) {
    const JobId owner = cluster.owner(g);
    if (owner == kNoJob) continue;
    const Job* holder = scheduler.Find(owner);
    no_preempt += holder != nullptr && holder->spec().no_preempt;
  }
  // Each VC's usage, once: O(its running jobs); what borrowers may hold,
  // once: O(VCs).
  std::vector<std::optional<Scheduler::VcUsage>> usage(scheduler.vcs().size());
  std::optional<Scheduler::BorrowRoom> lendable;
  const std::function<Scheduler::BorrowRoom()> room = [&] {
    if (!lendable) lendable = scheduler.Lendable(cluster);
    return *lendable;
  };
  scheduler.ForEachWaiting([&](const Job& job) {
    if (job.cpu_only()) {
      out.emplace_back(job.id(), ExplainCpuOnly(job, cluster, cpu_ahead++));
      return;
    }
    PendingReason r;
    r.gpus = job.num_gpus();
    r.queue = job.queue();
    r.ahead = ahead++;
    r.no_preempt = no_preempt;
    View* view = &whole;
    if (const NodeFilter* filter = job.spec().filter.get()) {
      std::string key = filter->Key();
      auto it = filtered.find(key);
      if (it == filtered.end()) {
        it = filtered.try_emplace(std::move(key), cluster, *filter).first;
      }
      view = &it->second;
      view->Describe(*filter, &r);
      if (view->cluster() == nullptr) {
        r.kind = PendingReasonKind::kNoMatch;
        r.free = whole.free;
        out.emplace_back(job.id(), r);
        return;
      }
    }
    const Cluster& c = *view->cluster();
    r.free = view->free;
    const bool shaped = job.spec().shaped();
    r.exclusive = job.spec().exclusive;
    std::pair<int, int> with_shape = {0, 0};  // servers, undrained ones
    if (shaped) {
      r.nodes = job.spec().nodes;
      r.gpus_per_node = job.spec().gpus_per_node;
      with_shape = view->ServersWith(r.gpus_per_node);
    }
    // Servers without GPUs (nodes for CPU-only jobs) count 0: a GPU job
    // where only they are is too large for them, not without nodes.
    if (shaped && with_shape.first < r.nodes) {
      r.kind = PendingReasonKind::kTooLarge;
      r.capacity = with_shape.first;
    } else if (shaped && with_shape.second < r.nodes) {
      r.kind = PendingReasonKind::kDrained;
      r.capacity = with_shape.second;
    } else if (r.gpus > view->total) {
      r.kind = PendingReasonKind::kTooLarge;
      r.capacity = view->total;
    } else if (r.gpus > view->undrained) {
      r.kind = PendingReasonKind::kDrained;
      r.capacity = view->undrained;
    } else {
      const std::string_view scheme =
          shaped ? std::string_view() : scheduler.placer().SchemeFor(job);
      auto [it, added] = view->fits.try_emplace(
          {scheme, r.gpus, r.gpus_per_node, r.exclusive}, false);
      if (added && r.gpus <= r.free) {
        scratch.clear();
        it->second = PlaceJob(scheduler.placer(), c, job, rng, &scratch);
      }
      if (it->second) {
        r.kind = head_of_line && r.ahead > 0 ? PendingReasonKind::kPriority
                                             : PendingReasonKind::kNextPass;
      } else if (r.gpus > r.free) {
        r.kind = r.ahead > 0 ? PendingReasonKind::kPriority
                             : PendingReasonKind::kResources;
      } else {
        r.kind = PendingReasonKind::kPlacement;
        if (shaped && r.exclusive) {
          r.fitting = 0;
          for (int s = 0; s < c.topology().num_servers(); ++s) {
            const int n = c.topology().server(s).num_gpus;
            r.fitting += n >= r.gpus_per_node && c.free_on(s) == n;
          }
        } else if (shaped) {
          r.fitting = ServersWithAtLeast(c, r.gpus_per_node);
        }
        r.one_server = r.gpus <= c.topology().max_gpus_per_server();
        r.largest_free = view->largest_free;
        r.whole_free = c.whole_free_gpus();
      }
    }
    ExplainVc(scheduler, job, usage, room, &r);
    if (!scheduler.qos().empty()) ExplainQos(scheduler, job, &r);
    out.emplace_back(job.id(), r);
  });
  return out;
}

}  // namespace tiresias
