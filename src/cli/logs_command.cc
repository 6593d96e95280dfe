// `tiresias logs`: prints a task's log file. The master does not know where
// logs are (no field in the protocol carries a path), so this reads the
// agent's conventional path, <agent state dir>/logs/job-<id>-attempt-<a>-
// rank-<r>.log (agent_daemon.h), and only when --agent-state-dir says where
// that agent keeps its state: it works on the machine that ran the task,
// or on a shared filesystem.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"

namespace tiresias {
namespace {

constexpr std::chrono::milliseconds kFollowPoll{500};

struct LogsFlags {
  std::string master;
  int64_t id = 0;
  std::string agent_state_dir;
  int attempt = 0;  // 0: the job's current (or last) attempt
  int rank = 0;
  bool follow = false;
};

absl::StatusOr<v1::Job> FetchJob(cli::MasterClient& client, int64_t id) {
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status status = client.stub().GetJob(client.Context().get(), req, &resp);
  if (!status.ok()) {
    return absl::UnavailableError(cli::DescribeRpcError(
        status, client.address(), absl::StrCat("job ", id)));
  }
  return resp.job();
}

// Copies what the file holds past *offset to stdout and advances *offset.
// False if the file cannot be opened.
bool CopyNew(const std::string& path, std::streamoff* offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(*offset);
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    std::fwrite(buf, 1, static_cast<size_t>(in.gcount()), stdout);
    *offset += in.gcount();
  }
  std::fflush(stdout);
  return true;
}

int Logs(const LogsFlags& f) {
  if (f.agent_state_dir.empty()) {
    return cli::Fail(absl::StrCat(
        "logs: the master does not record where logs are; give "
        "--agent-state-dir DIR of the agent that ran job ", f.id,
        " (its logs are DIR/logs/job-", f.id, "-attempt-A-rank-R.log)"));
  }
  cli::MasterClient client(f.master);
  absl::StatusOr<v1::Job> job = FetchJob(client, f.id);
  if (!job.ok()) return cli::Fail(std::string(job.status().message()));
  const int attempt = f.attempt > 0 ? f.attempt : job->attempt();
  if (attempt == 0) {
    return cli::Fail(absl::StrCat("logs: job ", f.id,
                                  " has not started yet, so it has no log"));
  }
  const std::string path = absl::StrCat(
      f.agent_state_dir, "/logs/job-", f.id, "-attempt-", attempt, "-rank-",
      f.rank, ".log");
  std::streamoff offset = 0;
  bool opened = CopyNew(path, &offset);
  if (!f.follow) {
    return opened ? 0 : cli::Fail(absl::StrCat("logs: cannot read ", path));
  }
  // Follow until the job ends (or moves on to another attempt, whose log is
  // another file), then print what came last.
  while (!cli::IsFinal(job->state()) &&
         (f.attempt > 0 || job->attempt() == attempt)) {
    std::this_thread::sleep_for(kFollowPoll);
    opened = CopyNew(path, &offset) || opened;
    job = FetchJob(client, f.id);
    if (!job.ok()) return cli::Fail(std::string(job.status().message()));
  }
  opened = CopyNew(path, &offset) || opened;
  return opened ? 0 : cli::Fail(absl::StrCat("logs: cannot read ", path));
}

}  // namespace

void AddLogsCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "logs",
      "Print a task's stdout and stderr. The master does not know where logs "
      "are, so this reads the agent's file <agent state dir>/logs/"
      "job-<id>-attempt-<a>-rank-<r>.log and needs --agent-state-dir (run "
      "it where that folder is visible).");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("id", f->id, "Job id")->required();
  cmd->add_option("--agent-state-dir", f->agent_state_dir,
                  "State folder of the agent that ran the task (required)");
  cmd->add_option("--attempt", f->attempt,
                  "Launch number (default: the job's current or last)");
  cmd->add_option("--rank", f->rank, "Task rank")->capture_default_str();
  cmd->add_flag("-f,--follow", f->follow,
                "Keep printing what is appended until the job ends");
  cmd->callback([f, exit_code] { *exit_code = Logs(*f); });
}

}  // namespace tiresias
