// `tiresias cancel`, `hold`, `release` and `requeue`: one UpdateJobs call
// (one round trip, one transaction on the master) for several job ids or
// for every unfinished job matching a filter (--user, --state, --name,
// --array).
// Each job gets a line saying what became of it; the exit code is 0 when
// every job named was acted on (or needed nothing), else 1.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"
#include "cli/shell_help.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct JobControlFlags {
  std::string master;
  bool hold = false;             // requeue --hold
  std::vector<std::string> ids;  // ids or ARRAYID_INDEX (cli/job_ref.h)
  std::string user;
  std::string state;
  std::string name;
  int64_t array = 0;  // --array: every unfinished job of this array
  bool json = false;
};

struct ActionText {
  const char* command;  // "cancel"
  v1::JobAction action;
  const char* done;     // "cancelled"
  const char* help;
};

constexpr ActionText kActions[] = {
    {"cancel", v1::JOB_ACTION_CANCEL, "cancelled",
     "Cancel jobs, by id (several at once) or by filter (--user, --state, "
     "--name, --array); running ones are stopped (SIGTERM, grace, "
     "SIGKILL)"},
    {"hold", v1::JOB_ACTION_HOLD, "held",
     "Hold pending or preempted jobs: they are not started until released"},
    {"release", v1::JOB_ACTION_RELEASE, "released",
     "Release held jobs: they wait in their queue again"},
    {"requeue", v1::JOB_ACTION_REQUEUE, "requeued",
     "Stop running jobs as a preemption (they checkpoint) and put them back "
     "in the queue; they run again as their next attempt"},
};

// The request the flags describe, or a one-line error naming the flag.
absl::StatusOr<v1::UpdateJobsRequest> RequestFrom(const ActionText& what,
                                                  const JobControlFlags& f,
                                                  MasterClient& client) {
  v1::UpdateJobsRequest req;
  req.set_action(what.action == v1::JOB_ACTION_REQUEUE && f.hold
                     ? v1::JOB_ACTION_REQUEUE_HOLD
                     : what.action);
  if (f.array < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--array ", f.array, ": expected an array's id (its first job's)"));
  }
  const bool by_filter = !f.user.empty() || !f.state.empty() ||
                         !f.name.empty() || f.array > 0;
  if (by_filter && !f.ids.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what.command, ": give job ids or filters (--user, --state, --name, "
                      "--array), not both"));
  }
  if (!by_filter && f.ids.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what.command, ": expected job ids, or at least one filter of "
                      "--user, --state, --name, --array"));
  }
  req.set_array_id(f.array);
  for (const std::string& ref : f.ids) {
    absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, ref);
    if (!id.ok()) {
      return absl::Status(id.status().code(),
                          absl::StrCat(what.command, ": ",
                                       id.status().message()));
    }
    req.add_job_ids(*id);
  }
  if (!f.state.empty()) {
    v1::JobState state;
    if (!cli::ParseJobStateName(f.state, &state)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--state ", f.state,
          ": expected pending, starting, running or preempted"));
    }
    req.set_state(state);
  }
  req.set_user(f.user);
  req.set_name(f.name);
  return req;
}

int Run(const ActionText& what, const JobControlFlags& f) {
  MasterClient client(f.master);
  absl::StatusOr<v1::UpdateJobsRequest> req = RequestFrom(what, f, client);
  if (!req.ok()) return Fail(std::string(req.status().message()));
  v1::UpdateJobsResponse resp;
  grpc::Status status =
      client.stub().UpdateJobs(client.Context().get(), *req, &resp);
  if (!status.ok()) {
    return Fail(cli::DescribeRpcError(status, f.master, what.command));
  }
  int refused = 0;
  for (const v1::JobActionResult& r : resp.results()) {
    if (r.code() != 0) ++refused;
  }
  if (f.json) {
    std::printf("%s\n", api::Dump(api::UpdateJobsJson(resp)).c_str());
    return refused > 0 ? 1 : 0;
  }
  if (resp.results().empty()) {
    std::printf("no unfinished job matches\n");
    return 0;
  }
  for (const v1::JobActionResult& r : resp.results()) {
    const long long id = static_cast<long long>(r.job_id());
    if (r.code() != 0) {
      const grpc::Status refused(static_cast<grpc::StatusCode>(r.code()),
                                 cli::Printable(r.error()));
      std::fprintf(stderr, "tiresias: %s\n",
                   cli::DescribeRpcError(refused, f.master,
                                         absl::StrCat(what.command, " job ",
                                                      id))
                       .c_str());
      continue;
    }
    const std::string state = cli::JobStateName(r.state());
    if (r.unchanged()) {
      std::printf("job %lld: nothing to do (%s%s)\n", id, state.c_str(),
                  r.held() ? ", held" : "");
    } else if (what.action == v1::JOB_ACTION_CANCEL &&
               !cli::IsFinal(r.state())) {
      std::printf("job %lld is being stopped; it becomes cancelled when its "
                  "tasks exit\n", id);
    } else if (what.action == v1::JOB_ACTION_REQUEUE && f.hold) {
      std::printf(
          "job %lld requeued and held (%s): it runs again as its "
          "next attempt once released\n",
          id, state.c_str());
    } else if (what.action == v1::JOB_ACTION_REQUEUE) {
      std::printf("job %lld requeued (%s): it runs again as its next "
                  "attempt\n", id, state.c_str());
    } else {
      std::printf("job %lld %s\n", id, what.done);
    }
  }
  return refused > 0 ? 1 : 0;
}

}  // namespace

void AddJobControlCommands(CLI::App& app, int* exit_code) {
  for (const ActionText& what : kActions) {
    auto f = std::make_shared<JobControlFlags>();
    CLI::App* cmd = app.add_subcommand(what.command, what.help);
    cli::AddMasterFlag(cmd, &f->master);
    cmd->add_option("ids", f->ids,
                    "Job ids, or jobs of an array as ARRAYID_INDEX (e.g. "
                    "12_3)")
        ->type_name(cli::kJobType);
    cmd->add_option("--user", f->user,
                    "Every unfinished job of this user (others' jobs: "
                    "admins only)");
    cmd->add_option("--state", f->state,
                    "Every unfinished job in this state: pending, starting, "
                    "running or preempted");
    cmd->add_option("--name", f->name,
                    "Every unfinished job with exactly this name");
    cmd->add_option("--array", f->array,
                    "Every unfinished job of this array (the id `submit "
                    "--array` printed; Slurm's `scancel ARRAY`)")
        ->type_name(cli::kJobType);
    cmd->add_flag("--json", f->json,
                  "Print the master's answer as JSON (a result per job)");
    if (what.action == v1::JOB_ACTION_REQUEUE) {
      cmd->add_flag("--hold", f->hold,
                    "Hold the jobs in the same step (Slurm's `scontrol "
                    "requeuehold`): they do not start again until "
                    "released; a waiting job is held");
    }
    const ActionText* action = &what;
    cmd->callback(
        [f, action, exit_code] { *exit_code = Run(*action, *f); });
  }
}

}  // namespace tiresias
