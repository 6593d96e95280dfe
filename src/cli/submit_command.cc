// `tiresias submit`: checks the spec against the master's limits before
// sending it (the same ValidateJobRequest), then submits it with a random
// request id, retrying with that same id while the master is unreachable or
// slow (UNAVAILABLE, DEADLINE_EXCEEDED), with exponential backoff for up to
// --retry-for seconds. The request id makes the retries safe: a submission
// that was accepted but whose answer was lost is found again, not created
// twice.
//
// `tiresias submit --file JOBS.jsonl` submits a file of job specs (one JSON
// object per line, job_file.h) in one SubmitJobs request: every line is
// checked first, then the master writes them all in one transaction, or
// none; it prints the new ids, one per line (or --json).
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/api_json.h"
#include "api/job_spec.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/env_export.h"
#include "cli/job_file.h"
#include "cli/job_wait.h"
#include "cli/node_filter_flags.h"
#include "cli/submit_flags.h"
#include "cli/time_arg.h"
#include "cli/time_limit.h"
#include "core/job_array.h"
#include "core/status_macros.h"
#include "core/warn_signal.h"
#include "master/job_limits.h"
#include "master/job_validation.h"
#include "master/output_pattern.h"

extern char** environ;

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;
using cli::SubmitFlags;

// Backoff between attempts: doubles from the first to the most, with
// +-20% jitter so that many clients do not retry in step.
constexpr std::chrono::milliseconds kFirstBackoff{100};
constexpr std::chrono::milliseconds kMostBackoff{4000};

// 128 random bits from std::random_device, as 32 hex digits.
std::string NewRequestId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppendFormat(&id, "%08x", static_cast<uint32_t>(random()));
  }
  return id;
}

// This process's environment as "K=V" entries.
std::vector<std::string> CallerEnvironment() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    entries.emplace_back(*e);
  }
  return entries;
}

// The caller's current directory (getcwd: symbolic links resolved, as
// sbatch does), or an error that says to pass --chdir.
absl::StatusOr<std::string> CurrentDirectory() {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "submit: cannot tell the current directory (", ec.message(),
        "); pass --chdir DIR, the directory the job starts in"));
  }
  return cwd.string();
}

// The job's GPUs and shape from --gpus, --nodes and --gpus-per-node, any
// two of which give the third (--gpus-per-node alone: one node; --gpus
// alone: no shape), into spec.num_gpus, nodes and gpus_per_node.
absl::Status ResolveShape(const SubmitFlags& f, JobRequest* spec) {
  spec->num_gpus = f.gpus.value_or(0);
  if (!f.nodes && !f.gpus_per_node) return absl::OkStatus();
  for (const auto& [flag, value] :
       {std::pair{"--nodes", f.nodes}, {"--gpus-per-node", f.gpus_per_node}}) {
    if (value && *value < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": expected at least 1, got ", *value));
    }
  }
  int nodes = f.nodes.value_or(0);
  int per_node = f.gpus_per_node.value_or(0);
  if (nodes == 0) {
    nodes = f.gpus ? *f.gpus / per_node : 1;
  } else if (per_node == 0) {
    if (!f.gpus || *f.gpus % nodes != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nodes ", nodes, " needs --gpus-per-node G (or a --gpus that ",
          nodes, " divides)"));
    }
    per_node = *f.gpus / nodes;
  }
  if (f.gpus && static_cast<int64_t>(nodes) * per_node != *f.gpus) {
    return absl::InvalidArgumentError(
        f.nodes
            ? absl::StrCat("--gpus ", *f.gpus, " is not --nodes ", nodes,
                           " x --gpus-per-node ", per_node,
                           "; give two of the three")
            : absl::StrCat("--gpus ", *f.gpus,
                           " is not a multiple of --gpus-per-node ", per_node));
  }
  spec->nodes = nodes;
  spec->gpus_per_node = per_node;
  spec->num_gpus = nodes * per_node;
  return absl::OkStatus();
}

// --begin as an instant (0: none given), read once per submit.
absl::StatusOr<Seconds> BeginFromFlag(const SubmitFlags& f) {
  if (f.begin.empty()) return Seconds{0};
  absl::StatusOr<double> begin =
      cli::ParseBeginTime("--begin", f.begin, cli::NowUnixSeconds());
  if (!begin.ok()) return begin.status();
  return Seconds{*begin};
}

}  // namespace

namespace cli {

absl::StatusOr<JobRequest> SpecFromFlags(const SubmitFlags& f,
                                         const cli::ClientCredentials& creds) {
  JobRequest spec;
  ASSIGN_OR_RETURN(spec.env, cli::CaptureEnvironment(
                                 f.export_env.empty() ? "ALL" : f.export_env,
                                 CallerEnvironment()));
  ASSIGN_OR_RETURN(const std::string cwd, CurrentDirectory());
  spec.workdir = cli::AbsoluteWorkdir(f.chdir, cwd);
  // Named by their flags here; ValidateJobRequest names them spec.output
  // and spec.error, as the master does.
  RETURN_IF_ERROR(ValidateOutputPattern("--output", f.output));
  RETURN_IF_ERROR(ValidateOutputPattern("--error", f.error));
  spec.output = f.output;
  spec.error = f.error;
  RETURN_IF_ERROR(ResolveShape(f, &spec));
  spec.tasks_per_node = f.tasks_per_node;
  spec.user = cli::OwnerToSend(creds);
  spec.checkpoint_dir = f.checkpoint_dir;
  spec.command = f.command;
  if (!f.time.empty()) {
    absl::StatusOr<double> limit = cli::ParseTimeLimit("--time", f.time);
    if (!limit.ok()) return limit.status();
    spec.time_limit = Seconds{*limit};
  }
  ASSIGN_OR_RETURN(spec.begin, BeginFromFlag(f));
  if (!f.signal.empty()) {
    absl::StatusOr<WarnSignal> warn = ParseWarnSignal(f.signal);
    if (!warn.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--signal ", warn.status().message()));
    }
    if (f.time.empty()) {
      return absl::InvalidArgumentError(
          "--signal warns before the time limit: give --time too");
    }
    spec.warn = *warn;
  }
  RETURN_IF_ERROR(
      cli::ApplyNodeFilter(f.filter, cli::kNodeFilterFlagNames, &spec));
  spec.no_preempt = f.no_preempt;
  spec.hold = f.hold;
  spec.vc = f.vc;
  spec.qos = f.qos;
  spec.image = f.image;
  spec.notify = f.notify;
  spec.notify_on = f.notify_on;
  absl::StatusOr<std::vector<JobDependency>> deps =
      ParseDependencies(f.dependency);
  if (!deps.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dependency ", deps.status().message()));
  }
  spec.dependencies = *std::move(deps);
  if (!f.array.empty()) {
    absl::StatusOr<JobArraySpec> array = ParseJobArray(f.array);
    if (!array.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--array ", array.status().message()));
    }
    spec.array = *std::move(array);
  }
  spec.name = !f.name.empty() || f.command.empty()
                  ? f.name
                  : std::filesystem::path(f.command[0]).filename().string();
  for (const std::string& kv : f.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--env ", QuoteForError(kv), ": expected KEY=VALUE"));
    }
    if (const std::string why = EnvSetPerTask(kv.substr(0, eq)); !why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--env ", QuoteForError(kv), ": ", why));
    }
    spec.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return spec;
}

}  // namespace cli

namespace {

using cli::SpecFromFlags;

v1::SubmitJobRequest ToRequest(const JobRequest& spec) {
  v1::SubmitJobRequest req;
  JobSpecToProto(spec, req.mutable_spec());  // the master's own conversion
  req.set_request_id(NewRequestId());
  return req;
}

bool Retriable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// Calls `call` with a fresh context until it succeeds, fails for good, or
// --retry-for runs out (retrying UNAVAILABLE and DEADLINE_EXCEEDED with
// backoff and a new connection). The status of the last attempt; *line
// says why it failed, for the user.
template <typename Call>
grpc::Status CallWithRetry(MasterClient& client, const SubmitFlags& f,
                           const std::string& gave_up_hint, Call call,
                           std::string* line) {
  using Clock = std::chrono::steady_clock;
  const auto retry_for = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, f.retry_for_seconds)));
  const auto give_up = Clock::now() + retry_for;
  std::mt19937 jitter(std::random_device{}());
  std::chrono::milliseconds backoff = kFirstBackoff;
  bool told = false;
  while (true) {
    // No attempt outlives the retry window by much (but each gets 1 s).
    auto context = client.Context();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - Clock::now());
    if (left < cli::kRpcDeadline) {
      context->set_deadline(
          std::chrono::system_clock::now() +
          std::max<std::chrono::milliseconds>(left, std::chrono::seconds(1)));
    }
    grpc::Status status = call(context.get());
    if (status.ok()) return status;
    *line = cli::DescribeRpcError(status, f.master, "submit");
    if (!Retriable(status)) return status;
    const auto pause = std::chrono::milliseconds(static_cast<int64_t>(
        backoff.count() *
        std::uniform_real_distribution<double>(0.8, 1.2)(jitter)));
    if (Clock::now() + pause >= give_up) {
      *line = absl::StrFormat("submit: gave up after retrying for %.0f s: %s%s",
                              f.retry_for_seconds, *line, gave_up_hint);
      return status;
    }
    if (!told && isatty(STDERR_FILENO)) {
      std::fprintf(stderr,
                   "tiresias: the master at %s does not answer; retrying for "
                   "up to %.0f s (Ctrl-C to stop)\n",
                   f.master.c_str(), f.retry_for_seconds);
      told = true;
    }
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, kMostBackoff);
    client.Reconnect();
  }
}

}  // namespace

grpc::Status cli::SubmitWithRetry(MasterClient& client, const SubmitFlags& f,
                                  const JobRequest& spec,
                                  v1::SubmitJobResponse* resp,
                                  std::string* line) {
  const v1::SubmitJobRequest req = ToRequest(spec);
  return CallWithRetry(
      client, f,
      absl::StrCat(" (if the master accepted the job meanwhile, `tiresias "
                   "jobs --name ",
                   spec.name, "` shows it)"),
      [&](grpc::ClientContext* context) {
        return client.stub().SubmitJob(context, req, resp);
      },
      line);
}

namespace {

int Submit(const SubmitFlags& f) {
  const std::string hint = f.command.empty()
                               ? " (give the command after --, e.g. `tiresias "
                                 "submit --gpus 1 -- python3 train.py`)"
                               : "";
  if (!f.gpus && !f.nodes && !f.gpus_per_node) {
    return Fail(
        "submit: --gpus (or --nodes with --gpus-per-node) is "
        "required (or --file JOBS.jsonl)");
  }
  // Read and checked once; the client below uses them.
  absl::StatusOr<cli::ClientCredentials> creds = cli::LoadClientCredentials();
  if (!creds.ok()) return Fail(std::string(creds.status().message()));
  absl::StatusOr<JobRequest> spec = SpecFromFlags(f, *creds);
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  // What the master would refuse is refused here, in the same words.
  if (absl::Status valid = ValidateJobRequest(*spec); !valid.ok()) {
    return Fail(absl::StrCat("submit: ", valid.message(), hint));
  }
  const v1::SubmitJobRequest req = ToRequest(*spec);
  MasterClient client(f.master, *std::move(creds));
  v1::SubmitJobResponse resp;
  std::string line;
  grpc::Status status = CallWithRetry(
      client, f,
      absl::StrCat(" (if the master accepted the job meanwhile, `tiresias "
                   "jobs --name ",
                   spec->name, "` shows it)"),
      [&](grpc::ClientContext* context) {
        return client.stub().SubmitJob(context, req, &resp);
      },
      &line);
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      absl::StrAppend(&line, hint);
    }
    return Fail(line);
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::SubmitJson(resp)).c_str());
  } else {
    std::printf("%lld\n", static_cast<long long>(resp.job_id()));
  }
  const int jobs = resp.array_job_ids_size();
  if (jobs > 0 && !f.json) {
    // stdout keeps the one id a script reads; the rest is for people.
    std::fprintf(stderr,
                 "tiresias: array %lld (%s): %d %s, ids %lld-%lld\n",
                 static_cast<long long>(resp.job_id()),
                 FormatJobArray(spec->array).c_str(), jobs,
                 jobs == 1 ? "job" : "jobs",
                 static_cast<long long>(resp.array_job_ids(0)),
                 static_cast<long long>(resp.array_job_ids(jobs - 1)));
  }
  if (!f.wait) return 0;
  std::fflush(stdout);  // the id first: a script may read it while waiting
  if (jobs > 0) return cli::WaitForArray(client, resp.job_id());
  return cli::WaitForJob(client, resp.job_id());
}

int SubmitFile(const SubmitFlags& f) {
  if (f.wait) {
    return Fail("submit: --wait waits for one job, not with --file (poll "
                "`tiresias jobs --json` for a file's jobs)");
  }
  if (f.gpus || f.nodes || f.gpus_per_node || f.tasks_per_node != 0 ||
      !f.name.empty() || !f.checkpoint_dir.empty() || !f.env.empty() ||
      !f.command.empty() || !f.chdir.empty() || !f.output.empty() ||
      !f.error.empty() || !f.time.empty() || !f.signal.empty() ||
      f.no_preempt || f.hold || !f.dependency.empty() || !f.array.empty() ||
      !f.filter.empty()) {
    return Fail(
        "submit: --file takes every job from the file; give no --gpus, "
        "--nodes, --gpus-per-node, --tasks-per-node, --name, --env, "
        "--checkpoint-dir, --chdir, --output, --error, "
        "--time, --signal, --no-preempt, --hold, --dependency, --array, "
        "--gpu-type, --constraint, --nodelist, --exclude, --cpus-per-gpu, "
        "--mem-per-gpu, --cpus, --mem, --exclusive or command "
        "with it "
        "(--export, --vc, --qos and --image apply to every job)");
  }
  // A file's jobs take the caller's environment only when asked: 100,000
  // copies of it would not fit in one request.
  std::map<std::string, std::string> exported;
  if (!f.export_env.empty()) {
    absl::StatusOr<std::map<std::string, std::string>> captured =
        cli::CaptureEnvironment(f.export_env, CallerEnvironment());
    if (!captured.ok()) {
      return Fail(absl::StrCat("submit: ", captured.status().message()));
    }
    exported = *std::move(captured);
  }
  absl::StatusOr<std::string> cwd = CurrentDirectory();
  if (!cwd.ok()) return Fail(std::string(cwd.status().message()));
  absl::StatusOr<cli::ClientCredentials> creds = cli::LoadClientCredentials();
  if (!creds.ok()) return Fail(std::string(creds.status().message()));
  absl::StatusOr<std::vector<cli::JobFileEntry>> entries =
      cli::ReadJobFile(f.file, cli::OwnerToSend(*creds), *cwd);
  if (!entries.ok()) return Fail(std::string(entries.status().message()));
  // --vc, --qos, --image, --begin and --notify: those of every job whose
  // line names none.
  absl::StatusOr<Seconds> begin = BeginFromFlag(f);
  if (!begin.ok()) return Fail(std::string(begin.status().message()));
  for (cli::JobFileEntry& entry : *entries) {
    if (entry.spec.vc.empty()) entry.spec.vc = f.vc;
    if (entry.spec.qos.empty()) entry.spec.qos = f.qos;
    if (entry.spec.image.empty()) entry.spec.image = f.image;
    if (entry.spec.begin <= Seconds{0}) entry.spec.begin = *begin;
    if (entry.spec.notify.empty()) {
      entry.spec.notify = f.notify;
      entry.spec.notify_on = f.notify_on;
    }
  }
  for (cli::JobFileEntry& entry : *entries) {
    if (exported.empty()) break;
    std::map<std::string, std::string> env = exported;
    for (auto& [key, value] : entry.spec.env) env[key] = std::move(value);
    entry.spec.env = std::move(env);
    if (absl::Status valid = ValidateJobRequest(entry.spec); !valid.ok()) {
      return Fail(absl::StrCat(f.file, ":", entry.line,
                               ": with --export: ", valid.message()));
    }
  }
  v1::SubmitJobsRequest req;
  req.mutable_jobs()->Reserve(static_cast<int>(entries->size()));
  for (const cli::JobFileEntry& entry : *entries) {
    *req.add_jobs() = ToRequest(entry.spec).spec();
  }
  req.set_request_id(NewRequestId());
  if (req.ByteSizeLong() > job_limits::kMaxRequestBytes) {
    return Fail(absl::StrFormat(
        "%s: the %d jobs take %.1f MiB; one submission carries at most %d "
        "MiB: split the file",
        f.file, entries->size(), req.ByteSizeLong() / 1048576.0,
        job_limits::kMaxRequestBytes >> 20));
  }
  MasterClient client(f.master, *std::move(creds));
  v1::SubmitJobsResponse resp;
  std::string line;
  grpc::Status status = CallWithRetry(
      client, f,
      absl::StrCat(" (if the master accepted the jobs meanwhile, `tiresias "
                   "jobs` lists them: running the same command again "
                   "submits them again)"),
      [&](grpc::ClientContext* context) {
        return client.stub().SubmitJobs(context, req, &resp);
      },
      &line);
  if (!status.ok()) {
    const std::string& message = status.error_message();
    if (message.rfind("jobs[", 0) == 0) {
      // One job refused: name its line. Nothing was submitted.
      return Fail(absl::StrCat(
          cli::LocateJobError(message, f.file, *entries),
          " (refused by the master; no job of the file was submitted)"));
    }
    return Fail(line);
  }
  if (resp.job_ids_size() != static_cast<int>(entries->size())) {
    return Fail(absl::StrCat("submit: the master answered ",
                             resp.job_ids_size(), " ids for ",
                             entries->size(), " jobs"));
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::SubmitJson(resp)).c_str());
    return 0;
  }
  std::string out;
  out.reserve(resp.job_ids_size() * 8);
  for (int64_t id : resp.job_ids()) absl::StrAppend(&out, id, "\n");
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void AddSubmitCommand(CLI::App& app, int* exit_code) {
  auto submit = std::make_shared<SubmitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "submit",
      "Submit a job; prints its id. The command comes after --, e.g. "
      "`tiresias submit --gpus 2 -- python3 train.py --steps 100`. With "
      "--file JOBS.jsonl, every job of the file, all or none. Retries "
      "safely (the same request id) while the master is unreachable.");
  cli::AddJobFlags(cmd, submit.get());
  cmd->add_option("--file", submit->file,
                  "Submit every job of JOBS.jsonl (- for standard input) "
                  "together, all or none: one JSON object per line with the "
                  "fields gpus, command (an array), nodes, gpus_per_node, "
                  "tasks_per_node, name, env (an object), "
                  "checkpoint_dir, chdir, output, error, time (as --time), "
                  "signal (as --signal), "
                  "no_preempt, hold, exclusive (booleans), dependency (as "
                  "--dependency), gpu_type, constraint, nodelist, exclude, "
                  "cpus_per_gpu, mem_per_gpu, cpus, mem (as their flags); "
                  "prints their "
                  "ids, one per line");
  cmd->add_flag("--json", submit->json,
                "Print the answer as JSON: {\"job_id\": ...} (with "
                "--array also \"array_job_ids\": [...]) or, with --file, "
                "{\"job_ids\": [...]}");
  cmd->add_flag("--wait", submit->wait,
                "After printing the id, wait until the job ends (with "
                "--array: every job of the array, exiting with the highest "
                "of their codes) and exit with "
                "its exit code: 0 finished, the job's code if it failed "
                "(128 + N if signal N ended it), 125 if it was cancelled, "
                "124 if it was stopped at its --time limit; Ctrl-C stops "
                "waiting, not the job");
  cmd->add_option("--array,-a", submit->array,
                  "Submit a job array, one job per index, as Slurm writes "
                  "it: 0-99, 1,3,5, 0-15:4 (a step), 1-3,7, with %N for at "
                  "most N of them running at once (0-99%8). Each job gets "
                  "TIRESIAS_ARRAY_JOB_ID (the array's id: its first job's), "
                  "TIRESIAS_ARRAY_TASK_ID (its index), and _COUNT, _MIN, "
                  "_MAX; %t in --output is the index. At most 10,000 "
                  "indices, each 0 to 4,000,000. Prints the array's id "
                  "(all jobs are made, or none)")
      ->allow_extra_args(false);
  cmd->callback([submit, exit_code] {
    *exit_code = submit->file.empty() ? Submit(*submit) : SubmitFile(*submit);
  });
}

}  // namespace tiresias
