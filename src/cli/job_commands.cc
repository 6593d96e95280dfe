// `tiresias submit`, `jobs`, `job` and `cancel`: the job half of the client
// API, one RPC each.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct SubmitFlags {
  std::string master;
  int gpus = 0;
  std::string name;
  std::string checkpoint_dir;
  std::vector<std::string> env;
  std::vector<std::string> command;
};

std::string LoginName() {
  if (const char* user = std::getenv("USER"); user && user[0]) return user;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_name) {
    return pw->pw_name;
  }
  return "";
}

int Submit(const SubmitFlags& f) {
  v1::SubmitJobRequest req;
  v1::JobSpec& spec = *req.mutable_spec();
  spec.set_gpus(f.gpus);
  spec.set_user(LoginName());
  spec.set_checkpoint_dir(f.checkpoint_dir);
  for (const std::string& arg : f.command) spec.add_command(arg);
  spec.set_name(!f.name.empty() || f.command.empty()
                    ? f.name
                    : std::filesystem::path(f.command[0]).filename().string());
  for (const std::string& kv : f.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Fail(absl::StrCat("--env ", kv, ": expected KEY=VALUE"));
    }
    (*spec.mutable_env())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  MasterClient client(f.master);
  v1::SubmitJobResponse resp;
  grpc::Status status =
      client.stub().SubmitJob(client.Context().get(), req, &resp);
  if (!status.ok()) {
    std::string line = cli::DescribeRpcError(status, f.master, "submit");
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
        f.command.empty()) {
      absl::StrAppend(&line, " (give the command after --, e.g. `tiresias "
                             "submit --gpus 1 -- python3 train.py`)");
    }
    return Fail(line);
  }
  std::printf("%lld\n", static_cast<long long>(resp.job_id()));
  return 0;
}

// WAIT: time not running between submission and now (or the end); RUN: the
// job's whole executed time. Now is this machine's clock.
void PrintJobsTable(const v1::ListJobsResponse& resp) {
  const double now = cli::NowUnixSeconds();
  std::printf("%-6s %-16s %-10s %-10s %5s %4s %15s %10s %10s %s\n", "JOBID",
              "NAME", "USER", "STATE", "QUEUE", "GPUS", "ATTAINED(GPU-s)",
              "WAIT", "RUN", "NODES");
  for (const v1::Job& job : resp.jobs()) {
    const double end = job.has_end_time() ? job.end_time() : now;
    const double run = job.total_executed_seconds();
    const double wait = std::max(0.0, end - job.submit_time() - run);
    const std::string nodes =
        job.nodes().empty() ? "-" : absl::StrJoin(job.nodes(), ",");
    std::printf("%-6lld %-16s %-10s %-10s %5d %4d %15.0f %10s %10s %s\n",
                static_cast<long long>(job.id()), job.spec().name().c_str(),
                job.spec().user().c_str(),
                cli::JobStateName(job.state()).c_str(), job.queue(),
                job.spec().gpus(), job.attained_gpu_seconds(),
                cli::FormatDuration(wait).c_str(),
                cli::FormatDuration(run).c_str(), nodes.c_str());
  }
}

int ListJobs(const std::string& master, bool json) {
  MasterClient client(master);
  v1::ListJobsResponse resp;
  grpc::Status status =
      client.stub().ListJobs(client.Context().get(), {}, &resp);
  if (!status.ok()) return Fail(cli::DescribeRpcError(status, master, "jobs"));
  if (json) {
    std::printf("%s\n", cli::ToJson(resp).c_str());
  } else {
    PrintJobsTable(resp);
  }
  return 0;
}

void PrintJob(const v1::Job& job) {
  auto line = [](const char* key, const std::string& value) {
    std::printf("%-16s %s\n", key, value.c_str());
  };
  line("Job:", absl::StrCat(job.id()));
  line("Name:", job.spec().name());
  line("User:", job.spec().user());
  line("State:", cli::JobStateName(job.state()));
  line("Command:", absl::StrJoin(job.spec().command(), " "));
  line("GPUs:", absl::StrCat(job.spec().gpus()));
  line("Queue:", absl::StrCat(job.queue()));
  line("Attained:", absl::StrFormat("%.0f GPU-s", job.attained_gpu_seconds()));
  line("Executed:", cli::FormatDuration(job.total_executed_seconds()));
  line("Submitted:", cli::FormatTime(job.submit_time()));
  if (job.has_first_start_time()) {
    line("First start:", cli::FormatTime(job.first_start_time()));
  }
  if (job.has_end_time()) line("Ended:", cli::FormatTime(job.end_time()));
  if (job.has_exit_code()) line("Exit code:", absl::StrCat(job.exit_code()));
  line("Attempt:", absl::StrCat(job.attempt()));
  line("Preemptions:", absl::StrCat(job.preemptions()));
  line("Promotions:", absl::StrCat(job.promotions()));
  line("Nodes:", job.nodes().empty() ? "-" : absl::StrJoin(job.nodes(), ","));
  if (!job.spec().checkpoint_dir().empty()) {
    line("Checkpoint dir:", job.spec().checkpoint_dir());
  }
  for (const auto& [key, value] : job.spec().env()) {
    line("Env:", absl::StrCat(key, "=", value));
  }
  std::printf("\nEVENTS\n%-19s  %-10s %s\n", "TIME", "KIND", "DETAIL");
  for (const v1::JobEvent& e : job.events()) {
    std::printf("%-19s  %-10s %s\n", cli::FormatTime(e.time()).c_str(),
                e.kind().c_str(), e.detail().c_str());
  }
}

int ShowJob(const std::string& master, int64_t id, bool json) {
  MasterClient client(master);
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status status = client.stub().GetJob(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return Fail(cli::DescribeRpcError(status, master, absl::StrCat("job ", id)));
  }
  if (json) {
    std::printf("%s\n", cli::ToJson(resp.job()).c_str());
  } else {
    PrintJob(resp.job());
  }
  return 0;
}

int Cancel(const std::string& master, int64_t id, bool json) {
  MasterClient client(master);
  v1::CancelJobRequest req;
  req.set_job_id(id);
  v1::CancelJobResponse resp;
  grpc::Status status =
      client.stub().CancelJob(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return Fail(cli::DescribeRpcError(status, master,
                                      absl::StrCat("cancel job ", id)));
  }
  if (json) {
    std::printf("%s\n", cli::ToJson(resp.job()).c_str());
  } else if (resp.job().state() == v1::JOB_STATE_CANCELLED) {
    std::printf("job %lld cancelled\n", static_cast<long long>(id));
  } else {
    std::printf("job %lld is being stopped; it becomes cancelled when its "
                "tasks exit\n", static_cast<long long>(id));
  }
  return 0;
}

struct IdFlags {
  std::string master;
  int64_t id = 0;
  bool json = false;
};

CLI::App* AddIdCommand(CLI::App& app, const char* name, const char* help,
                       std::shared_ptr<IdFlags> f) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("id", f->id, "Job id")->required();
  cmd->add_flag("--json", f->json, "Print the job as JSON");
  return cmd;
}

}  // namespace

void AddJobCommands(CLI::App& app, int* exit_code) {
  auto submit = std::make_shared<SubmitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "submit",
      "Submit a job; prints its id. The command comes after --, e.g. "
      "`tiresias submit --gpus 2 -- python3 train.py --steps 100`.");
  cli::AddMasterFlag(cmd, &submit->master);
  cmd->add_option("--gpus", submit->gpus, "GPUs the job needs, all at once")
      ->required();
  cmd->add_option("--name", submit->name,
                  "Label for listings (default: the command's base name)");
  cmd->add_option("--checkpoint-dir", submit->checkpoint_dir,
                  "Where the job checkpoints (default: chosen by the master)");
  // One value per --env: a greedy vector option would swallow the `--`.
  cmd->add_option("--env", submit->env,
                  "KEY=VALUE for every task's environment; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("command", submit->command, "The command to run, after --");
  cmd->callback([submit, exit_code] { *exit_code = Submit(*submit); });

  auto jobs = std::make_shared<IdFlags>();
  cmd = app.add_subcommand(
      "jobs",
      "List jobs, like squeue. STATE: pending, starting (GPUs assigned, "
      "tasks being started), running, preempted, finished, failed, "
      "cancelled");
  cli::AddMasterFlag(cmd, &jobs->master);
  cmd->add_flag("--json", jobs->json, "Print the list as JSON");
  cmd->callback(
      [jobs, exit_code] { *exit_code = ListJobs(jobs->master, jobs->json); });

  auto job = std::make_shared<IdFlags>();
  AddIdCommand(app, "job", "Show one job and its event history", job)
      ->callback([job, exit_code] {
        *exit_code = ShowJob(job->master, job->id, job->json);
      });

  auto cancel = std::make_shared<IdFlags>();
  AddIdCommand(app, "cancel", "Cancel a job (running ones are stopped)",
               cancel)
      ->callback([cancel, exit_code] {
        *exit_code = Cancel(cancel->master, cancel->id, cancel->json);
      });
}

}  // namespace tiresias
