// Alibaba PAI 2020 traces (github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2020): pai_job_table.csv and pai_task_table.csv, which
// are released without a header (the column names are in the .header files
// beside them). Rules in trace_reader.h; the choices:
//  - only status "Terminated" (PAI's "successful") jobs are kept: a Failed
//    job's length is when it failed, Running and Waiting ones never ended;
//  - a job's GPUs are its tasks' plan_gpu (percent of a GPU) x inst_num,
//    summed and rounded up to whole GPUs, as the simulator places whole GPUs;
//  - its duration is the span of its tasks (earliest start_time to latest
//    end_time), its submit time the job's start_time (PAI's submission).
// Tasks whose start or end time is empty do not count toward the span.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/formats.h"

namespace tiresias::trace_internal {
namespace {

const std::vector<std::string_view>& JobColumns() {
  static const auto* const kColumns = new std::vector<std::string_view>{
      "job_name", "inst_id", "user", "status", "start_time", "end_time"};
  return *kColumns;
}

const std::vector<std::string_view>& TaskColumns() {
  static const auto* const kColumns = new std::vector<std::string_view>{
      "job_name", "task_name", "inst_num", "status",   "start_time",
      "end_time", "plan_cpu",  "plan_mem", "plan_gpu", "gpu_type"};
  return *kColumns;
}

constexpr int kName = 0;            // both tables
constexpr int kJobStatus = 3;       // job table
constexpr int kJobSubmit = 4;       // job table: start_time, the submission
constexpr int kTaskInstances = 2;   // task table
constexpr int kTaskStart = 4;       // task table
constexpr int kTaskEnd = 5;         // task table
constexpr int kTaskGpuPercent = 8;  // task table
constexpr std::string_view kSeconds = "a non-negative number of seconds";

bool NumberOrEmpty(std::string_view text) {
  double ignored;
  return text.empty() || ParseDouble(text, &ignored);
}

// Reads the header if the file has one (a copy of the .header line), else
// names the columns.
absl::Status StartTable(CsvReader& csv,
                        const std::vector<std::string_view>& columns) {
  if (csv.PeekFirstLine() == columns) return csv.ReadHeader();
  csv.SetColumns(columns);
  return absl::OkStatus();
}

// The job and task tables that `path` names (see trace_reader.h).
absl::StatusOr<std::pair<std::string, std::string>> TablePaths(
    const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    const std::filesystem::path dir(path);
    return std::make_pair((dir / "pai_job_table.csv").string(),
                          (dir / "pai_task_table.csv").string());
  }
  const std::filesystem::path job_path(path);
  std::string name = job_path.filename().string();
  const size_t at = name.rfind("job");
  if (at == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": cannot find the PAI task table: give the folder holding "
              "pai_job_table.csv and pai_task_table.csv, or a job table whose "
              "name contains \"job\" (its task table: \"job\" -> \"task\")"));
  }
  name.replace(at, 3, "task");
  return std::make_pair(path, (job_path.parent_path() / name).string());
}

struct PaiJob {
  JobId id;
  double submit;
  int64_t tasks = 0;
  double gpu_percent = 0;
  double first_start = std::numeric_limits<double>::infinity();
  double last_end = -std::numeric_limits<double>::infinity();
};

}  // namespace

PaiTable LooksLikePai(const std::vector<std::string_view>& first_line) {
  if (first_line == JobColumns()) return PaiTable::kJob;
  if (first_line == TaskColumns()) return PaiTable::kTask;
  if (first_line.size() == JobColumns().size() &&
      !first_line[kJobStatus].empty() &&
      NumberOrEmpty(first_line[kJobSubmit]) &&
      NumberOrEmpty(first_line[kJobSubmit + 1])) {
    return PaiTable::kJob;
  }
  double instances;
  if (first_line.size() == TaskColumns().size() &&
      ParseDouble(first_line[kTaskInstances], &instances) &&
      NumberOrEmpty(first_line[kTaskStart])) {
    return PaiTable::kTask;
  }
  return PaiTable::kNone;
}

absl::StatusOr<std::vector<JobSpec>> ReadPaiTrace(
    const std::string& path, std::vector<std::string>* notes) {
  ASSIGN_OR_RETURN(const auto paths, TablePaths(path));
  const auto& [job_path, task_path] = paths;
  ASSIGN_OR_RETURN(const std::string job_text, ReadWholeFile(job_path));
  ASSIGN_OR_RETURN(const std::string task_text, ReadWholeFile(task_path));

  // The job table: kept jobs, and the names of all, to tell skipped jobs'
  // tasks from tasks of no job.
  std::vector<PaiJob> kept;
  absl::flat_hash_map<std::string_view, int64_t> index_of;  // -1: skipped
  absl::flat_hash_map<std::string_view, int> line_of;
  std::map<std::string, int64_t> skipped;
  CsvReader jobs_csv(job_path, job_text);
  RETURN_IF_ERROR(StartTable(jobs_csv, JobColumns()));
  while (true) {
    ASSIGN_OR_RETURN(const bool more, jobs_csv.Next());
    if (!more) break;
    ASSIGN_OR_RETURN(const std::string_view name, jobs_csv.NonEmpty(kName));
    auto [it, inserted] = line_of.try_emplace(name, jobs_csv.line_number());
    if (!inserted) {
      return jobs_csv.LineError(absl::StrCat(
          "column 'job_name': duplicate job ", Quote(name), ", first on line ",
          it->second));
    }
    ASSIGN_OR_RETURN(const std::string_view status,
                     jobs_csv.NonEmpty(kJobStatus));
    if (status != "Terminated") {
      ++skipped[absl::StrCat("jobs with status ", ToAbsl(status))];
      index_of[name] = -1;
      continue;
    }
    ASSIGN_OR_RETURN(const double submit,
                     jobs_csv.NonNegativeDouble(kJobSubmit, kSeconds));
    index_of[name] = static_cast<int64_t>(kept.size());
    kept.push_back(PaiJob{jobs_csv.rows_read() - 1, submit});
  }
  if (jobs_csv.rows_read() == 0) return jobs_csv.FileError("no jobs");

  CsvReader tasks_csv(task_path, task_text);
  RETURN_IF_ERROR(StartTable(tasks_csv, TaskColumns()));
  int64_t orphan_tasks = 0;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, tasks_csv.Next());
    if (!more) break;
    ASSIGN_OR_RETURN(const std::string_view name, tasks_csv.NonEmpty(kName));
    auto it = index_of.find(name);
    if (it == index_of.end()) {
      ++orphan_tasks;
      continue;
    }
    if (it->second < 0) continue;  // a skipped job's task
    PaiJob& job = kept[it->second];
    ASSIGN_OR_RETURN(
        const double instances,
        tasks_csv.NonNegativeDouble(kTaskInstances, "a non-negative number"));
    double percent = 0;
    if (!tasks_csv.field(kTaskGpuPercent).empty()) {
      ASSIGN_OR_RETURN(percent, tasks_csv.NonNegativeDouble(
                                    kTaskGpuPercent,
                                    "a non-negative percentage of a GPU"));
    }
    ++job.tasks;
    job.gpu_percent += percent * instances;
    if (tasks_csv.field(kTaskStart).empty() ||
        tasks_csv.field(kTaskEnd).empty()) {
      continue;
    }
    ASSIGN_OR_RETURN(const double start,
                     tasks_csv.NonNegativeDouble(kTaskStart, kSeconds));
    double end;
    if (!ParseDouble(tasks_csv.field(kTaskEnd), &end) || end < start) {
      return tasks_csv.ColumnError(kTaskEnd,
                                   "a number of seconds no less than "
                                   "start_time");
    }
    job.first_start = std::min(job.first_start, start);
    job.last_end = std::max(job.last_end, end);
  }

  std::vector<JobSpec> jobs;
  double earliest = std::numeric_limits<double>::infinity();
  for (const PaiJob& job : kept) {
    if (job.tasks == 0) {
      ++skipped["Terminated jobs without tasks in the task table"];
      continue;
    }
    // Rounding noise (3 x 33.33%) must not cost a whole GPU more.
    const double gpus = std::ceil(job.gpu_percent / 100 - 1e-6);
    if (gpus <= 0) {
      ++skipped["Terminated jobs without GPUs (plan_gpu 0)"];
      continue;
    }
    if (job.last_end < job.first_start) {
      ++skipped["Terminated jobs whose tasks have no start and end time"];
      continue;
    }
    JobSpec spec;
    spec.id = job.id;
    spec.num_gpus = static_cast<int>(
        std::min(gpus, double{std::numeric_limits<int>::max()}));
    spec.submit_time = Seconds(job.submit);
    spec.duration = Seconds(job.last_end - job.first_start);
    earliest = std::min(earliest, job.submit);
    jobs.push_back(std::move(spec));
  }
  for (JobSpec& job : jobs) job.submit_time -= Seconds(earliest);
  NoteSkipped("PAI", skipped, notes);
  if (orphan_tasks > 0) {
    notes->push_back(absl::StrCat("PAI: ignored ", orphan_tasks,
                                  " tasks of jobs not in the job table"));
  }
  if (jobs.empty()) {
    return jobs_csv.FileError(
        "no jobs kept: no Terminated job with GPUs and timed tasks");
  }
  return jobs;
}

}  // namespace tiresias::trace_internal
