// `tiresias run [submit's options] [--pty] -- CMD`: an interactive job, as
// Slurm's `srun --pty`. It is submitted with its I/O joined (JobSpec.io),
// waits in the queue like any job (its reason shown on stderr; Ctrl-C
// cancels it; --immediate gives up), then the caller's stdin, stdout and
// stderr are joined to its rank-0 task (job_io.h) and the command's exit
// code is the job's. A preempted job is waited for and joined again.
//
// `tiresias attach JOB [--rank R] [--read-only]`: joins a running job's
// output from now on, and an interactive job's input too.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/job_io.h"
#include "cli/job_wait.h"
#include "cli/shell_help.h"
#include "cli/submit_flags.h"
#include "master/job_validation.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPoll{250};

struct RunFlags {
  cli::SubmitFlags job;
  bool pty = false;
  // --immediate[=SECONDS]: give up if not running within it; 0: wait.
  std::optional<double> immediate;
  double grace = 0;  // --grace; 0: the master's default
};

std::atomic<bool> g_cancel{false};
extern "C" void OnWaitSignal(int) { g_cancel.store(true); }

// The job now; a one-line error.
absl::StatusOr<v1::Job> GetJob(MasterClient& client, int64_t id) {
  v1::Job job;
  if (grpc::Status s = cli::GetJob(client, id, &job); !s.ok()) {
    return absl::UnavailableError(
        cli::DescribeRpcError(s, client.address(), absl::StrCat("job ", id)));
  }
  return job;
}

void Cancel(MasterClient& client, int64_t id) {
  v1::CancelJobRequest req;
  req.set_job_id(id);
  v1::CancelJobResponse resp;
  auto ctx = client.Context();
  client.stub().CancelJob(ctx.get(), req, &resp);
}

// Prints the log of rank 0 of launch `attempt` of job `id`: the output of
// a task that ended before we could join it (a short command).
void PrintLog(MasterClient& client, int64_t id, int attempt) {
  int64_t offset = 0;
  while (true) {
    v1::ReadJobLogRequest req;
    req.set_job_id(id);
    req.set_attempt(attempt);
    req.set_offset(offset);
    v1::ReadJobLogResponse resp;
    auto ctx = client.Context();
    if (!client.stub().ReadJobLog(ctx.get(), req, &resp).ok() ||
        resp.data().empty()) {
      return;
    }
    std::fwrite(resp.data().data(), 1, resp.data().size(), stdout);
    offset = resp.next_offset();
  }
}

// Waits until job `id` runs or ends; says why it waits on stderr
// when that changes. nullopt: keep going; else the exit code to leave with.
// A job that ended with a launch we never joined (a short command that
// ran and ended between two looks): its output, from its log, first.
std::optional<int> WaitUntilRunning(MasterClient& client, int64_t id,
                                    const RunFlags& f, int opened_attempt,
                                    v1::Job* job) {
  struct sigaction on = {}, old_int = {}, old_term = {};
  on.sa_handler = OnWaitSignal;
  sigemptyset(&on.sa_mask);
  sigaction(SIGINT, &on, &old_int);
  sigaction(SIGTERM, &on, &old_term);
  g_cancel.store(false);
  const auto start = Clock::now();
  std::string said;
  std::optional<int> code;
  int unreachable = 0;
  while (true) {
    if (g_cancel.load()) {
      Cancel(client, id);
      std::fprintf(stderr, "tiresias: job %lld cancelled\n",
                   static_cast<long long>(id));
      code = 130;
      break;
    }
    absl::StatusOr<v1::Job> now = GetJob(client, id);
    if (!now.ok()) {
      // A master restarting: keep waiting, for up to a minute.
      if (++unreachable * kPoll > std::chrono::minutes(1)) {
        code = Fail(std::string(now.status().message()));
        break;
      }
      std::this_thread::sleep_for(kPoll);
      continue;
    }
    unreachable = 0;
    *job = *now;
    if (job->state() == v1::JOB_STATE_RUNNING) break;
    if (cli::IsFinal(job->state())) {
      if (job->attempt() > 0 && job->attempt() != opened_attempt) {
        PrintLog(client, id, job->attempt());
        std::fflush(stdout);
      }
      code = cli::WaitForJob(client, id);  // says how it ended
      break;
    }
    const std::string why = job->pending_reason().empty()
                                ? cli::JobStateName(job->state())
                                : job->pending_reason();
    if (why != said) {
      std::fprintf(stderr, "tiresias: job %lld waiting: %s\n",
                   static_cast<long long>(id), why.c_str());
      said = why;
    }
    if (f.immediate && *f.immediate >= 0 &&
        Clock::now() - start >= std::chrono::duration<double>(*f.immediate)) {
      Cancel(client, id);
      code = Fail(absl::StrCat("job ", id, " did not start within ",
                               *f.immediate, " s (--immediate): cancelled"));
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return code;
}

int Run(RunFlags& f) {
  if (f.job.command.empty()) {
    return Fail(
        "run: give the command after --, e.g. `tiresias run --pty --gpus 1 "
        "-- bash`");
  }
  if (!f.job.gpus && !f.job.nodes && !f.job.gpus_per_node) f.job.gpus = 1;
  absl::StatusOr<cli::ClientCredentials> creds = cli::LoadClientCredentials();
  if (!creds.ok()) return Fail(std::string(creds.status().message()));
  absl::StatusOr<JobRequest> spec = cli::SpecFromFlags(f.job, *creds);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  spec->io = f.pty ? kIoPty : kIoPipes;
  spec->io_grace_seconds = f.grace;
  if (absl::Status valid = ValidateJobRequest(*spec); !valid.ok()) {
    return Fail(absl::StrCat("run: ", valid.message()));
  }
  MasterClient client(f.job.master, *std::move(creds));
  v1::SubmitJobResponse resp;
  std::string line;
  if (grpc::Status s = cli::SubmitWithRetry(client, f.job, *spec, &resp, &line);
      !s.ok()) {
    return Fail(line);
  }
  const int64_t id = resp.job_id();
  std::fprintf(stderr, "tiresias: job %lld submitted\n",
               static_cast<long long>(id));
  int joined_attempt = 0;
  int opened_attempt = 0;  // the last launch whose output we joined
  while (true) {
    v1::Job job;
    if (std::optional<int> code =
            WaitUntilRunning(client, id, f, opened_attempt, &job)) {
      return *code;
    }
    if (job.attempt() != joined_attempt && joined_attempt != 0) {
      std::fprintf(stderr, "tiresias: job %lld runs again (attempt %d)\n",
                   static_cast<long long>(id), job.attempt());
    }
    v1::IoOpen open;
    open.set_job_id(id);
    // The whole output of a new attempt; after a broken stream, what
    // follows.
    open.set_replay(job.attempt() != joined_attempt);
    joined_attempt = job.attempt();
    cli::IoResult io = cli::JoinTask(client, open, /*input=*/true);
    if (io.detached) return 0;
    if (io.opened) opened_attempt = joined_attempt;
    if (!io.status.ok() &&
        io.status.error_code() != grpc::StatusCode::FAILED_PRECONDITION &&
        io.status.error_code() != grpc::StatusCode::UNAVAILABLE) {
      return Fail(cli::DescribeRpcError(io.status, client.address(),
                                        absl::StrCat("job ", id)));
    }
    if (!io.status.ok() || !io.end || !io.end->task_ended()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));  // try again
      continue;
    }
    // The task ended: its job ends, or waits to run again (preempted).
    while (true) {
      absl::StatusOr<v1::Job> now = GetJob(client, id);
      if (now.ok() && cli::IsFinal(now->state())) {
        return cli::JobExitCode(*now);
      }
      if (now.ok() && (now->state() == v1::JOB_STATE_PREEMPTED ||
                       now->state() == v1::JOB_STATE_PENDING ||
                       now->attempt() != joined_attempt)) {
        std::fprintf(stderr,
                     "tiresias: job %lld was stopped (preempted); it runs "
                     "again when GPUs are free\n",
                     static_cast<long long>(id));
        break;
      }
      std::this_thread::sleep_for(kPoll);
    }
  }
}

struct AttachFlags {
  std::string master;
  std::string ref;
  int rank = 0;
  bool read_only = false;
  bool replay = false;
};

int Attach(const AttachFlags& f) {
  MasterClient client(f.master);
  absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, f.ref);
  if (!id.ok()) return Fail(std::string(id.status().message()));
  absl::StatusOr<v1::Job> job = GetJob(client, *id);
  if (!job.ok()) return Fail(std::string(job.status().message()));
  v1::IoOpen open;
  open.set_job_id(*id);
  open.set_rank(f.rank);
  open.set_replay(f.replay);
  // A batch job has no input to join: its output alone.
  const bool input = !f.read_only && job->spec().io() != v1::IO_MODE_NONE;
  open.set_read_only(!input);
  cli::IoResult io = cli::JoinTask(client, open, input);
  if (!io.status.ok()) {
    return Fail(cli::DescribeRpcError(io.status, client.address(),
                                      absl::StrCat("attach ", f.ref)));
  }
  if (io.end && !io.end->reason().empty()) {
    std::fprintf(stderr, "tiresias: %s\n", io.end->reason().c_str());
  }
  // The job's own code once it has ended (the task's, if it is known
  // while the job goes on).
  if (absl::StatusOr<v1::Job> now = GetJob(client, *id);
      now.ok() && cli::IsFinal(now->state())) {
    return cli::JobExitCode(*now);
  }
  if (io.end) {
    if (std::optional<int> code = cli::TaskExitCode(*io.end)) return *code;
  }
  return 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run an interactive job (as Slurm's srun --pty): it waits in the queue "
      "like any job, then your terminal is joined to it through the master "
      "and exits with its exit code, e.g. `tiresias run --pty --gpus 1 -- "
      "bash`. Its output is also in `tiresias logs`. Ctrl-] detaches (the "
      "job goes on, and is hung up after --grace with nobody attached)");
  cli::AddJobFlags(cmd, &f->job);
  cmd->add_flag("--pty", f->pty,
                "Give the task a pseudo-terminal: a shell's prompt and job "
                "control, your window size, Ctrl-C and Ctrl-Z reach it. "
                "Without: its stdin, stdout and stderr are pipes (Ctrl-C is "
                "sent to it as SIGINT; twice within a second detaches)");
  cmd->add_option("--immediate,-I", f->immediate,
                  "Give up (and cancel the job) if it does not start within "
                  "SECONDS (Slurm's srun --immediate)")
      ->expected(0, 1)
      ->default_str("0")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--grace", f->grace,
                  "Seconds the job may run with nobody attached (a dropped "
                  "connection, a detach) before it is hung up with SIGHUP, "
                  "as a dropped ssh session (default 60, at most 86,400)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->callback([f, exit_code] { *exit_code = Run(*f); });

  auto a = std::make_shared<AttachFlags>();
  CLI::App* attach = app.add_subcommand(
      "attach",
      "Join a running job: its output from now on, live (any job), and "
      "your keyboard to its input (a job started with `tiresias run`; only "
      "its owner). Ctrl-] (with a terminal) or Ctrl-C twice detaches; the "
      "job goes on");
  cli::AddMasterFlag(attach, &a->master);
  attach->add_option("job", a->ref, "Job id, or ARRAYID_INDEX (e.g. 12_3)")
      ->type_name(cli::kJobType)
      ->required();
  attach
      ->add_option("--rank", a->rank,
                   "Which task (node) of the job (default 0)")
      ->check(CLI::NonNegativeNumber);
  attach->add_flag("--read-only", a->read_only,
                   "Watch its output only (what an admin may do to "
                   "another user's job)");
  attach->add_flag("--replay", a->replay,
                   "First show its output so far (up to its last 1 MiB)");
  attach->callback([a, exit_code] { *exit_code = Attach(*a); });
}

}  // namespace tiresias
