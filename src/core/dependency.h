// Job dependencies (Slurm's --dependency): a job that waits until other
// jobs have ended in a given way. The syntax, its parser and the pure
// evaluation of a job's dependencies against the states of the jobs it
// depends on; the master keeps the waiting and the bookkeeping.
//
//   afterok:12:13,afterany:14    starts once 12 and 13 finished and 14 ended
//
// Pure: no clock, no store; the caller says how each job it names ended.
#ifndef TIRESIAS_CORE_DEPENDENCY_H_
#define TIRESIAS_CORE_DEPENDENCY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"

namespace tiresias {

// Values are those of v1::DependencyKind.
enum class DependencyKind : int8_t {
  kAfterOk = 1,     // the job finished (every task exited 0)
  kAfterAny = 2,    // the job ended, however
  kAfterNotOk = 3,  // the job ended other than finished
};

struct JobDependency {
  DependencyKind kind = DependencyKind::kAfterOk;
  JobId job_id = 0;

  bool operator==(const JobDependency&) const = default;
};

// "afterok", "afterany", "afternotok".
std::string_view DependencyKindName(DependencyKind kind);
// Whether `value` is a DependencyKind value (1..3).
bool IsDependencyKind(int value);

// Parses Slurm's form: comma-separated groups KIND:ID[:ID...], KIND one of
// afterok, afterany, afternotok, every ID a positive integer. Pairs given
// twice are kept once; order is kept otherwise. InvalidArgument saying what
// was expected and what came, e.g. `"afterok:x": job id "x" is not a
// positive integer`. Empty text: no dependencies.
absl::StatusOr<std::vector<JobDependency>> ParseDependencies(
    std::string_view text);
// The inverse, grouping consecutive ids of one kind:
// "afterok:12:13,afterany:14".
std::string FormatDependencies(const std::vector<JobDependency>& deps);
// "afterok:12".
std::string FormatDependency(const JobDependency& dep);

// How a job that others depend on stands.
enum class DependencyTarget {
  kUnfinished,  // not ended yet (pending, starting, running, preempted)
  kSucceeded,   // ended finished
  kFailed,      // ended failed, cancelled or timeout
};

enum class DependencyVerdict {
  kMet,      // every dependency is met: the job may run
  kWaiting,  // some are not met yet, none can never be
  kNever,    // one can never be met: the job must not run
};

struct DependencyCheck {
  DependencyVerdict verdict = DependencyVerdict::kMet;
  // kWaiting: the first dependency not met yet, and how many are not;
  // kNever: the first that can never be met.
  size_t index = 0;
  int unmet = 0;
};

// Evaluates `deps` in order; `target(id)` says how job `id` stands (called
// once per dependency). O(deps).
DependencyCheck CheckDependencies(
    const std::vector<JobDependency>& deps,
    const std::function<DependencyTarget(JobId)>& target);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_DEPENDENCY_H_
