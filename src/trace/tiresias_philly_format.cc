// The Tiresias simulator's CSV and the Microsoft Philly CSV (rules in
// trace_reader.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/formats.h"

namespace tiresias::trace_internal {
namespace {

constexpr std::string_view kSecondsExpected =
    "a non-negative number of seconds";

}  // namespace

absl::StatusOr<std::vector<JobSpec>> ReadTiresiasRows(CsvReader& csv) {
  constexpr std::string_view kWhat = "Tiresias trace";
  ASSIGN_OR_RETURN(const int id_col, csv.RequireColumn("job_id", kWhat));
  ASSIGN_OR_RETURN(const int gpu_col, csv.RequireColumn("num_gpu", kWhat));
  ASSIGN_OR_RETURN(const int submit_col,
                   csv.RequireColumn("submit_time", kWhat));
  ASSIGN_OR_RETURN(const int duration_col,
                   csv.RequireColumn("duration", kWhat));
  const int model_col = csv.FindColumn("model_name");  // optional

  std::vector<JobSpec> jobs;
  absl::flat_hash_map<JobId, int> line_of_id;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    JobSpec job;
    ASSIGN_OR_RETURN(job.id, UniqueJobId(csv, id_col, &line_of_id));
    ASSIGN_OR_RETURN(job.num_gpus, csv.PositiveInt(gpu_col));
    ASSIGN_OR_RETURN(const double submit,
                     csv.NonNegativeDouble(submit_col, kSecondsExpected));
    ASSIGN_OR_RETURN(const double duration,
                     csv.NonNegativeDouble(duration_col, kSecondsExpected));
    job.submit_time = Seconds(submit);
    job.duration = Seconds(duration);
    if (model_col >= 0)
      job.model =
          absl::AsciiStrToLower(trace_internal::ToAbsl(csv.field(model_col)));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

absl::StatusOr<std::vector<JobSpec>> ReadPhillyRows(CsvReader& csv) {
  constexpr std::string_view kWhat = "Philly trace";
  ASSIGN_OR_RETURN(const int time_col, csv.RequireColumn("timestamp", kWhat));
  ASSIGN_OR_RETURN(const int duration_col,
                   csv.RequireColumn("duration", kWhat));
  ASSIGN_OR_RETURN(const int gpu_col, csv.RequireColumn("num_gpus", kWhat));
  ASSIGN_OR_RETURN(const int gpu_time_col,
                   csv.RequireColumn("gpu_time", kWhat));
  ASSIGN_OR_RETURN(const int cluster_col, csv.RequireColumn("cluster", kWhat));

  std::vector<JobSpec> jobs;
  std::vector<int64_t> submit_seconds;  // on the trace's wall clock
  int64_t earliest = std::numeric_limits<int64_t>::max();
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    int64_t submit;
    if (!trace_internal::ParseDateTime(csv.field(time_col), &submit)) {
      return csv.ColumnError(time_col,
                             "a valid date and time YYYY-MM-DD HH:MM:SS");
    }
    ASSIGN_OR_RETURN(const double duration,
                     csv.NonNegativeDouble(duration_col, kSecondsExpected));
    JobSpec job;
    job.id = static_cast<JobId>(jobs.size());
    job.duration = Seconds(duration);
    ASSIGN_OR_RETURN(job.num_gpus, csv.PositiveInt(gpu_col));
    RETURN_IF_ERROR(csv.NonNegativeDouble(gpu_time_col,
                                          "a non-negative number of "
                                          "GPU-seconds")
                        .status());
    // The tenant (Philly's virtual cluster), for `simulate --vcs`.
    ASSIGN_OR_RETURN(job.vc, csv.NonEmpty(cluster_col));
    earliest = std::min(earliest, submit);
    submit_seconds.push_back(submit);
    jobs.push_back(std::move(job));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].submit_time =
        Seconds(static_cast<double>(submit_seconds[i] - earliest));
  }
  return jobs;
}

absl::StatusOr<JobId> UniqueJobId(CsvReader& csv, int col,
                                  absl::flat_hash_map<JobId, int>* seen) {
  ASSIGN_OR_RETURN(const JobId id, csv.NonNegativeInt64(col));
  auto [it, inserted] = seen->try_emplace(id, csv.line_number());
  if (!inserted) {
    return csv.LineError(absl::StrCat("column 'job_id': duplicate job id ",
                                      id, ", first on line ", it->second));
  }
  return id;
}

}  // namespace tiresias::trace_internal
