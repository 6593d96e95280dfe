// Gavel's traces (github.com/stanford-futuredata/gavel, scheduler/traces/):
// one job a line, tab-separated, no header. Three layouts have been
// written over Gavel's history, told apart by their field count:
//   10 (2020-, scheduler/utils.py parse_trace today): job_type, command,
//      working_directory, num_steps_arg, needs_data_dir, total_steps,
//      scale_factor, priority_weight, SLO, arrival_time
//    9 (2020): the same without working_directory
//    7 (2019, the Philly-derived traces/msr/): job_type, command,
//      num_steps_arg, needs_data_dir, total_steps, arrival_time,
//      scale_factor; a scale_factor of 0 marks a job Gavel skipped, and so
//      do we (counted in the notes).
// Only job_type, total_steps, scale_factor and arrival_time are read.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/status_macros.h"
#include "trace/formats.h"
#include "trace/gavel_throughputs.h"

namespace tiresias::trace_internal {
namespace {

struct Layout {
  size_t fields;
  std::vector<std::string_view> names;
  bool zero_scale_skips;  // the 2019 layout: scale_factor 0 = skipped job
};

const std::vector<Layout>& Layouts() {
  static const auto* const kLayouts = new std::vector<Layout>{
      {10,
       {"job_type", "command", "working_directory", "num_steps_arg",
        "needs_data_dir", "total_steps", "scale_factor", "priority_weight",
        "SLO", "arrival_time"},
       false},
      {9,
       {"job_type", "command", "num_steps_arg", "needs_data_dir",
        "total_steps", "scale_factor", "priority_weight", "SLO",
        "arrival_time"},
       false},
      {7,
       {"job_type", "command", "num_steps_arg", "needs_data_dir",
        "total_steps", "arrival_time", "scale_factor"},
       true},
  };
  return *kLayouts;
}

const Layout* FindLayout(size_t fields) {
  for (const Layout& layout : Layouts()) {
    if (layout.fields == fields) return &layout;
  }
  return nullptr;
}

int Column(const Layout& layout, std::string_view name) {
  for (size_t i = 0; i < layout.names.size(); ++i) {
    if (layout.names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// Steps per second of `job_type` at `scale_factor` GPUs. `extrapolated` is
// set when the table lacks that scale factor and the largest smaller one is
// scaled linearly. Nullopt for a job type not in the table.
class Throughputs {
 public:
  Throughputs() {
    for (const GavelThroughput& row : GavelV100Throughputs()) {
      by_type_[row.job_type][row.scale_factor] = row.steps_per_second;
    }
  }

  std::optional<double> Find(std::string_view job_type, int scale_factor,
                             bool* extrapolated) const {
    *extrapolated = false;
    auto type = by_type_.find(job_type);
    if (type == by_type_.end()) return std::nullopt;
    const std::map<int, double>& by_scale = type->second;
    auto exact = by_scale.find(scale_factor);
    if (exact != by_scale.end()) return exact->second;
    auto above = by_scale.upper_bound(scale_factor);
    if (above == by_scale.begin()) return std::nullopt;  // none smaller
    auto below = std::prev(above);
    *extrapolated = true;
    return below->second * scale_factor / below->first;
  }

 private:
  std::map<std::string_view, std::map<int, double>, std::less<>> by_type_;
};

// "ResNet-50 (batch size 64)" -> "resnet50": the name before " (",
// lowercased, without '-', as the simulator's model table spells models.
std::string ModelName(std::string_view job_type) {
  std::string_view name = job_type.substr(0, job_type.find(" ("));
  return absl::AsciiStrToLower(
      absl::StrReplaceAll(ToAbsl(name), {{"-", ""}}));
}

}  // namespace

bool LooksLikeGavel(const std::vector<std::string_view>& first_line) {
  return FindLayout(first_line.size()) != nullptr;
}

absl::StatusOr<std::vector<JobSpec>> ReadGavelTrace(
    const std::string& path, std::string_view text,
    std::vector<std::string>* notes) {
  CsvReader csv(path, text, '\t');
  const std::vector<std::string_view> first = csv.PeekFirstLine();
  if (first.empty()) return csv.FileError("empty file, expected Gavel jobs");
  const Layout* layout = FindLayout(first.size());
  if (layout == nullptr) {
    RETURN_IF_ERROR(csv.ReadHeader());  // to name the line
    return csv.LineError(absl::StrCat(
        "expected a Gavel trace line of 10, 9 or 7 tab-separated fields, "
        "got ", first.size()));
  }
  csv.SetColumns(layout->names);
  const int type_col = Column(*layout, "job_type");
  const int steps_col = Column(*layout, "total_steps");
  const int scale_col = Column(*layout, "scale_factor");
  const int arrival_col = Column(*layout, "arrival_time");

  const Throughputs throughputs;
  std::vector<JobSpec> jobs;
  std::vector<double> arrivals;
  double earliest = std::numeric_limits<double>::infinity();
  int64_t zero_scale = 0, extrapolated_count = 0;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    const JobId id = csv.rows_read() - 1;
    int scale_factor;
    if (!ParseInt(csv.field(scale_col), &scale_factor) || scale_factor < 0 ||
        (scale_factor == 0 && !layout->zero_scale_skips)) {
      return csv.ColumnError(scale_col, "a positive integer number of GPUs");
    }
    ASSIGN_OR_RETURN(const double arrival,
                     csv.NonNegativeDouble(arrival_col,
                                           "a non-negative number of seconds"));
    if (scale_factor == 0) {
      ++zero_scale;
      continue;
    }
    int64_t steps;
    if (!ParseInt64(csv.field(steps_col), &steps) || steps <= 0) {
      return csv.ColumnError(steps_col, "a positive integer number of steps");
    }
    bool extrapolated;
    const std::optional<double> steps_per_second =
        throughputs.Find(csv.field(type_col), scale_factor, &extrapolated);
    if (!steps_per_second.has_value()) {
      return csv.ColumnError(
          type_col, "a job type of Gavel's throughput table, such as "
                    "\"ResNet-50 (batch size 64)\"");
    }
    extrapolated_count += extrapolated;
    JobSpec job;
    job.id = id;
    job.num_gpus = scale_factor;
    job.duration = Seconds(static_cast<double>(steps) / *steps_per_second);
    job.model = ModelName(csv.field(type_col));
    earliest = std::min(earliest, arrival);
    arrivals.push_back(arrival);
    jobs.push_back(std::move(job));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].submit_time = Seconds(arrivals[i] - earliest);
  }
  NoteSkipped("Gavel", {{"jobs with scale_factor 0", zero_scale}}, notes);
  if (extrapolated_count > 0) {
    notes->push_back(absl::StrCat(
        "Gavel: ", extrapolated_count,
        " jobs at a scale factor Gavel did not measure: throughput "
        "extrapolated linearly from the largest smaller one"));
  }
  if (jobs.empty() && zero_scale > 0) {
    return csv.FileError("no jobs kept: every line has scale_factor 0");
  }
  return jobs;
}

}  // namespace tiresias::trace_internal
