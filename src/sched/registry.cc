// The registry: policy name -> factory. One line per policy.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sched/policies.h"

namespace tiresias {
namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<Policy> (*make)(const PolicyOptions&);
};

constexpr Entry kPolicies[] = {
    {"tiresias-l", NewTiresiasLas},
    {"tiresias-g", NewTiresiasGittins},
    {"yarn-cs", NewYarnCs},
    {"fifo", NewFifo},
    {"best-effort", NewBestEffort},
    {"smallest-first", NewSmallestFirst},
    {"sjf", NewSjf},
    {"srtf", NewSrtf},
    {"srsf", NewSrsf},
    {"las", NewLas},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(
    std::string_view name, const PolicyOptions& options) {
  for (const Entry& e : kPolicies) {
    if (e.name == name) return e.make(options);
  }
  if (name == "gandiva") {  // src/sim/gandiva.h
    return absl::InvalidArgumentError(
        "policy \"gandiva\" is a simulator-only baseline: it oversubscribes "
        "GPUs and time-slices jobs on them, which this scheduler (one job "
        "per GPU) does not do; run it with `tiresias simulate --policy "
        "gandiva`");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy \"", std::string(name), "\"; expected one of ",
                   absl::StrJoin(PolicyNames(), ", ")));
}

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPolicies) names.emplace_back(e.name);
  return names;
}

}  // namespace tiresias
