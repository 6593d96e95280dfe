// `tiresias report usage`: GPU and CPU time used in a window, by virtual
// cluster and user, like Slurm's sreport (cli/usage_report.h).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/time_arg.h"
#include "cli/usage_report.h"

namespace tiresias {
namespace {

using cli::Fail;

struct UsageFlags {
  std::string master;
  std::string since;  // default: 30 days ago
  std::string until;  // default: now
  std::string by = "vc,user";
  bool csv = false;
  bool json = false;
};

int Usage(const UsageFlags& f) {
  if (f.csv && f.json)
    return Fail("report usage: give --csv or --json, not both");
  absl::StatusOr<cli::UsageBy> by = cli::ParseUsageBy(f.by);
  if (!by.ok()) return Fail(std::string(by.status().message()));
  const double now = cli::NowUnixSeconds();
  double since = now - 30 * 86400, until = now;
  for (absl::Status s : {cli::ParseTimeArgInto("--since", f.since, &since),
                         cli::ParseTimeArgInto("--until", f.until, &until)}) {
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  if (until <= since) {
    return Fail("report usage: --until must be after --since");
  }
  // Every job that may have run in the window: those not ended (in each
  // state a job may hold or have held GPUs in), then those that ended in
  // it or after, so that a job ending between two listings is in the
  // second. The master filters each by SQL, page by page.
  cli::MasterClient client(f.master);
  std::vector<v1::Job> jobs;
  std::set<int64_t> seen;
  std::vector<v1::ListJobsRequest> queries;
  for (v1::JobState state : {v1::JOB_STATE_STARTING, v1::JOB_STATE_RUNNING,
                             v1::JOB_STATE_PREEMPTED, v1::JOB_STATE_PENDING}) {
    queries.emplace_back().set_state(state);
  }
  queries.emplace_back().set_ended_since(since);
  for (v1::ListJobsRequest& req : queries) {
    req.set_page_size(1000);
    absl::Status listed =
        cli::ForEachListedJob(client, req, "report usage", [&](v1::Job& job) {
          if (seen.insert(job.id()).second) jobs.push_back(std::move(job));
        });
    if (!listed.ok()) return Fail(std::string(listed.message()));
  }
  const cli::UsageReport report =
      cli::RollUpUsage(jobs, *by, since, until, cli::NowUnixSeconds());
  const cli::UsageFormat format = f.json  ? cli::UsageFormat::kJson
                                  : f.csv ? cli::UsageFormat::kCsv
                                          : cli::UsageFormat::kTable;
  std::fputs(cli::FormatUsage(report, *by, format).c_str(), stdout);
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App& app, int* exit_code) {
  CLI::App* report = app.add_subcommand(
      "report", "Reports over the cluster's jobs, like Slurm's sreport");
  report->require_subcommand(1);
  auto flags = std::make_shared<UsageFlags>();
  CLI::App* cmd = report->add_subcommand(
      "usage",
      "GPU-hours and CPU-hours the jobs used in a window, by virtual "
      "cluster (team) and user, with each one's share of the GPU time. A "
      "job that ran across an edge of the window counts in proportion to "
      "the part of [first start, end] inside it.");
  cli::AddMasterFlag(cmd, &flags->master);
  cmd->add_option("--by", flags->by,
                  "vc, user, or vc,user (each VC's total, then its users)")
      ->capture_default_str();
  cmd->add_option("--since", flags->since,
                  "From TIME: Unix seconds, a local YYYY-MM-DD[THH:MM:SS] or a "
                  "time ago (30d) "
                  "(default: 30 days ago)");
  cmd->add_option("--until", flags->until, "... to TIME (default: now)");
  cmd->add_flag("--csv", flags->csv, "CSV with a header line");
  cmd->add_flag("--json", flags->json,
                "{\"since_time\", \"until_time\", \"total_gpu_s\", "
                "\"total_jobs\", \"rows\": [{\"vc\", \"user\", \"jobs\", "
                "\"gpu_s\", \"cpu_s\", \"share\"}]} (docs/json.md)");
  cmd->callback([flags, exit_code] { *exit_code = Usage(*flags); });
}

}  // namespace tiresias
