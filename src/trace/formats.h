// Internal to src/trace: one reader per trace format, which ReadTrace
// (trace_reader.cc) picks. Each returns the jobs in file order, unsorted, or
// the first bad line's InvalidArgument (never a partial list). Rows a format
// leaves out on purpose (failed jobs, jobs without GPUs) are counted in
// `notes`, one human-readable line per reason. The formats' rules are in
// trace_reader.h.
#ifndef TIRESIAS_TRACE_FORMATS_H_
#define TIRESIAS_TRACE_FORMATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/job.h"
#include "trace/csv.h"

namespace tiresias::trace_internal {

// `csv` has read its header.
absl::StatusOr<std::vector<JobSpec>> ReadTiresiasRows(CsvReader& csv);
absl::StatusOr<std::vector<JobSpec>> ReadPhillyRows(CsvReader& csv);
absl::StatusOr<std::vector<JobSpec>> ReadHeliosRows(
    CsvReader& csv, std::vector<std::string>* notes);

// True if `first_line` (split on tabs) has the shape of a Gavel trace line.
bool LooksLikeGavel(const std::vector<std::string_view>& first_line);
// `text` is the whole Gavel trace at `path` (tab-separated, no header).
absl::StatusOr<std::vector<JobSpec>> ReadGavelTrace(
    const std::string& path, std::string_view text,
    std::vector<std::string>* notes);

// PAI 2020 ("cluster-trace-gpu-v2020"): a job table and a task table.
enum class PaiTable { kNone, kJob, kTask };
// Which PAI table `first_line` (split on commas) is a row or header of.
PaiTable LooksLikePai(const std::vector<std::string_view>& first_line);
// `path` is a folder holding pai_job_table.csv and pai_task_table.csv, or a
// job table whose task table lies beside it (see trace_reader.h).
absl::StatusOr<std::vector<JobSpec>> ReadPaiTrace(
    const std::string& path, std::vector<std::string>* notes);

// The job id in column `col` of the current row, refused (naming the line
// it was first seen on) if an earlier row of `seen` had it.
absl::StatusOr<JobId> UniqueJobId(CsvReader& csv, int col,
                                  absl::flat_hash_map<JobId, int>* seen);

// Adds "skipped N <reason>" lines to `notes` for each nonzero count, in the
// map's order, with the format's name: "Helios: skipped 3 jobs in state
// FAILED".
void NoteSkipped(std::string_view format,
                 const std::map<std::string, int64_t>& skipped,
                 std::vector<std::string>* notes);

}  // namespace tiresias::trace_internal

#endif  // TIRESIAS_TRACE_FORMATS_H_
