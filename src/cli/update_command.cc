// `tiresias update JOB... --time T --gpus N --qos NAME --begin WHEN`
// (Slurm's `scontrol update JobId=...`): changes waiting jobs' requests,
// one ModifyJob call per job. Each job gets a line saying what it is now;
// the exit code is 0 when every job was changed, else 1.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"
#include "cli/shell_help.h"
#include "cli/time_arg.h"
#include "cli/time_limit.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct UpdateFlags {
  std::string master;
  std::vector<std::string> ids;  // ids or ARRAYID_INDEX (cli/job_ref.h)
  std::string time;
  std::optional<int> gpus;
  std::optional<std::string> qos;
  std::string begin;
  bool json = false;
};

// The fields of the request the flags set, or a one-line error naming the
// flag.
absl::StatusOr<v1::ModifyJobRequest> ChangesFrom(const UpdateFlags& f) {
  v1::ModifyJobRequest req;
  if (!f.time.empty()) {
    absl::StatusOr<double> limit = cli::ParseTimeLimit("--time", f.time);
    if (!limit.ok()) return limit.status();
    req.set_time_limit_seconds(*limit);
  }
  if (f.gpus) req.set_gpus(*f.gpus);
  if (f.qos) req.set_qos(*f.qos);
  if (!f.begin.empty()) {
    absl::StatusOr<double> begin =
        cli::ParseBeginTime("--begin", f.begin, cli::NowUnixSeconds());
    if (!begin.ok()) return begin.status();
    req.set_begin_time(*begin);
  }
  if (!req.has_time_limit_seconds() && !req.has_gpus() && !req.has_qos() &&
      !req.has_begin_time()) {
    return absl::InvalidArgumentError(
        "update: nothing to change; give --time, --gpus, --qos (--priority) "
        "or --begin");
  }
  return req;
}

// "2 GPUs, time limit 0:30:00, QOS high, begins 2026-12-05 16:00:00": the
// fields `req` changed, as the job has them now.
std::string Describe(const v1::ModifyJobRequest& req, const v1::Job& job) {
  std::vector<std::string> parts;
  const v1::JobSpec& spec = job.spec();
  if (req.has_gpus()) {
    parts.push_back(
        absl::StrCat(spec.gpus(), spec.gpus() == 1 ? " GPU" : " GPUs"));
  }
  if (req.has_time_limit_seconds()) {
    parts.push_back(
        spec.time_limit_seconds() > 0
            ? absl::StrCat("time limit ",
                           cli::FormatDuration(spec.time_limit_seconds()))
            : std::string("no time limit"));
  }
  if (req.has_qos()) {
    parts.push_back(spec.qos().empty()
                        ? std::string("no QOS")
                        : absl::StrCat("QOS ", cli::Printable(spec.qos())));
  }
  if (req.has_begin_time()) {
    parts.push_back(
        spec.begin_time() > 0
            ? absl::StrCat("begins ", cli::FormatTime(spec.begin_time()))
            : std::string("no begin time"));
  }
  return absl::StrJoin(parts, ", ");
}

int Run(const UpdateFlags& f) {
  absl::StatusOr<v1::ModifyJobRequest> changes = ChangesFrom(f);
  if (!changes.ok()) return Fail(std::string(changes.status().message()));
  MasterClient client(f.master);
  int refused = 0;
  for (const std::string& ref : f.ids) {
    absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, ref);
    if (!id.ok()) {
      std::fprintf(stderr, "tiresias: update: %s\n",
                   std::string(id.status().message()).c_str());
      ++refused;
      continue;
    }
    v1::ModifyJobRequest req = *changes;
    req.set_job_id(*id);
    v1::ModifyJobResponse resp;
    grpc::Status status =
        client.stub().ModifyJob(client.Context().get(), req, &resp);
    if (!status.ok()) {
      std::fprintf(stderr, "tiresias: %s\n",
                   cli::DescribeRpcError(
                       status, f.master,
                       absl::StrCat("update job ", static_cast<long long>(*id)))
                       .c_str());
      ++refused;
      continue;
    }
    if (f.json) {
      std::printf("%s\n",
                  api::Dump(api::JobJson(resp.job(), api::JobView::kDetail,
                                         cli::NowUnixSeconds()))
                      .c_str());
      continue;
    }
    std::printf("job %lld updated (%s): %s\n", static_cast<long long>(*id),
                cli::JobStateName(resp.job().state()).c_str(),
                Describe(req, resp.job()).c_str());
  }
  return refused > 0 ? 1 : 0;
}

}  // namespace

void AddUpdateCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<UpdateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "update",
      "Change waiting jobs (Slurm's `scontrol update`): time limit, GPUs, "
      "QOS or begin time; each keeps its id, queue and place. A running "
      "job's time limit alone (requeue --hold it to change the rest)");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("ids", f->ids,
                  "Job ids, or jobs of an array as ARRAYID_INDEX (e.g. 12_3)")
      ->required()
      ->type_name(cli::kJobType);
  cmd->add_option("--time", f->time,
                  "New time limit, as `submit --time` takes it (0: none)");
  cmd->add_option("--gpus", f->gpus,
                  "New GPU count (a job with --nodes keeps its node count: a "
                  "multiple of it)");
  cmd->add_option("--qos,--priority", f->qos,
                  "New priority level (QOS; \"\" for none): one you may use, "
                  "see `tiresias qos list`");
  cmd->add_option("--begin", f->begin,
                  "New start time, as `submit --begin` takes it; now: none. "
                  "Only for a job that never ran");
  cmd->add_flag("--json", f->json, "Print each job as `job --json` does");
  cmd->callback([f, exit_code] { *exit_code = Run(*f); });
}

}  // namespace tiresias
