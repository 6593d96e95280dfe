#include "trace/samples_reader.h"

#include <algorithm>

#include "core/status_macros.h"
#include "trace/csv.h"

namespace tiresias {

absl::StatusOr<std::vector<double>> ReadGpuTimeSamples(
    const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, trace_internal::ReadWholeFile(path));
  trace_internal::CsvReader csv(path, text);
  RETURN_IF_ERROR(csv.ReadHeader());
  ASSIGN_OR_RETURN(const int column,
                   csv.RequireColumn("duration", "GPU-time samples"));
  std::vector<double> samples;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    ASSIGN_OR_RETURN(
        const double gpu_seconds,
        csv.NonNegativeDouble(column, "a non-negative number of GPU-seconds"));
    samples.push_back(gpu_seconds);
  }
  if (samples.empty()) return csv.FileError("no samples after the header");
  std::sort(samples.begin(), samples.end());
  return samples;
}

}  // namespace tiresias
