// `tiresias history`: the jobs that ended in a window (cli/history.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/history.h"
#include "cli/time_arg.h"

namespace tiresias {
namespace {

using cli::Fail;

struct HistoryFlags {
  std::string master;
  std::string since;  // default: a day ago
  std::string until;  // default: now
  std::string states;
  std::string user;
  std::string name;
  std::string vc;
  std::string format = cli::kDefaultHistoryFields;
  bool csv = false;
  bool json = false;
};

int History(const HistoryFlags& f) {
  if (f.csv && f.json) return Fail("history: give --csv or --json, not both");
  const double now = cli::NowUnixSeconds();
  double since = now - 86400, until = now + 1;
  for (absl::Status s : {cli::ParseTimeArgInto("--since", f.since, &since),
                         cli::ParseTimeArgInto("--until", f.until, &until)}) {
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  std::vector<v1::JobState> states;
  for (absl::string_view word : absl::StrSplit(f.states, ',', absl::SkipEmpty())) {
    v1::JobState state;
    if (!cli::ParseJobStateName(word, &state) || !cli::IsFinal(state)) {
      return Fail(absl::StrCat("--state ", word,
                               ": expected finished, failed, cancelled or "
                               "timeout (the states a job ends in)"));
    }
    states.push_back(state);
  }
  absl::StatusOr<std::vector<std::string>> fields =
      cli::ParseHistoryFields(f.format);
  if (!fields.ok()) return Fail(std::string(fields.status().message()));

  cli::MasterClient client(f.master);
  v1::ListJobsRequest req;
  req.set_page_size(1000);
  req.set_user(f.user);
  req.set_name(f.name);
  req.set_vc(f.vc);
  // The master filters the window and one state; several states are
  // filtered here, and the window again (a master before ended_since and
  // ended_before ignores them and lists every job).
  if (states.size() == 1) req.set_state(states[0]);
  req.set_ended_since(since);
  req.set_ended_before(until);
  std::vector<v1::Job> jobs;
  absl::Status listed =
      cli::ForEachListedJob(client, req, "history", [&](v1::Job& job) {
        // The VC again too: a master before ListJobsRequest.vc lists all.
        if (cli::InHistory(job, since, until, states) &&
            (f.vc.empty() || job.spec().vc() == f.vc)) {
          jobs.push_back(std::move(job));
        }
      });
  if (!listed.ok()) return Fail(std::string(listed.message()));
  const cli::HistoryFormat format = f.json  ? cli::HistoryFormat::kJson
                                    : f.csv ? cli::HistoryFormat::kCsv
                                            : cli::HistoryFormat::kTable;
  std::fputs(cli::FormatHistory(jobs, *fields, format).c_str(), stdout);
  return 0;
}

}  // namespace

void AddHistoryCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<HistoryFlags>();
  CLI::App* cmd = app.add_subcommand(
      "history",
      "Jobs that ended in a time window, like sacct: by default those that "
      "ended in the last 24 hours, in id order, with the fields of --format, "
      "as a table, --csv or --json. WAIT is the time between submission and "
      "end not spent running; RUN the time run over every attempt.");
  cli::AddMasterFlag(cmd, &flags->master);
  cmd->add_option(
      "--since", flags->since,
      "Jobs that ended at or after TIME: Unix seconds or a local "
      "YYYY-MM-DD[THH:MM:SS] or a time ago, 7d (default: 24 hours ago)");
  cmd->add_option("--until", flags->until,
                  "... and before TIME (default: now)");
  cmd->add_option("--state", flags->states,
                  "Only these final states, comma-separated: finished, "
                  "failed, cancelled, timeout");
  cmd->add_option("--user", flags->user, "Only this user's jobs");
  cmd->add_option("--name", flags->name, "Only jobs with exactly this name");
  cmd->add_option("--vc,--account,-A", flags->vc,
                  "Only the jobs of this virtual cluster");
  cmd->add_option("--format", flags->format,
                  absl::StrCat("Fields, comma-separated, of: ",
                               absl::StrJoin(cli::HistoryFieldNames(), ",")))
      ->capture_default_str();
  cmd->add_flag("--csv", flags->csv,
                "CSV with a header line (RFC 4180 quoting)");
  cmd->add_flag("--json", flags->json,
                "{\"jobs\": [{field: value}]}: times as Unix seconds, "
                "durations in seconds");
  cmd->callback([flags, exit_code] { *exit_code = History(*flags); });
}

}  // namespace tiresias
