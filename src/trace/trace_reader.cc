#include "trace/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/csv.h"

namespace tiresias {
namespace {

using trace_internal::CsvReader;

constexpr char kTiresiasHeader[] =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval";
constexpr char kPhillyHeader[] = "timestamp,duration,num_gpus,gpu_time,cluster";
constexpr std::string_view kSecondsExpected =
    "a non-negative number of seconds";

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
// (H. Hinnant's days_from_civil). Requires a valid date.
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;  // [0, 399]
  const int64_t doy =
      (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;        // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// Parses exactly "YYYY-MM-DD HH:MM:SS" into seconds since 1970-01-01
// 00:00:00 on the same (zone-less) clock. False on any other shape or on an
// impossible date or time.
bool ParseTimestamp(std::string_view text, int64_t* seconds) {
  static constexpr std::string_view kPattern = "dddd-dd-dd dd:dd:dd";
  if (text.size() != kPattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kPattern[i] == 'd' ? !digit : text[i] != kPattern[i]) return false;
  }
  auto number = [&](size_t at, size_t len) {
    int value = 0;
    for (size_t i = at; i < at + len; ++i) value = value * 10 + (text[i] - '0');
    return value;
  };
  const int year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const int hour = number(11, 2), minute = number(14, 2),
            second = number(17, 2);
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) ||
      hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  *seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 +
             minute * 60 + second;
  return true;
}

// Stable sort by submit time. Sorts (time, index) keys rather than JobSpecs,
// which are big to move around; the keys are unique, so std::sort is stable.
std::vector<JobSpec> SortedBySubmitTime(std::vector<JobSpec> jobs) {
  auto by_submit = [](const JobSpec& a, const JobSpec& b) {
    return a.submit_time < b.submit_time;
  };
  if (std::is_sorted(jobs.begin(), jobs.end(), by_submit)) return jobs;
  std::vector<std::pair<double, size_t>> keys(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    keys[i] = {jobs[i].submit_time.count(), i};
  }
  std::sort(keys.begin(), keys.end());
  std::vector<JobSpec> sorted;
  sorted.reserve(jobs.size());
  for (const auto& key : keys) sorted.push_back(std::move(jobs[key.second]));
  return sorted;
}

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
    ASSIGN_OR_RETURN(job.id, csv.NonNegativeInt64(id_col));
    auto [it, inserted] = line_of_id.try_emplace(job.id, csv.line_number());
    if (!inserted) {
      return csv.LineError(absl::StrCat("column 'job_id': duplicate job id ",
                                        job.id, ", first on line ",
                                        it->second));
    }
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
    if (!ParseTimestamp(csv.field(time_col), &submit)) {
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
    RETURN_IF_ERROR(csv.NonEmpty(cluster_col).status());
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

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "tiresias") return TraceFormat::kTiresias;
  if (name == "philly") return TraceFormat::kPhilly;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown trace format ", trace_internal::Quote(name),
                   "; expected auto, tiresias or philly"));
}

absl::StatusOr<std::vector<JobSpec>> ReadTrace(const std::string& path,
                                               TraceFormat format) {
  ASSIGN_OR_RETURN(const std::string text, trace_internal::ReadWholeFile(path));
  CsvReader csv(path, text);
  RETURN_IF_ERROR(csv.ReadHeader());
  if (format == TraceFormat::kAuto) {
    if (csv.FindColumn("job_id") >= 0) {
      format = TraceFormat::kTiresias;
    } else if (csv.FindColumn("timestamp") >= 0) {
      format = TraceFormat::kPhilly;
    } else {
      return csv.LineError(absl::StrCat(
          "unknown trace header ", trace_internal::Quote(csv.header_text()),
          "; understood: Tiresias \"", kTiresiasHeader, "\" or Philly \"",
          kPhillyHeader, "\""));
    }
  }
  std::vector<JobSpec> jobs;
  if (format == TraceFormat::kTiresias) {
    ASSIGN_OR_RETURN(jobs, ReadTiresiasRows(csv));
  } else {
    ASSIGN_OR_RETURN(jobs, ReadPhillyRows(csv));
  }
  if (jobs.empty()) return csv.FileError("no jobs after the header");
  return SortedBySubmitTime(std::move(jobs));
}

absl::Status ValidateArrivalScale(double factor) {
  if (!std::isfinite(factor) || factor <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "arrival scale: expected a positive number, got ", factor));
  }
  return absl::OkStatus();
}

absl::Status ScaleArrivals(std::vector<JobSpec>* jobs, double factor) {
  RETURN_IF_ERROR(ValidateArrivalScale(factor));
  if (jobs->empty()) return absl::OkStatus();
  Seconds first = jobs->front().submit_time;
  for (const JobSpec& job : *jobs) first = std::min(first, job.submit_time);
  for (JobSpec& job : *jobs) {
    job.submit_time = first + (job.submit_time - first) * factor;
  }
  return absl::OkStatus();
}

}  // namespace tiresias
