#include "core/dependency.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"

namespace tiresias {

std::string_view DependencyKindName(DependencyKind kind) {
  switch (kind) {
    case DependencyKind::kAfterOk: return "afterok";
    case DependencyKind::kAfterAny: return "afterany";
    case DependencyKind::kAfterNotOk: return "afternotok";
  }
  return "?";
}

bool IsDependencyKind(int value) { return value >= 1 && value <= 3; }

namespace {

absl::Status Bad(absl::string_view group, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", group, "\": ", why,
                   " (expected afterok|afterany|afternotok:ID[:ID...], "
                   "comma-separated)"));
}

}  // namespace

absl::StatusOr<std::vector<JobDependency>> ParseDependencies(
    std::string_view text) {
  std::vector<JobDependency> deps;
  if (text.empty()) return deps;
  for (absl::string_view group : absl::StrSplit(ToAbsl(text), ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(group, ':');
    DependencyKind kind;
    if (parts[0] == "afterok") {
      kind = DependencyKind::kAfterOk;
    } else if (parts[0] == "afterany") {
      kind = DependencyKind::kAfterAny;
    } else if (parts[0] == "afternotok") {
      kind = DependencyKind::kAfterNotOk;
    } else {
      return Bad(group, absl::StrCat("unknown dependency type \"", parts[0],
                                     "\""));
    }
    if (parts.size() < 2) return Bad(group, "no job id");
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view id_text = parts[i];
      JobId id = 0;
      auto [end, ec] = std::from_chars(
          id_text.data(), id_text.data() + id_text.size(), id);
      if (id_text.empty() || ec != std::errc() ||
          end != id_text.data() + id_text.size() || id <= 0) {
        return Bad(group, absl::StrCat("job id \"", id_text,
                                       "\" is not a positive integer"));
      }
      const JobDependency dep{kind, id};
      if (std::find(deps.begin(), deps.end(), dep) == deps.end()) {
        deps.push_back(dep);
      }
    }
  }
  return deps;
}

std::string FormatDependency(const JobDependency& dep) {
  return absl::StrCat(ToAbsl(DependencyKindName(dep.kind)), ":", dep.job_id);
}

std::string FormatDependencies(const std::vector<JobDependency>& deps) {
  std::string out;
  for (size_t i = 0; i < deps.size(); ++i) {
    if (i > 0 && deps[i].kind == deps[i - 1].kind) {
      absl::StrAppend(&out, ":", deps[i].job_id);
      continue;
    }
    if (i > 0) out += ',';
    absl::StrAppend(&out, FormatDependency(deps[i]));
  }
  return out;
}

DependencyCheck CheckDependencies(
    const std::vector<JobDependency>& deps,
    const std::function<DependencyTarget(JobId)>& target) {
  DependencyCheck check;
  bool first_unmet = true;
  for (size_t i = 0; i < deps.size(); ++i) {
    const DependencyTarget t = target(deps[i].job_id);
    if (t == DependencyTarget::kUnfinished) {
      if (first_unmet) check.index = i;
      first_unmet = false;
      ++check.unmet;
      continue;
    }
    const bool met =
        deps[i].kind == DependencyKind::kAfterAny ||
        (deps[i].kind == DependencyKind::kAfterOk) ==
            (t == DependencyTarget::kSucceeded);
    if (!met) return {DependencyVerdict::kNever, i, 0};
  }
  check.verdict =
      check.unmet > 0 ? DependencyVerdict::kWaiting : DependencyVerdict::kMet;
  return check;
}

}  // namespace tiresias
