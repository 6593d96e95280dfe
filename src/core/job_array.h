// Job arrays (Slurm's `sbatch --array`): one submission makes one job per
// index of a set, for sweeps of hundreds of near-identical jobs. The syntax,
// its parser and what a task is told about its array; the master keeps the
// jobs and the running limit.
//
//   0-99        indices 0, 1, ..., 99
//   1,3,5       a list
//   0-15:4      a range with a step: 0, 4, 8, 12
//   1-3,7%2     mixed, with at most 2 of the array's jobs running at once
//
// Unlike Slurm, an index given twice (`1-3,2`) is refused rather than merged,
// so that the count a user reads in the spec is the number of jobs made.
// Pure: no clock, no store.
#ifndef TIRESIAS_CORE_JOB_ARRAY_H_
#define TIRESIAS_CORE_JOB_ARRAY_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// At most this many jobs in one array, and no index above kMaxArrayIndex
// (Slurm's largest MaxArraySize is 4,000,001: indices up to 4,000,000).
inline constexpr int kMaxArrayJobs = 10000;
inline constexpr int kMaxArrayIndex = 4000000;
// The indices text (without the %N limit): at most this many bytes.
inline constexpr size_t kMaxArrayIndicesBytes = 4096;

// What a user asked for (proto JobArray): the indices as written, without
// the limit, and the running limit (0: none).
struct JobArraySpec {
  std::string indices;  // empty: not an array
  int max_running = 0;  // %N: at most N of its jobs running at once; 0: any

  bool empty() const { return indices.empty(); }
  bool operator==(const JobArraySpec&) const = default;
};

// Parses SPEC = INDICES[%N] (the `--array` argument). InvalidArgument
// saying what was expected and what came, e.g. `"5-2": range ends before
// it starts`; the caller prefixes the field or flag. The indices are
// checked as ExpandArrayIndices does.
absl::StatusOr<JobArraySpec> ParseJobArray(std::string_view text);

// The indices of `indices` (no %N), ascending. InvalidArgument for an
// empty text, a malformed item, a range that ends before it starts, a step
// below 1, an index above kMaxArrayIndex, an index given twice, more than
// kMaxArrayJobs indices, or a text past kMaxArrayIndicesBytes. Cost
// O(indices), never O(the span of a range's numbers beyond the cap).
absl::StatusOr<std::vector<int>> ExpandArrayIndices(std::string_view indices);

// OK if `spec` is a valid array (ExpandArrayIndices accepts its indices
// and max_running is 0 or in 1..kMaxArrayJobs); the message names no
// field.
absl::Status CheckJobArray(const JobArraySpec& spec);

// "0-99%8", or "0-99" without a limit.
std::string FormatJobArray(const JobArraySpec& spec);

// What every task of an array is told (TIRESIAS_ARRAY_TASK_COUNT, _MIN,
// _MAX): the number of indices, the smallest and the largest. O(items of
// the text): for a valid `indices` only (the master's stored spec).
struct ArraySummary {
  int count = 0;
  int min = 0;
  int max = 0;
};
ArraySummary SummarizeArray(std::string_view indices);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_JOB_ARRAY_H_
