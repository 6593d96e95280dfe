// How a command names a job: by its id ("15"), or as squeue shows a job of
// an array, ARRAYID_INDEX ("12_3": index 3 of array 12), which Slurm's
// scancel, scontrol and sacct take too.
#ifndef TIRESIAS_CLI_JOB_REF_H_
#define TIRESIAS_CLI_JOB_REF_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tiresias::cli {

struct JobRef {
  int64_t id = 0;        // "15": 15; "12_3": 0 (the master knows it)
  int64_t array_id = 0;  // "12_3": 12
  int64_t index = 0;     // "12_3": 3
};

// Parses `text`; InvalidArgument "JOB 12_x: expected a job id (e.g. 15) or
// ARRAYID_INDEX (e.g. 12_3)" for anything else, ids >= 1, indices >= 0.
absl::StatusOr<JobRef> ParseJobRef(absl::string_view text);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_JOB_REF_H_
