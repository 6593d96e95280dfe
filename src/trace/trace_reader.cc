#include "trace/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/csv.h"
#include "trace/formats.h"

namespace tiresias {
namespace {

using trace_internal::CsvReader;

constexpr char kTiresiasHeader[] =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval";
constexpr char kPhillyHeader[] = "timestamp,duration,num_gpus,gpu_time,cluster";
constexpr char kHeliosHeader[] =
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
    "end_time,duration,queue";

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

// An empty result is an error; otherwise the jobs sorted.
absl::StatusOr<std::vector<JobSpec>> Finish(
    const std::string& path, absl::StatusOr<std::vector<JobSpec>> jobs) {
  if (!jobs.ok()) return jobs.status();
  if (jobs->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no jobs after the header"));
  }
  return SortedBySubmitTime(*std::move(jobs));
}

// Tells the format from the first non-blank line: a header naming the
// columns, or (Gavel, PAI: no header) the shape of a data line.
absl::StatusOr<TraceFormat> Detect(const std::string& path,
                                   std::string_view text) {
  CsvReader csv(path, text);
  RETURN_IF_ERROR(csv.ReadHeader());
  if (trace_internal::LooksLikeGavel(
          CsvReader(path, text, '\t').PeekFirstLine())) {
    return TraceFormat::kGavel;
  }
  // Helios's header has job_id too: check it before Tiresias's.
  if (csv.FindColumn("gpu_num") >= 0 && csv.FindColumn("state") >= 0) {
    return TraceFormat::kHelios;
  }
  if (csv.FindColumn("job_id") >= 0) return TraceFormat::kTiresias;
  if (csv.FindColumn("timestamp") >= 0) return TraceFormat::kPhilly;
  switch (trace_internal::LooksLikePai(csv.header())) {
    case trace_internal::PaiTable::kJob:
      return TraceFormat::kPai;
    case trace_internal::PaiTable::kTask:
      return csv.LineError(
          "this looks like a PAI task table (pai_task_table.csv); give the "
          "job table (pai_job_table.csv) or the folder holding both");
    case trace_internal::PaiTable::kNone:
      break;
  }
  return csv.LineError(absl::StrCat(
      "unknown trace header ", trace_internal::Quote(csv.header_text()),
      "; understood: Tiresias \"", kTiresiasHeader, "\", Philly \"",
      kPhillyHeader, "\", Helios \"", kHeliosHeader,
      "\", a PAI 2020 pai_job_table.csv or a tab-separated Gavel trace"));
}

}  // namespace

absl::StatusOr<TraceFormat> ParseTraceFormat(std::string_view name) {
  static constexpr std::pair<std::string_view, TraceFormat> kNames[] = {
      {"auto", TraceFormat::kAuto},       {"tiresias", TraceFormat::kTiresias},
      {"philly", TraceFormat::kPhilly},   {"gavel", TraceFormat::kGavel},
      {"helios", TraceFormat::kHelios},   {"pai", TraceFormat::kPai}};
  for (const auto& [known, format] : kNames) {
    if (name == known) return format;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown trace format ", trace_internal::Quote(name),
      "; expected auto, tiresias, philly, gavel, helios or pai"));
}

absl::StatusOr<std::vector<JobSpec>> ReadTrace(const std::string& path,
                                               TraceFormat format,
                                               std::vector<std::string>* notes) {
  std::vector<std::string> ignored_notes;
  if (notes == nullptr) notes = &ignored_notes;
  std::error_code error;
  if ((format == TraceFormat::kAuto || format == TraceFormat::kPai) &&
      std::filesystem::is_directory(path, error)) {
    return Finish(path, trace_internal::ReadPaiTrace(path, notes));
  }
  ASSIGN_OR_RETURN(const std::string text, trace_internal::ReadWholeFile(path));
  if (format == TraceFormat::kAuto) {
    ASSIGN_OR_RETURN(format, Detect(path, text));
  }
  switch (format) {
    case TraceFormat::kGavel:
      return Finish(path, trace_internal::ReadGavelTrace(path, text, notes));
    case TraceFormat::kPai:
      return Finish(path, trace_internal::ReadPaiTrace(path, notes));
    default:
      break;
  }
  CsvReader csv(path, text);
  RETURN_IF_ERROR(csv.ReadHeader());
  switch (format) {
    case TraceFormat::kTiresias:
      return Finish(path, trace_internal::ReadTiresiasRows(csv));
    case TraceFormat::kPhilly:
      return Finish(path, trace_internal::ReadPhillyRows(csv));
    default:
      return Finish(path, trace_internal::ReadHeliosRows(csv, notes));
  }
}

namespace trace_internal {

void NoteSkipped(std::string_view format,
                 const std::map<std::string, int64_t>& skipped,
                 std::vector<std::string>* notes) {
  for (const auto& [reason, count] : skipped) {
    if (count > 0) {
      notes->push_back(absl::StrCat(ToAbsl(format), ": skipped ", count, " ",
                                    reason));
    }
  }
}

}  // namespace trace_internal

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
