// `tiresias jobs` and `job`: the job half of the client API (`submit` is
// in submit_command.cc, `cancel`, `hold`, `release` and `requeue` in
// jobctl_commands.cc). `jobs` pages through ListJobs with the master's
// filters; `job` is one RPC.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/api_json.h"
#include "api/job_text.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/history.h"
#include "cli/printable.h"
#include "cli/shell_help.h"
#include "cli/time_arg.h"
#include "core/dependency.h"
#include "core/memory_size.h"
#include "core/warn_signal.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

// Jobs asked for per ListJobs call.
constexpr int kJobsPageSize = 1000;

// WAIT: time not running between submission and now (or the end,
// api::JobWaitSeconds); RUN: the job's whole executed time. NODES(REASON),
// as squeue's NODELIST(REASON): the nodes of a job that runs (or ran), the
// reason in parentheses for one that waits. Now is this machine's clock.
// User-controlled text goes through cli::Printable: a name cannot forge a
// row.
// ARRAY: a job of an array as squeue writes it, ARRAYID_INDEX ("12_3");
// "-" for a job outside one.
void PrintJobsHeader() {
  std::printf("%-6s %-9s %-16s %-10s %-10s %5s %4s %15s %10s %10s %s\n",
              "JOBID", "ARRAY", "NAME", "USER", "STATE", "QUEUE", "GPUS",
              "ATTAINED(GPU-s)", "WAIT", "RUN", "NODES(REASON)");
}

std::string ArrayText(const v1::Job& job) {
  if (job.array_id() <= 0) return "-";
  return absl::StrCat(job.array_id(), "_", job.array_index());
}

// The state as listed: a held job is "held" (it is pending or preempted).
std::string StateText(const v1::Job& job) {
  return job.held() ? "held" : cli::JobStateName(job.state());
}

void PrintJobRow(const v1::Job& job, double now) {
  const double run = job.total_executed_seconds();
  const double wait = api::JobWaitSeconds(job, now);
  std::string nodes =
      job.nodes().empty() ? "-"
                          : cli::Printable(absl::StrJoin(job.nodes(), ","));
  if (!job.pending_reason().empty()) {
    nodes = absl::StrCat("(", cli::Printable(job.pending_reason()), ")");
  }
  // A CPU-only job waits in the CPU-only queue, not in a GPU queue.
  const std::string queue =
      job.spec().gpus() == 0 ? "cpu" : absl::StrCat(job.queue());
  std::printf("%-6lld %-9s %-16s %-10s %-10s %5s %4d %15.0f %10s %10s %s\n",
              static_cast<long long>(job.id()), ArrayText(job).c_str(),
              cli::Printable(job.spec().name()).c_str(),
              cli::Printable(job.spec().user()).c_str(), StateText(job).c_str(),
              queue.c_str(), job.spec().gpus(), job.attained_gpu_seconds(),
              cli::FormatDuration(wait).c_str(),
              cli::FormatDuration(run).c_str(), nodes.c_str());
}

struct JobsFlags {
  std::string master;
  bool json = false;
  std::string state;  // comma-separated; empty: the active (or --all)
  bool all = false;   // every job, ended ones too
  std::string user;
  std::string name;
  std::string since;  // empty: any time
  int64_t array = 0;  // --array: only this array's jobs; 0: any
  std::string vc;     // --vc (--account): only this VC's jobs; "": any
  std::string format;  // --format: these fields (cli/history.h); "": the table
  bool csv = false;
};

// The request the filter flags describe, or a one-line error naming a flag.
absl::StatusOr<v1::ListJobsRequest> JobsRequest(const JobsFlags& f) {
  v1::ListJobsRequest req;
  // Fewer round trips than the default; the master still ends a page at
  // its byte budget.
  req.set_page_size(kJobsPageSize);
  if (!f.state.empty()) {
    if (f.all) {
      return absl::InvalidArgumentError(
          "--state and --all: give one (--all lists every state)");
    }
    for (absl::string_view word : absl::StrSplit(f.state, ',')) {
      v1::JobState state;
      if (!cli::ParseJobStateName(word, &state)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--state ", f.state, ": '", word,
            "': expected pending, starting, running, preempted, finished, "
            "failed, cancelled or timeout, comma-separated"));
      }
      req.add_states(state);
    }
  } else if (!f.all) {
    // Like squeue: the jobs not yet ended.
    for (v1::JobState state :
         {v1::JOB_STATE_PENDING, v1::JOB_STATE_STARTING, v1::JOB_STATE_RUNNING,
          v1::JOB_STATE_PREEMPTED}) {
      req.add_states(state);
    }
  }
  req.set_user(f.user);
  req.set_name(f.name);
  if (f.array < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--array ", f.array, ": expected an array's id (its first job's)"));
  }
  req.set_array_id(f.array);
  req.set_vc(f.vc);
  if (!f.since.empty()) {
    absl::StatusOr<double> since = cli::ParseTimeArg("--since", f.since);
    if (!since.ok()) return since.status();
    req.set_submitted_since(*since);
  }
  return req;
}

// Pages through every job the filters select: a table row per job as each
// page arrives, or one JSON document {"jobs": [...]} at the end
// (api::JobListJson, docs/json.md).
int ListJobs(const JobsFlags& f) {
  absl::StatusOr<v1::ListJobsRequest> req = JobsRequest(f);
  if (!req.ok()) return Fail(std::string(req.status().message()));
  if (f.csv && f.json) return Fail("jobs: give --csv or --json, not both");
  if (f.csv && f.format.empty()) {
    return Fail("jobs: --csv needs --format FIELDS (e.g. --format "
                "id,state,wait,reason)");
  }
  std::optional<std::vector<std::string>> fields;
  if (!f.format.empty()) {
    absl::StatusOr<std::vector<std::string>> parsed =
        cli::ParseHistoryFields(f.format);
    if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
    fields = *std::move(parsed);
  }
  MasterClient client(f.master);
  const double now = cli::NowUnixSeconds();
  std::vector<v1::Job> chosen;  // --format: every page's jobs
  v1::ListJobsResponse all;  // --json: every page's jobs
  bool first = true;
  while (true) {
    v1::ListJobsResponse page;
    grpc::Status status =
        client.stub().ListJobs(client.Context().get(), *req, &page);
    if (!status.ok()) {
      return Fail(cli::DescribeRpcError(status, f.master, "jobs"));
    }
    if (fields) {
      for (v1::Job& job : *page.mutable_jobs()) {
        chosen.push_back(std::move(job));
      }
    } else if (f.json) {
      for (v1::Job& job : *page.mutable_jobs()) {
        *all.add_jobs() = std::move(job);
      }
    } else {
      if (first) PrintJobsHeader();
      for (const v1::Job& job : page.jobs()) PrintJobRow(job, now);
      std::fflush(stdout);
    }
    first = false;
    if (page.next_page_token().empty()) break;
    req->set_page_token(page.next_page_token());
  }
  if (fields) {
    const cli::HistoryFormat format = f.json  ? cli::HistoryFormat::kJson
                                      : f.csv ? cli::HistoryFormat::kCsv
                                              : cli::HistoryFormat::kTable;
    std::fputs(cli::FormatHistory(chosen, *fields, format, now).c_str(),
               stdout);
  } else if (f.json) {
    std::printf("%s\n", api::Dump(api::JobListJson(all.jobs(), now)).c_str());
  }
  return 0;
}

void PrintJob(const v1::Job& job, double now, bool show_env) {
  auto line = [](const char* key, const std::string& value) {
    std::printf("%-16s %s\n", key, value.c_str());
  };
  using cli::Printable;
  std::vector<std::string> command;
  for (const std::string& arg : job.spec().command()) {
    command.push_back(Printable(arg));
  }
  line("Job:", absl::StrCat(job.id()));
  if (job.array_id() > 0) {
    line("Array:",
         absl::StrCat(ArrayText(job), " (array ", job.array_id(), ": ",
                      Printable(job.spec().array().indices()),
                      job.spec().array().max_running() > 0
                          ? absl::StrCat(", at most ",
                                         job.spec().array().max_running(),
                                         " running")
                          : "",
                      ")"));
  }
  line("Name:", Printable(job.spec().name()));
  line("User:", Printable(job.spec().user()));
  line("State:", job.held() ? cli::JobStateName(job.state()) +
                                   " (held: `tiresias release` to run it)"
                             : cli::JobStateName(job.state()));
  if (!job.pending_reason().empty()) {
    line("Reason:", Printable(job.pending_reason()));
  }
  line("Command:", absl::StrJoin(command, " "));
  line("GPUs:", job.spec().nodes() > 0
                    ? absl::StrCat(job.spec().gpus(), " (", job.spec().nodes(),
                                   job.spec().nodes() == 1 ? " node" : " nodes",
                                   " x ", job.spec().gpus_per_node(), ")")
                    : absl::StrCat(job.spec().gpus()));
  if (job.spec().gpus() == 0) {
    line("CPUs:", absl::StrCat(job.spec().cpus(),
                               " on one node's spare CPUs (a "
                               "CPU-only job), memory ",
                               job.spec().mem_mib() > 0
                                   ? MemoryText(job.spec().mem_mib())
                                   : std::string("their share")));
  }
  line("Processes:", job.spec().tasks_per_node() > 0
                         ? absl::StrCat(job.spec().tasks_per_node(),
                                        " per node (--tasks-per-node)")
                     : job.spec().gpus() == 0 ? std::string("one")
                                              : std::string("one per GPU"));
  if (const std::string nodes = NodeFilterText(job.spec()); !nodes.empty()) {
    line("Nodes:", nodes);
  }
  if (job.spec().exclusive()) {
    line("Exclusive:", "yes (its nodes run nothing else)");
  }
  if (job.spec().time_limit_seconds() > 0) {
    line("Time limit:", cli::FormatDuration(job.spec().time_limit_seconds()));
  }
  if (job.spec().begin_time() > 0) {
    line("Begin:", absl::StrCat(cli::FormatTime(job.spec().begin_time()),
                                " (--begin; not started before)"));
  }
  if (job.spec().signal() != 0) {
    line(
        "Signal:",
        absl::StrCat(FormatWarnSignal({.signal = job.spec().signal(),
                                       .seconds = job.spec().signal_seconds()}),
                     " (before the time limit)"));
  }
  if (!job.spec().vc().empty()) {
    line("VC:",
         absl::StrCat(cli::Printable(job.spec().vc()),
                      job.borrowing() ? " (borrowing beyond its quota)" : ""));
  }
  if (!job.spec().qos().empty()) line("QOS:", cli::Printable(job.spec().qos()));
  if (!job.spec().image().empty()) {
    line("Image:", absl::StrCat(cli::Printable(job.spec().image()),
                                " (a container of each task)"));
  }
  if (job.spec().io() != v1::IO_MODE_NONE) {
    line("I/O:", absl::StrCat(job.spec().io() == v1::IO_MODE_PTY
                                  ? "a terminal (run --pty)"
                                  : "pipes (run)",
                              "; `tiresias attach ", job.id(), "` joins it"));
  }
  if (job.spec().no_preempt()) line("Preemptible:", "no (--no-preempt)");
  if (job.spec().dependencies_size() > 0) {
    std::vector<JobDependency> deps;
    for (const v1::JobDependency& dep : job.spec().dependencies()) {
      if (!IsDependencyKind(dep.kind())) continue;  // a newer master's
      deps.push_back(
          {static_cast<DependencyKind>(dep.kind()), dep.job_id()});
    }
    line("Dependency:",
         absl::StrCat(FormatDependencies(deps),
                      job.waiting_on_dependencies() ? " (waiting)" : ""));
  }
  if (!job.spec().model().empty())
    line("Model:", Printable(job.spec().model()));
  line("Queue:", absl::StrCat(job.queue()));
  line("Attained:", absl::StrFormat("%.0f GPU-s", job.attained_gpu_seconds()));
  line("Executed:", cli::FormatDuration(job.total_executed_seconds()));
  if (job.cpu_seconds() > 0 || job.max_memory_bytes() > 0) {
    // From the tasks' cgroups: CPU time summed over them (Slurm's
    // TotalCPU), memory the largest peak of one (MaxRSS).
    line("Used:",
         absl::StrCat(cli::FormatDuration(job.cpu_seconds()),
                      " CPU time, memory peak ",
                      ByteSizeText(job.max_memory_bytes()), " (largest task)"));
  }
  line("Wait:", cli::FormatDuration(api::JobWaitSeconds(job, now)));
  line("Submitted:", cli::FormatTime(job.submit_time()));
  if (job.has_first_start_time()) {
    line("First start:", cli::FormatTime(job.first_start_time()));
  }
  if (job.has_end_time()) line("Ended:", cli::FormatTime(job.end_time()));
  if (job.has_exit_code()) line("Exit code:", absl::StrCat(job.exit_code()));
  line("Attempt:", absl::StrCat(job.attempt()));
  line("Preemptions:", absl::StrCat(job.preemptions()));
  line("Promotions:", absl::StrCat(job.promotions()));
  line("Nodes:",
       job.nodes().empty() ? "-" : Printable(absl::StrJoin(job.nodes(), ",")));
  if (!job.spec().checkpoint_dir().empty()) {
    line("Checkpoint dir:", Printable(job.spec().checkpoint_dir()));
  }
  if (!job.spec().workdir().empty()) {
    line("Workdir:", Printable(job.spec().workdir()));
  }
  if (!job.spec().notify().empty()) {
    line("Notify:", absl::StrCat(Printable(job.spec().notify()), " (",
                                 job.spec().notify_on().empty()
                                     ? std::string("end")
                                     : Printable(absl::StrJoin(
                                           job.spec().notify_on(), ",")),
                                 ")"));
  }
  if (!job.spec().output().empty()) {
    line("Output:", Printable(job.spec().output()));
  }
  if (!job.spec().error().empty()) {
    line("Error:", Printable(job.spec().error()));
  }
  if (show_env) {
    for (const v1::EnvVar& var : job.spec().env()) {
      line("Env:", Printable(absl::StrCat(var.key(), "=", var.value())));
    }
  } else if (job.spec().env_size() > 0) {
    // The exported environment is often 30-60 variables: one line, so that
    // the events are in sight.
    std::vector<std::string> names;
    for (const v1::EnvVar& var : job.spec().env()) {
      names.push_back(Printable(var.key()));
    }
    std::string shown = absl::StrJoin(names, " ");
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    line("Env:",
         absl::StrCat(names.size(), " variable", names.size() == 1 ? "" : "s",
                      " (", shown, "; `--env` shows them)"));
  }
  line("Profile:", FormatJobProfile(job));
  std::printf("\nEVENTS\n%-19s  %-10s %s\n", "TIME", "KIND", "DETAIL");
  for (const v1::JobEvent& e : job.events()) {
    std::printf("%-19s  %-10s %s\n", cli::FormatTime(e.time()).c_str(),
                Printable(e.kind()).c_str(), Printable(e.detail()).c_str());
  }
}

int ShowJob(const std::string& master, const std::string& ref, bool json,
            bool show_env) {
  MasterClient client(master);
  absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, ref);
  if (!id.ok()) return Fail(std::string(id.status().message()));
  v1::GetJobRequest req;
  req.set_job_id(*id);
  v1::GetJobResponse resp;
  grpc::Status status = client.stub().GetJob(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return Fail(
        cli::DescribeRpcError(status, master, absl::StrCat("job ", *id)));
  }
  const double now = cli::NowUnixSeconds();
  if (json) {
    std::printf("%s\n",
                api::Dump(api::JobJson(resp.job(), api::JobView::kDetail, now))
                    .c_str());
  } else {
    PrintJob(resp.job(), now, show_env);
  }
  return 0;
}

struct IdFlags {
  std::string master;
  std::string id;  // an id or ARRAYID_INDEX (cli/job_ref.h)
  bool json = false;
};

CLI::App* AddIdCommand(CLI::App& app, const char* name, const char* help,
                       std::shared_ptr<IdFlags> f) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("id", f->id, "Job id, or ARRAYID_INDEX (e.g. 12_3)")
      ->type_name(cli::kJobType)
      ->required();
  cmd->add_flag("--json", f->json, "Print the job as JSON");
  return cmd;
}

}  // namespace

void AddJobCommands(CLI::App& app, int* exit_code) {
  AddSubmitCommand(app, exit_code);  // submit_command.cc

  auto jobs = std::make_shared<JobsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "jobs",
      "List jobs, like squeue, in id order: those not yet ended (pending, "
      "starting, running, preempted) unless --all or --state says "
      "otherwise. STATE: pending, starting (GPUs assigned, tasks being "
      "started), running, preempted, finished, failed, cancelled, timeout "
      "(stopped at its --time limit); a held job shows as held (it is "
      "pending or preempted: `--state pending` lists it)");
  cli::AddMasterFlag(cmd, &jobs->master);
  cmd->add_flag("--json", jobs->json,
                "Print the list as one JSON document {\"jobs\": [...]}");
  cmd->add_option("--state", jobs->state,
                  "Only jobs in these states, comma-separated (e.g. "
                  "running,failed)");
  cmd->add_flag("--all", jobs->all,
                "Every job, those that ended too (`tiresias history` lists "
                "ended jobs by when they ended)");
  cmd->add_option("--user", jobs->user, "Only this user's jobs");
  cmd->add_option("--name", jobs->name, "Only jobs with exactly this name");
  cmd->add_option("--array", jobs->array,
                  "Only the jobs of this array (the id `submit --array` "
                  "printed: its first job's)");
  cmd->add_option("--vc,--account,-A", jobs->vc,
                  "Only the jobs of this virtual cluster (`tiresias vc "
                  "list`)");
  cmd->add_option("--since", jobs->since,
                  "Only jobs submitted at or after TIME: Unix seconds or a "
                  "local date YYYY-MM-DD[THH:MM:SS] or a time ago (2h, 7d)");
  cmd->add_option("--format", jobs->format,
                  absl::StrCat("Print these fields, comma-separated, as "
                               "`history --format` does (with --csv or "
                               "--json: only these), of: ",
                               absl::StrJoin(cli::HistoryFieldNames(), ",")));
  cmd->add_flag("--csv", jobs->csv,
                "With --format: CSV with a header line (RFC 4180 quoting)");
  cmd->callback([jobs, exit_code] { *exit_code = ListJobs(*jobs); });

  auto job = std::make_shared<IdFlags>();
  auto show_env = std::make_shared<bool>(false);
  CLI::App* job_cmd =
      AddIdCommand(app, "job", "Show one job and its event history", job);
  job_cmd->add_flag("--env", *show_env,
                    "List the job's environment variables, one per line "
                    "(otherwise counted on one line)");
  job_cmd->callback([job, show_env, exit_code] {
    *exit_code = ShowJob(job->master, job->id, job->json, *show_env);
  });
}

}  // namespace tiresias
