// `tiresias report usage`, like Slurm's sreport: the GPU and CPU time
// jobs used in a time window, rolled up by virtual cluster, by user, or
// by VC and then user. Pure (protos in, text out), so that the roll-up
// and its formats are tested without a master.
#ifndef TIRESIAS_CLI_USAGE_REPORT_H_
#define TIRESIAS_CLI_USAGE_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/tiresias.pb.h"

namespace tiresias::cli {

// What a report rolls up by: "vc", "user" or "vc,user".
struct UsageBy {
  bool vc = false;
  bool user = false;
};
// "vc", "user", "vc,user" (or "user,vc": the same, VC first); else
// InvalidArgument naming --by and what it takes.
absl::StatusOr<UsageBy> ParseUsageBy(const std::string& text);

struct UsageRow {
  std::string vc;    // "" when not by VC, or a job of no VC
  std::string user;  // "" when not by user, or the VC's total row
  int64_t jobs = 0;  // jobs that ran in the window
  double gpu_seconds = 0;
  double cpu_seconds = 0;
};

struct UsageReport {
  double since = 0, until = 0;
  std::vector<UsageRow> rows;  // in print order (see RollUpUsage)
  double total_gpu_seconds = 0;
  int64_t total_jobs = 0;
};

// The usage in [since, until) of `jobs` (any jobs: those that never ran,
// or ran only outside the window, count nothing), as of `now` (the end of
// an unfinished job's run). A job's GPU-seconds are its GPUs times its
// executed time over every attempt, and its CPU-seconds its tasks'; a job
// whose [first start, end or now] straddles an edge of the window counts
// in proportion to the part inside (exact for a job that ran without a
// stop; the master keeps no per-interval usage). By VC and user: each
// VC's total row (user "") followed by its users' rows; groups and rows
// by GPU-seconds, largest first, then by name.
UsageReport RollUpUsage(const std::vector<v1::Job>& jobs, UsageBy by,
                        double since, double until, double now);

enum class UsageFormat { kTable, kCsv, kJson };
// A table (GPU and CPU hours, each row's share of the window's GPU time),
// CSV with a header line, or JSON (docs/json.md: {"since_time",
// "until_time", "total_gpu_s", "total_jobs", "rows": [{"vc", "user",
// "jobs", "gpu_s", "cpu_s", "share"}]}, "vc" and "user" only where the
// report is by them, null for a job of no VC and a VC's total row).
std::string FormatUsage(const UsageReport& report, UsageBy by,
                        UsageFormat format);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_USAGE_REPORT_H_
