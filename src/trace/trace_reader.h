// Reads job traces into JobSpecs: the Tiresias simulator's CSV and the
// Microsoft Philly CSV. A bad line gives an InvalidArgument status that names
// the place and what was expected, e.g.
//   data/bad.csv:17: column 'num_gpu': expected a positive integer, got "-4"
// and never aborts.
//
// Formats (columns are found by header name, in any order; other columns are
// ignored; see csv.h for the CSV dialect):
//   Tiresias  job_id,num_gpu,submit_time,iterations,model_name,duration,
//             interval. Uses job_id (non-negative integer, unique),
//             num_gpu (positive integer), submit_time (non-negative seconds),
//             duration (non-negative seconds) and model_name (optional,
//             lowercased). submit_time is taken as is.
//   Philly    timestamp,duration,num_gpus,gpu_time,cluster. timestamp is a
//             naive wall-clock "YYYY-MM-DD HH:MM:SS"; submit_time is seconds
//             since the earliest timestamp in the file. A job's id is its
//             0-based data-row index in file order; model is empty.
//             gpu_time must be a non-negative number and cluster non-empty;
//             neither is otherwise used.
// Either way the result is sorted by submit time, stably (ties keep file
// order). A file with a header and no rows is an error.
#ifndef TIRESIAS_TRACE_TRACE_READER_H_
#define TIRESIAS_TRACE_TRACE_READER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/job.h"

namespace tiresias {

enum class TraceFormat {
  kAuto,  // decided by the header line
  kTiresias,
  kPhilly,
};

// "auto", "tiresias" or "philly" (exactly, lowercase).
absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name);

// Reads the trace at `path`. NotFound if there is no such file;
// InvalidArgument for anything wrong inside it. Thread-compatible.
absl::StatusOr<std::vector<JobSpec>> ReadTrace(
    const std::string& path, TraceFormat format = TraceFormat::kAuto);

// OK iff `factor` is a finite number > 0.
absl::Status ValidateArrivalScale(double factor);

// Multiplies every inter-arrival gap by `factor` (< 1 packs arrivals closer,
// a heavier load); the earliest submit time stays where it is. `jobs` should
// be sorted by submit time (as ReadTrace returns them); the order is kept.
// An invalid factor (see ValidateArrivalScale) changes nothing and is
// returned as InvalidArgument.
absl::Status ScaleArrivals(std::vector<JobSpec>* jobs, double factor);

}  // namespace tiresias

#endif  // TIRESIAS_TRACE_TRACE_READER_H_
