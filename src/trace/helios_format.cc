// SenseTime Helios traces (github.com/S-Lab-System-Group/HeliosData,
// data/<cluster>/cluster_log.csv; rules in trace_reader.h). Only COMPLETED
// GPU jobs are kept: the other states (CANCELLED, FAILED, TIMEOUT,
// NODE_FAIL) are jobs whose length says when they stopped, not how long they
// needed, and gpu_num 0 is a CPU job.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/formats.h"

namespace tiresias::trace_internal {

absl::StatusOr<std::vector<JobSpec>> ReadHeliosRows(
    CsvReader& csv, std::vector<std::string>* notes) {
  constexpr std::string_view kWhat = "Helios trace";
  ASSIGN_OR_RETURN(const int id_col, csv.RequireColumn("job_id", kWhat));
  ASSIGN_OR_RETURN(const int gpu_col, csv.RequireColumn("gpu_num", kWhat));
  ASSIGN_OR_RETURN(const int state_col, csv.RequireColumn("state", kWhat));
  ASSIGN_OR_RETURN(const int submit_col,
                   csv.RequireColumn("submit_time", kWhat));
  ASSIGN_OR_RETURN(const int duration_col,
                   csv.RequireColumn("duration", kWhat));

  std::vector<JobSpec> jobs;
  std::vector<int64_t> submit_seconds;
  int64_t earliest = std::numeric_limits<int64_t>::max();
  absl::flat_hash_map<JobId, int> line_of_id;
  std::map<std::string, int64_t> skipped;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    JobSpec job;
    ASSIGN_OR_RETURN(job.id, UniqueJobId(csv, id_col, &line_of_id));
    int gpus;
    if (!ParseInt(csv.field(gpu_col), &gpus) || gpus < 0) {
      return csv.ColumnError(gpu_col, "a non-negative integer");
    }
    ASSIGN_OR_RETURN(const std::string_view state, csv.NonEmpty(state_col));
    if (state != "COMPLETED") {
      ++skipped[absl::StrCat("jobs in state ", ToAbsl(state))];
      continue;
    }
    if (gpus == 0) {
      ++skipped["completed jobs without GPUs (gpu_num 0)"];
      continue;
    }
    int64_t submit;
    if (!ParseDateTime(csv.field(submit_col), &submit)) {
      return csv.ColumnError(submit_col,
                             "a valid date and time YYYY-MM-DD HH:MM:SS");
    }
    ASSIGN_OR_RETURN(const double duration,
                     csv.NonNegativeDouble(duration_col,
                                           "a non-negative number of seconds"));
    job.num_gpus = gpus;
    job.duration = Seconds(duration);
    earliest = std::min(earliest, submit);
    submit_seconds.push_back(submit);
    jobs.push_back(std::move(job));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].submit_time =
        Seconds(static_cast<double>(submit_seconds[i] - earliest));
  }
  NoteSkipped("Helios", skipped, notes);
  if (jobs.empty() && !skipped.empty()) {
    return csv.FileError("no jobs kept: no COMPLETED job with GPUs");
  }
  return jobs;
}

}  // namespace tiresias::trace_internal
