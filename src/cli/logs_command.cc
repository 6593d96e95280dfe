// `tiresias logs`: prints a task's stdout and stderr. The master reads the
// log from the agent of the node that ran the task (ReadJobLog), so this
// works from any machine that reaches the master. With -f it follows the
// job: across a preemption it moves on to the next launch's log once the
// job resumes, and it ends when the job does.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/job_wait.h"
#include "cli/shell_help.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

constexpr std::chrono::milliseconds kFollowPoll{500};
// What one ReadJobLog returns at most (its default; proto/tiresias.proto):
// a slice this full means more can be read at once.
constexpr size_t kMasterSliceBytes = 1 << 20;
// How long -f keeps retrying a master or node it cannot reach.
constexpr std::chrono::seconds kFollowRetryFor{120};

struct LogsFlags {
  std::string master;
  std::string ref;  // the job as given: an id or ARRAYID_INDEX
  int64_t id = 0;   // the job's id, resolved from `ref`
  int attempt = 0;  // 0: the job's current (or last) attempt
  int rank = 0;
  bool follow = false;
  bool json = false;
};

class LogPrinter {
 public:
  explicit LogPrinter(const LogsFlags& f) : f_(f) {}

  void Print(const v1::ReadJobLogResponse& resp, int64_t offset) {
    if (resp.data().empty()) return;
    if (f_.json) {
      nlohmann::json line = {{"job_id", f_.id},  {"attempt", resp.attempt()},
                             {"rank", f_.rank},  {"node", resp.node()},
                             {"offset", offset}, {"text", resp.data()}};
      std::printf("%s\n", line.dump(-1, ' ', false,
                                    nlohmann::json::error_handler_t::replace)
                              .c_str());
    } else {
      std::fwrite(resp.data().data(), 1, resp.data().size(), stdout);
    }
    std::fflush(stdout);
  }

 private:
  const LogsFlags& f_;
};

// Rank `f.rank`'s log of `attempt` was empty: says on stderr which other
// ranks of that launch wrote something, so that an empty answer is not
// mistaken for a silent job (a multi-node job's failing rank is often not
// rank 0). Reads the first slice of each (a job has at most a few hundred
// nodes).
void SayWhichRanksWrote(cli::MasterClient& client, const LogsFlags& f,
                        int attempt) {
  v1::Job job;
  if (!cli::GetJob(client, f.id, &job).ok() || job.nodes_size() < 2) return;
  std::vector<std::string> wrote;
  for (int rank = 0; rank < job.nodes_size(); ++rank) {
    if (rank == f.rank) continue;
    v1::ReadJobLogRequest req;
    req.set_job_id(f.id);
    req.set_attempt(attempt);
    req.set_rank(rank);
    v1::ReadJobLogResponse resp;
    if (client.stub().ReadJobLog(client.Context().get(), req, &resp).ok() &&
        !resp.data().empty()) {
      wrote.push_back(absl::StrCat(rank));
    }
  }
  if (wrote.empty()) {
    std::fprintf(stderr,
                 "tiresias: job %lld attempt %d: none of its %d ranks wrote "
                 "anything\n",
                 static_cast<long long>(f.id), attempt, job.nodes_size());
    return;
  }
  std::fprintf(stderr,
               "tiresias: job %lld attempt %d: rank %d wrote nothing; rank%s "
               "%s did (`tiresias logs %lld --rank %s`)\n",
               static_cast<long long>(f.id), attempt, f.rank,
               wrote.size() == 1 ? "" : "s", absl::StrJoin(wrote, ", ").c_str(),
               static_cast<long long>(f.id), wrote.front().c_str());
}

int Logs(LogsFlags f) {
  cli::MasterClient client(f.master);
  absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, f.ref);
  if (!id.ok()) return cli::Fail(std::string(id.status().message()));
  f.id = *id;
  LogPrinter printer(f);
  int attempt = f.attempt;
  int64_t offset = 0;
  const std::string what = absl::StrCat("logs of job ", f.id);
  bool followed = false;  // some read succeeded
  bool warned = false;    // said that we retry
  auto last_ok = std::chrono::steady_clock::now();
  while (true) {
    v1::ReadJobLogRequest req;
    req.set_job_id(f.id);
    req.set_attempt(attempt);
    req.set_rank(f.rank);
    req.set_offset(offset);
    v1::ReadJobLogResponse resp;
    grpc::Status status =
        client.stub().ReadJobLog(client.Context().get(), req, &resp);
    if (!status.ok()) {
      const grpc::StatusCode code = status.error_code();
      // Following: a job that has not started, or whose launch is still
      // being started (no log yet), is waited for; a launch that never
      // wrote a log (stopped before its task started) is skipped; a node
      // or master that cannot be reached for a while is retried.
      const bool no_log_yet =
          code == grpc::StatusCode::FAILED_PRECONDITION ||
          (code == grpc::StatusCode::NOT_FOUND && offset == 0);
      const bool transient = code == grpc::StatusCode::UNAVAILABLE ||
                             code == grpc::StatusCode::DEADLINE_EXCEEDED;
      if (f.follow && (no_log_yet || transient)) {
        v1::Job fetched;
        const std::optional<v1::Job> job =
            cli::GetJob(client, f.id, &fetched).ok() ? std::optional(fetched)
                                                     : std::nullopt;
        if (job.has_value() && no_log_yet && f.attempt == 0 && attempt != 0 &&
            job->attempt() > attempt) {
          ++attempt;
          continue;
        }
        // The job ended after its last launch that wrote a log.
        if (job.has_value() && no_log_yet && cli::IsFinal(job->state()) &&
            followed) {
          return cli::JobExitCode(*job);
        }
        const bool wait = job.has_value() ? !cli::IsFinal(job->state())
                                          : transient;  // master unreachable
        const auto now = std::chrono::steady_clock::now();
        if (wait && (!transient || now - last_ok < kFollowRetryFor)) {
          if (transient && !warned) {
            std::fprintf(stderr, "tiresias: %s: %s; retrying\n", what.c_str(),
                         status.error_message().c_str());
            warned = true;
          }
          std::this_thread::sleep_for(kFollowPoll);
          continue;
        }
      }
      v1::Job unused_job;
      // The master's own words when it answered: a log it could not find,
      // or a node it could not reach (not the master being unreachable).
      const bool from_master =
          status.error_code() == grpc::StatusCode::NOT_FOUND ||
          (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
           cli::GetJob(client, f.id, &unused_job).error_code() !=
               grpc::StatusCode::UNAVAILABLE);
      if (from_master) {
        return cli::Fail(absl::StrCat(what, ": ", status.error_message()));
      }
      return cli::Fail(cli::DescribeRpcError(status, client.address(), what));
    }
    followed = true;
    warned = false;
    last_ok = std::chrono::steady_clock::now();
    printer.Print(resp, offset);
    const bool got_all =
        resp.data().empty() || resp.data().size() < kMasterSliceBytes;
    offset = resp.next_offset();
    if (attempt == 0) attempt = resp.attempt();
    if (!got_all) continue;  // a full slice: there is more to read now
    if (!f.follow) {
      if (offset == 0 && !f.json) SayWhichRanksWrote(client, f, attempt);
      return 0;
    }
    if (resp.complete()) {
      if (f.attempt == 0 && resp.current_attempt() > attempt) {
        // Preempted and resumed: the next launch writes a new log.
        attempt = attempt + 1;
        offset = 0;
        if (!f.json) {
          std::fprintf(stderr, "tiresias: job %lld: following attempt %d\n",
                       static_cast<long long>(f.id), attempt);
        }
        continue;
      }
      if (f.attempt != 0) return 0;
      if (cli::IsFinal(resp.job_state())) {
        // Followed to its end: exit as the job did (job_wait.h).
        v1::Job ended;
        const grpc::Status got = cli::GetJob(client, f.id, &ended);
        if (!got.ok()) {
          return cli::Fail(cli::DescribeRpcError(got, client.address(), what));
        }
        return cli::JobExitCode(ended);
      }
    }
    std::this_thread::sleep_for(kFollowPoll);
  }
}

}  // namespace

void AddLogsCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "logs",
      "Print a task's stdout and stderr (read by the master from the node "
      "that ran it). -f follows the job until it ends, across preemptions.");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("id", f->ref, "Job id, or ARRAYID_INDEX (e.g. 12_3)")
      ->type_name(cli::kJobType)
      ->required();
  cmd->add_option("--attempt", f->attempt,
                  "Launch number (default: the job's current or last; with "
                  "-f, every launch from then on)");
  cmd->add_option("--rank", f->rank, "Task rank")->capture_default_str();
  cmd->add_flag("-f,--follow", f->follow,
                "Keep printing what is appended until the job ends, then "
                "exit as the job did (its exit code; 125 if cancelled, 124 "
                "if stopped at its time limit)");
  cmd->add_flag("--json", f->json,
                "One JSON object per piece of log: job_id, attempt, rank, "
                "node, offset, text");
  cmd->callback([f, exit_code] { *exit_code = Logs(*f); });
}

}  // namespace tiresias
