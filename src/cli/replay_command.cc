// `tiresias replay`: a trace submitted to a running cluster at its arrival
// times scaled by --time-scale, each job a task that runs its scaled
// duration (and resumes where it stopped after a preemption), waited for,
// and summarized as `simulate` summarizes, in trace seconds (real seconds
// divided by the scale), so `tiresias compare` can put a real run beside a
// simulated one: the paper's testbed-vs-simulator check.
//
// `tiresias compare A.json B.json`: two summary.json files side by side.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/progress.h"
#include "core/status_macros.h"
#include "report/files.h"
#include "report/html_format.h"
#include "report/summary_output.h"
#include "sim/metrics.h"
#include "trace/trace_reader.h"

#ifndef TIRESIAS_VERSION
#define TIRESIAS_VERSION "dev"
#endif

namespace tiresias {
namespace {

// The task of a replayed job: runs `remaining` seconds (first argument),
// keeping what is left in its checkpoint folder, so that a preempted run
// resumes where it stopped, as the simulator assumes; exits 0 on SIGTERM
// after saving.
constexpr char kReplayTask[] = R"PY(
import os, signal, sys, time
total = float(sys.argv[1])
path = os.path.join(os.environ.get("TIRESIAS_CHECKPOINT_DIR", "."), "remaining")
try:
    left = float(open(path).read())
except (OSError, ValueError):
    left = total
start = time.monotonic()
def save(*_):
    done = time.monotonic() - start
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(repr(max(0.0, left - done)))
    os.replace(path + ".tmp", path)
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
while (rest := left - (time.monotonic() - start)) > 0:
    time.sleep(min(0.05, rest))
)PY";

struct ReplayFlags {
  std::string master;
  std::string trace;
  std::string format = "auto";
  double time_scale = 0.01;
  std::string out;
  std::string python = "/usr/bin/python3";
  double max_wait_s = 3600;
};

absl::Status Replay(const ReplayFlags& f) {
  if (!(f.time_scale > 0) || !std::isfinite(f.time_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--time-scale ", f.time_scale,
                     ": expected a positive factor (real s = trace s x F)"));
  }
  ASSIGN_OR_RETURN(TraceFormat format, ParseTraceFormat(f.format));
  std::vector<std::string> notes;
  ASSIGN_OR_RETURN(std::vector<JobSpec> jobs, ReadTrace(f.trace, format, &notes));
  for (const std::string& note : notes) {
    std::fprintf(stderr, "tiresias: %s\n", note.c_str());
  }
  if (jobs.empty()) return absl::InvalidArgumentError(f.trace + ": no jobs");
  for (const JobSpec& j : jobs) {
    if (!j.duration) {
      return absl::InvalidArgumentError(absl::StrCat(
          f.trace, ": job ", j.id, " has no duration to replay"));
    }
  }
  absl::StatusOr<cli::ClientCredentials> creds = cli::LoadClientCredentials();
  if (!creds.ok()) return creds.status();
  const std::string owner = cli::OwnerToSend(*creds);
  cli::MasterClient client(f.master, *std::move(creds));
  v1::ClusterStatus status;
  grpc::Status got =
      client.stub().GetClusterStatus(client.Context().get(), {}, &status);
  if (!got.ok()) {
    return absl::UnavailableError(
        cli::DescribeRpcError(got, client.address(), "replay"));
  }
  const double first = jobs.front().submit_time.count();
  const auto t0 = std::chrono::system_clock::now();
  const double t0_unix =
      std::chrono::duration<double>(t0.time_since_epoch()).count();
  std::map<int64_t, const JobSpec*> by_master_id;
  std::atomic<int> submitted{0}, finished{0};  // read by the progress line
  ProgressLine line([&] {
    return absl::StrFormat("replay: %d of %d jobs submitted, %d ended",
                           submitted.load(), jobs.size(), finished.load());
  });
  for (const JobSpec& j : jobs) {
    const double due = (j.submit_time.count() - first) * f.time_scale;
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                 std::chrono::duration<double>(due)));
    v1::SubmitJobRequest req;
    v1::JobSpec* spec = req.mutable_spec();
    spec->set_name(absl::StrCat("replay-", j.id));
    spec->set_gpus(j.num_gpus);
    spec->set_user(owner);
    if (!j.model.empty()) spec->set_model(j.model);
    for (const std::string& arg :
         {f.python, std::string("-c"), std::string(kReplayTask),
          absl::StrFormat("%.6f", j.duration->count() * f.time_scale)}) {
      spec->add_command(arg);
    }
    v1::SubmitJobResponse resp;
    grpc::Status s = client.stub().SubmitJob(client.Context().get(), req, &resp);
    if (!s.ok()) {
      return absl::FailedPreconditionError(cli::DescribeRpcError(
          s, client.address(), absl::StrCat("replay: job ", j.id)));
    }
    by_master_id[resp.job_id()] = &j;
    ++submitted;
  }
  // Wait for every job to end.
  SimResult result;
  result.policy = status.policy();
  result.placement = status.placement();
  result.total_gpus = static_cast<int>(status.gpus());
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::duration<double>(f.max_wait_s));
  std::map<int64_t, v1::Job> ended;
  while (ended.size() < by_master_id.size()) {
    for (const auto& [id, spec] : by_master_id) {
      if (ended.contains(id)) continue;
      v1::GetJobRequest req;
      req.set_job_id(id);
      v1::GetJobResponse resp;
      grpc::Status s = client.stub().GetJob(client.Context().get(), req, &resp);
      if (s.ok() && cli::IsFinal(resp.job().state())) {
        ended[id] = resp.job();
        ++finished;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "replay: ", by_master_id.size() - ended.size(), " of ",
          by_master_id.size(), " jobs still unfinished after ", f.max_wait_s,
          " s (--max-wait)"));
    }
    if (ended.size() < by_master_id.size()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  // In trace seconds: real seconds since the first submission / scale.
  auto trace_time = [&](double unix_s) {
    return first + (unix_s - t0_unix) / f.time_scale;
  };
  result.first_submit = first;
  for (const auto& [id, job] : ended) {
    const JobSpec& spec = *by_master_id.at(id);
    if (job.state() != v1::JOB_STATE_FINISHED) {
      std::fprintf(stderr, "tiresias: replay: job %lld (trace job %lld) %s\n",
                   static_cast<long long>(id),
                   static_cast<long long>(spec.id),
                   cli::JobStateName(job.state()).c_str());
    }
    JobResult r{};
    r.id = spec.id;
    r.gpus = spec.num_gpus;
    r.model = spec.model;
    r.submit = spec.submit_time.count();
    r.first_start = job.has_first_start_time()
                        ? trace_time(job.first_start_time())
                        : r.submit;
    r.end = job.has_end_time() ? trace_time(job.end_time()) : r.submit;
    r.duration = spec.duration->count();
    r.executed = job.total_executed_seconds() / f.time_scale;
    r.preemptions = static_cast<int>(job.preemptions());
    r.promotions = static_cast<int>(job.promotions());
    result.preemptions += r.preemptions;
    result.busy_gpu_seconds += r.gpus * r.executed;
    result.last_end = std::max(result.last_end, r.end);
    result.jobs.push_back(r);
  }
  std::sort(result.jobs.begin(), result.jobs.end(),
            [](const JobResult& a, const JobResult& b) { return a.id < b.id; });
  const Summary summary = Summarize(result);
  RunInfo info;
  info.command = "tiresias replay";
  info.version = TIRESIAS_VERSION;
  info.trace = f.trace;
  info.cluster_description =
      absl::StrCat("a real cluster: ", status.nodes_up(), " nodes, ",
                   status.gpus(), " GPUs (", f.master, ")");
  info.gpus = static_cast<int>(status.gpus());
  info.servers = static_cast<int>(status.nodes_up());
  info.parameters = {{"time_scale", f.time_scale}, {"replayed", true}};
  const std::string json = SummaryJson(info, {summary}).dump(2) + "\n";
  if (!f.out.empty()) {
    RETURN_IF_ERROR(EnsureFolder(f.out));
    RETURN_IF_ERROR(WriteFileAtomically(f.out + "/summary.json", json));
    RETURN_IF_ERROR(WriteFileAtomically(
        f.out + "/" + result.policy + "_jobs.csv", JobsCsv(result)));
  }
  std::fputs(FormatSummaryTable({summary}, "").c_str(), stdout);
  return absl::OkStatus();
}

// --- compare ---------------------------------------------------------------

absl::StatusOr<nlohmann::json> ReadSummary(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("policies") ||
      !doc["policies"].is_array()) {
    return absl::InvalidArgumentError(
        path + ": not a summary.json (expected an object with 'policies')");
  }
  return doc;
}

double Field(const nlohmann::json& policy, const char* key) {
  auto it = policy.find(key);
  return it != policy.end() && it->is_number() ? it->get<double>() : NAN;
}

absl::Status Compare(const std::string& a_path, const std::string& b_path) {
  ASSIGN_OR_RETURN(nlohmann::json a, ReadSummary(a_path));
  ASSIGN_OR_RETURN(nlohmann::json b, ReadSummary(b_path));
  const nlohmann::json::json_pointer where("/cluster/description");
  std::printf("A: %s (%s)\nB: %s (%s)\n\n", a_path.c_str(),
              a.value(where, "").c_str(), b_path.c_str(),
              b.value(where, "").c_str());
  std::printf("%-15s %-16s %10s %10s %7s\n", "policy", "metric", "A", "B",
              "B/A");
  int shared = 0;
  for (const nlohmann::json& pa : a["policies"]) {
    for (const nlohmann::json& pb : b["policies"]) {
      if (pa.value("name", "") != pb.value("name", "")) continue;
      ++shared;
      for (const char* key : {"avg_jct_s", "median_jct_s", "p95_jct_s",
                              "avg_queueing_s", "makespan_s"}) {
        const double va = Field(pa, key), vb = Field(pb, key);
        std::printf("%-15s %-16s %10s %10s %7s\n",
                    pa.value("name", "").c_str(), key,
                    FormatDuration(va).c_str(), FormatDuration(vb).c_str(),
                    va > 0 ? absl::StrFormat("%.3f", vb / va).c_str() : "-");
      }
      const double va = Field(pa, "preemptions"), vb = Field(pb, "preemptions");
      std::printf("%-15s %-16s %10.0f %10.0f %7s\n",
                  pa.value("name", "").c_str(), "preemptions", va, vb,
                  va > 0 ? absl::StrFormat("%.3f", vb / va).c_str() : "-");
    }
  }
  if (shared == 0) {
    return absl::InvalidArgumentError(
        "compare: no policy is in both summaries");
  }
  return absl::OkStatus();
}

}  // namespace

void AddReplayCommands(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ReplayFlags>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Submit a trace to a running cluster at its arrival times scaled by "
      "--time-scale (real seconds = trace seconds x F); each job runs its "
      "scaled duration and resumes where it stopped after a preemption. "
      "Waits for every job, then prints and (--out) writes the summary as "
      "`simulate` does, in trace seconds, for `tiresias compare`.");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--trace", f->trace, "The trace (any format simulate reads)")
      ->required();
  cmd->add_option("--trace-format", f->format, "auto, tiresias, philly, ...")
      ->capture_default_str();
  cmd->add_option("--time-scale", f->time_scale,
                  "Real seconds per trace second")
      ->capture_default_str();
  cmd->add_option("--out", f->out, "Folder for summary.json and the jobs CSV");
  cmd->add_option("--python", f->python,
                  "The Python the jobs run with (on the agents)")
      ->capture_default_str();
  cmd->add_option("--max-wait", f->max_wait_s,
                  "Seconds to wait for the jobs to end")
      ->capture_default_str();
  cmd->callback([f, exit_code] {
    if (absl::Status s = Replay(*f); !s.ok()) {
      *exit_code = cli::Fail(std::string(s.message()));
    }
  });

  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Put two summary.json files side by side (e.g. `tiresias replay` on a "
      "real cluster and `simulate` of the same trace): per policy in both, "
      "JCT, queueing, makespan and preemptions, and B/A.");
  compare->add_option("summaries", *paths, "A.json B.json")
      ->required()
      ->expected(2);
  compare->callback([paths, exit_code] {
    if (absl::Status s = Compare((*paths)[0], (*paths)[1]); !s.ok()) {
      *exit_code = cli::Fail(std::string(s.message()));
    }
  });
}

}  // namespace tiresias
