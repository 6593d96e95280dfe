// The path patterns of `submit --output` and `--error` (JobSpec.output,
// .error), as Slurm's sbatch spells them: the master checks them at
// submission (ValidateOutputPattern, through ValidateJobRequest) and expands
// them for each task it asks an agent to start (ExpandOutputPattern). Pure.
//
//   %j  the job id          %A  its array's id (the job id outside one)
//   %a  the array index (0 outside an array)
//   %t  the task's rank (as %r)  %R  the attempt (launch number, from 1)
//   %%  a '%'
//
// As Slurm's sbatch means them (%A, %a, %j, %t); %R is ours (Slurm has no
// attempt), and there is no %N (node), %u (user) or zero padding (%5j):
// any other '%' is refused, so a pattern never means something else
// later.
//
//   ExpandOutputPattern("out-%j-%r.txt", {.job_id = 7, .attempt = 2,
//                                         .rank = 1})  // "out-7-1.txt"
#ifndef TIRESIAS_MASTER_OUTPUT_PATTERN_H_
#define TIRESIAS_MASTER_OUTPUT_PATTERN_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tiresias {

// What the placeholders of one task stand for.
struct OutputPatternValues {
  int64_t job_id = 0;
  int attempt = 0;
  int rank = 0;
  int array_index = 0;
  int64_t array_id = 0;  // 0: not in an array (%A is the job id)
};

// OK, or InvalidArgument "FIELD: ..." naming the first '%' that is not one
// of the placeholders above (with its byte offset) and what is expected.
// Lengths and UTF-8 are ValidateJobRequest's business.
absl::Status ValidateOutputPattern(std::string_view field,
                                   std::string_view pattern);

// `pattern` with its placeholders replaced. Total: a sequence that
// ValidateOutputPattern would refuse (only a hand-edited state file holds
// one) is copied as it is.
std::string ExpandOutputPattern(std::string_view pattern,
                                const OutputPatternValues& values);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_OUTPUT_PATTERN_H_
