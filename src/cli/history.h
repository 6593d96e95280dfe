// `tiresias history`, like Slurm's sacct: the jobs that ended in a time
// window, with the fields asked for, as a table, CSV or JSON. Pure (protos
// in, text out), so that the formats are tested without a master.
#ifndef TIRESIAS_CLI_HISTORY_H_
#define TIRESIAS_CLI_HISTORY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/tiresias.pb.h"

namespace tiresias::cli {

// The fields `history --format` and `jobs --format` take, in the order
// `--help` lists them.
const std::vector<std::string>& HistoryFieldNames();
// What `--format` is without one.
inline constexpr char kDefaultHistoryFields[] =
    "id,name,user,state,exit,gpus,submit,end,wait,run,preemptions";

// "id,state,exit" -> the field names, checked; InvalidArgument naming the
// unknown field and listing the known ones.
absl::StatusOr<std::vector<std::string>> ParseHistoryFields(
    const std::string& format);

// Whether `job` belongs in the history of [since, until): it ended (a final
// state with an end time) in the window, and its state is one of `states`
// (JOB_STATE_* values; empty: any final state).
bool InHistory(const v1::Job& job, double since, double until,
               const std::vector<v1::JobState>& states);

enum class HistoryFormat { kTable, kCsv, kJson };

// The jobs with the fields: a table (a header, columns padded, text as
// cli::Printable shows it), CSV (a header line, RFC 4180 quoting: a field
// with a comma, quote or line break is quoted, quotes doubled), or JSON
// ({"jobs": [{key: value}]}: each field under its key in the job's JSON,
// api::JobJson and docs/json.md: id, name, user, state, exit_code, gpus,
// queue, submit_time, first_start_time, end_time, wait_s,
// total_executed_s, attained_gpu_s, preemptions, restarts, attempt, nodes,
// workdir; with the same values). Times in the table and CSV are local
// "YYYY-MM-DD HH:MM:SS", durations H:MM:SS; WAIT is the time between
// submission and end not spent running (api::JobWaitSeconds), RUN the
// executed time over every attempt.
//
// `tiresias jobs --format` lists jobs that may not have ended with the same
// fields: `now` is then the instant an unfinished job's wait runs to
// (without it, a job's wait runs to its end, or is 0 if it has none).
std::string FormatHistory(const std::vector<v1::Job>& jobs,
                          const std::vector<std::string>& fields,
                          HistoryFormat format,
                          std::optional<double> now = std::nullopt);

// Rows of cells (the first the header, every row as long) as a table,
// columns padded two spaces apart (a row's last cell is not padded), or
// as CSV (RFC 4180 quoting). Cells are printed as given: a caller
// passes user text through Printable for a table.
std::string FormatRows(const std::vector<std::vector<std::string>>& rows,
                       bool csv);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_HISTORY_H_
