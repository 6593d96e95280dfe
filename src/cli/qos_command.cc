// `tiresias qos list` (anyone) and `tiresias admin qos create|set|remove`
// (an admin): priority levels (QOS), who may use each, and what their jobs
// use now.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/api_json.h"
#include "cli/admin_command.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct QosFlags {
  std::string master;
  std::string name;
  bool json = false;
  // create / set: each given one changes the QOS.
  std::optional<int> priority;
  bool allow_no_preempt = false;         // --allow-no-preempt
  bool deny_no_preempt = false;          // --deny-no-preempt
  std::optional<int> max_gpus_per_user;  // -1: no limit
  std::optional<std::string> users;      // comma-separated; "*": everyone
  std::optional<std::string> vcs;        // comma-separated
  std::optional<std::string> description;
  std::vector<std::string> add_users, remove_users, add_vcs, remove_vcs;
};

std::vector<std::string> Names(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipWhitespace());
}

// `list` as given, plus `add`, less `remove` (each of which must be there:
// an error names `flag`).
absl::Status Edit(google::protobuf::RepeatedPtrField<std::string>* list,
                  const std::optional<std::string>& replace,
                  const std::vector<std::string>& add,
                  const std::vector<std::string>& remove,
                  std::string_view flag) {
  std::vector<std::string> now(list->begin(), list->end());
  if (replace) now = Names(*replace);
  for (const std::string& name : add) now.push_back(name);
  for (const std::string& name : remove) {
    auto it = std::find(now.begin(), now.end(), name);
    if (it == now.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(flag), ": ", name, " is not in the list (",
                       now.empty() ? "empty" : absl::StrJoin(now, ","), ")"));
    }
    now.erase(it);
  }
  list->Assign(now.begin(), now.end());
  return absl::OkStatus();
}

absl::Status Apply(const QosFlags& f, v1::Qos* qos) {
  if (f.priority) qos->set_priority(*f.priority);
  if (f.allow_no_preempt && f.deny_no_preempt) {
    return absl::InvalidArgumentError(
        "--allow-no-preempt and --deny-no-preempt: expected one of them");
  }
  if (f.allow_no_preempt) qos->set_allow_no_preempt(true);
  if (f.deny_no_preempt) qos->set_allow_no_preempt(false);
  if (f.max_gpus_per_user) {
    if (*f.max_gpus_per_user < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-gpus-per-user: expected a GPU count or -1 (no "
                       "limit), got ",
                       *f.max_gpus_per_user));
    }
    qos->set_max_gpus_per_user(*f.max_gpus_per_user);
  }
  if (f.description) qos->set_description(*f.description);
  if (absl::Status s = Edit(qos->mutable_users(), f.users, f.add_users,
                            f.remove_users, "--remove-user");
      !s.ok()) {
    return s;
  }
  return Edit(qos->mutable_vcs(), f.vcs, f.add_vcs, f.remove_vcs,
              "--remove-vc");
}

absl::StatusOr<v1::ListQosResponse> List(MasterClient& client,
                                         const std::string& master,
                                         const std::string& what) {
  v1::ListQosResponse resp;
  grpc::Status s = client.stub().ListQos(client.Context().get(), {}, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(cli::DescribeRpcError(s, master, what));
  }
  return resp;
}

std::string Limit(int32_t n) { return n < 0 ? "-" : absl::StrCat(n); }

std::string Who(const v1::Qos& q) {
  std::vector<std::string> who(q.users().begin(), q.users().end());
  for (const std::string& vc : q.vcs()) who.push_back("vc:" + vc);
  return who.empty() ? std::string("admins") : absl::StrJoin(who, ",");
}

int SetQos(const QosFlags& f, bool create) {
  const std::string what =
      absl::StrCat("admin qos ", create ? "create " : "set ", f.name);
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::SetQosRequest req;
  req.set_create(create);
  v1::Qos* qos = req.mutable_qos();
  std::optional<std::string> local;  // a problem found before sending
  grpc::Status s = cli::RetryWhileAborted([&] {
    qos->Clear();
    if (!create) {
      absl::StatusOr<v1::ListQosResponse> levels = List(client, f.master, what);
      if (!levels.ok()) {
        local = std::string(levels.status().message());
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, *local);
      }
      bool found = false;
      for (const v1::QosStatus& status : levels->qos()) {
        if (status.qos().name() == f.name) *qos = status.qos(), found = true;
      }
      if (!found) {
        local = absl::StrCat(what, ": no QOS \"", f.name,
                             "\" (`tiresias qos list`)");
        return grpc::Status(grpc::StatusCode::NOT_FOUND, *local);
      }
      *req.mutable_expected() = *qos;
    } else {
      qos->set_name(f.name);
      qos->set_max_gpus_per_user(-1);
    }
    if (absl::Status applied = Apply(f, qos); !applied.ok()) {
      local = absl::StrCat(what, ": ", applied.message());
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *local);
    }
    v1::SetQosResponse resp;
    return stub->SetQos(client.Context().get(), req, &resp);
  });
  if (local) return Fail(*local);
  if (!s.ok()) return Fail(cli::DescribeRpcError(s, f.master, what));
  std::printf(
      "QOS %s %s: priority %d, --no-preempt %s, max GPUs per user %s, for "
      "%s\n",
      cli::Printable(f.name).c_str(), create ? "created" : "changed",
      qos->priority(), qos->allow_no_preempt() ? "allowed" : "not allowed",
      qos->max_gpus_per_user() < 0
          ? "none"
          : absl::StrCat(qos->max_gpus_per_user()).c_str(),
      cli::Printable(Who(*qos)).c_str());
  return 0;
}

int RemoveQos(const QosFlags& f) {
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::RemoveQosRequest req;
  req.set_name(f.name);
  v1::RemoveQosResponse resp;
  grpc::Status s = stub->RemoveQos(client.Context().get(), req, &resp);
  if (!s.ok()) {
    return Fail(cli::DescribeRpcError(
        s, f.master, absl::StrCat("admin qos remove ", f.name)));
  }
  std::printf("QOS %s removed\n", cli::Printable(f.name).c_str());
  return 0;
}

int ListQos(const QosFlags& f) {
  MasterClient client(f.master);
  absl::StatusOr<v1::ListQosResponse> levels =
      List(client, f.master, "qos list");
  if (!levels.ok()) return Fail(std::string(levels.status().message()));
  if (f.json) {
    std::printf("%s\n", api::Dump(api::QosListJson(*levels)).c_str());
    return 0;
  }
  if (levels->qos().empty()) {
    std::printf(
        "no QOS: every job has the same priority level (an admin makes one "
        "with `tiresias admin qos create`)\n");
    return 0;
  }
  std::printf("%-16s %8s %-10s %9s %7s %7s %5s %s\n", "QOS", "PRIORITY",
              "NO-PREEMPT", "GPUS/USER", "RUNNING", "WAITING", "GPUS", "FOR");
  for (const v1::QosStatus& s : levels->qos()) {
    const v1::Qos& q = s.qos();
    std::printf("%-16s %8d %-10s %9s %7d %7d %5d %s\n",
                cli::Printable(q.name()).c_str(), q.priority(),
                q.allow_no_preempt() ? "allowed" : "-",
                Limit(q.max_gpus_per_user()).c_str(), s.running_jobs(),
                s.waiting_jobs(), s.gpus(), cli::Printable(Who(q)).c_str());
  }
  return 0;
}

void AddSettingFlags(CLI::App* cmd, QosFlags* f, bool create) {
  cmd->add_option("--priority", f->priority,
                  "-1000 to 1000; higher runs first, before every job of a "
                  "lower level (0: as jobs without a QOS; default 0)");
  cmd->add_flag("--allow-no-preempt", f->allow_no_preempt,
                "Its jobs may ask never to be preempted (submit "
                "--no-preempt; default: they may not)");
  if (!create) {
    cmd->add_flag("--deny-no-preempt", f->deny_no_preempt,
                  "Its jobs may no longer ask never to be preempted (those "
                  "submitted so keep it)");
  }
  cmd->add_option("--max-gpus-per-user", f->max_gpus_per_user,
                  "GPUs one user's running jobs of it may hold at once; -1: "
                  "no limit (default)");
  cmd->add_option("--users", f->users,
                  "Who may use it: user,user,... or * for everyone "
                  "(replaces the list; admins may use any QOS)");
  cmd->add_option("--vcs", f->vcs,
                  "VCs whose members may use it for jobs in that VC: "
                  "vc,vc,... (replaces the list)");
  cmd->add_option("--description", f->description, "Free text");
  if (create) return;
  cmd->add_option("--add-user", f->add_users, "Add a user (repeatable)");
  cmd->add_option("--remove-user", f->remove_users,
                  "Remove a user (repeatable)");
  cmd->add_option("--add-vc", f->add_vcs, "Add a VC (repeatable)");
  cmd->add_option("--remove-vc", f->remove_vcs, "Remove a VC (repeatable)");
}

}  // namespace

void AddQosCommands(CLI::App& app, int* exit_code) {
  CLI::App* qos = app.add_subcommand(
      "qos", "Priority levels (QOS): who may use each and what they use");
  qos->require_subcommand(1);
  auto list = std::make_shared<QosFlags>();
  CLI::App* cmd = qos->add_subcommand(
      "list",
      "Every QOS, highest priority first: its limits, who may use it, and "
      "its jobs");
  cli::AddMasterFlag(cmd, &list->master);
  cmd->add_flag("--json", list->json, "Print as JSON");
  cmd->callback([list, exit_code] { *exit_code = ListQos(*list); });
}

void AddAdminQosCommands(CLI::App* admin, int* exit_code) {
  CLI::App* qos = admin->add_subcommand(
      "qos",
      "Create, change and remove priority levels (needs an admin token)");
  qos->require_subcommand(1);
  auto create = std::make_shared<QosFlags>();
  CLI::App* cmd = qos->add_subcommand("create", "A new QOS");
  cli::AddMasterFlag(cmd, &create->master);
  cmd->add_option("name", create->name, "Its name")->required();
  AddSettingFlags(cmd, create.get(), /*create=*/true);
  cmd->callback([create, exit_code] { *exit_code = SetQos(*create, true); });
  auto set = std::make_shared<QosFlags>();
  cmd = qos->add_subcommand(
      "set",
      "Change a QOS: the flags given, the rest as it is; applies at once to "
      "its waiting and running jobs");
  cli::AddMasterFlag(cmd, &set->master);
  cmd->add_option("name", set->name, "The QOS")->required();
  AddSettingFlags(cmd, set.get(), /*create=*/false);
  cmd->callback([set, exit_code] { *exit_code = SetQos(*set, false); });
  auto remove = std::make_shared<QosFlags>();
  cmd = qos->add_subcommand(
      "remove", "Remove a QOS (refused while a job of it is unfinished)");
  cli::AddMasterFlag(cmd, &remove->master);
  cmd->add_option("name", remove->name, "The QOS")->required();
  cmd->callback([remove, exit_code] { *exit_code = RemoveQos(*remove); });
}

}  // namespace tiresias
