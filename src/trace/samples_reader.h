// Reads a job-size distribution: past jobs' GPU-time, as the Tiresias-G
// (Gittins) scheduler learns it from. The file is the Tiresias simulator's
// yarn-gput*.csv: a header with a `duration` column (other columns are
// ignored) and one non-negative number of GPU-seconds per line. See csv.h
// for the CSV dialect. Errors name the place, e.g.
//   data/g.csv:7: column 'duration': expected a non-negative number of
//   GPU-seconds, got "-3"
#ifndef TIRESIAS_TRACE_SAMPLES_READER_H_
#define TIRESIAS_TRACE_SAMPLES_READER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// The samples, in GPU-seconds, sorted ascending. NotFound if there is no
// such file; InvalidArgument for a bad header or line, or no samples at all.
absl::StatusOr<std::vector<double>> ReadGpuTimeSamples(const std::string& path);

}  // namespace tiresias

#endif  // TIRESIAS_TRACE_SAMPLES_READER_H_
