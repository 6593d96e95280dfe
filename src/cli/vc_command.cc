// `tiresias vc list|show` (anyone) and `tiresias admin vc
// create|set|remove` (an admin): virtual clusters (teams), their quotas in
// cells, limits, members and what each uses now.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/api_json.h"
#include "cli/admin_command.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct VcFlags {
  std::string master;
  std::string name;
  bool json = false;
  // create / set: each given one changes the VC.
  std::optional<std::string> quota;
  std::optional<double> weight;
  std::optional<std::string> borrow;  // N or "all"
  std::optional<std::string> lend;
  std::optional<std::string> fair;  // user or job
  std::optional<double> fair_quantum;
  std::optional<std::string> members;      // comma-separated; "*": all
  std::optional<std::string> default_for;  // comma-separated
  std::vector<std::string> add_members, remove_members;
};

std::string Limit(int32_t n) { return n < 0 ? "all" : absl::StrCat(n); }

std::vector<std::string> Users(const std::string& text) {
  return absl::StrSplit(text, ',', absl::SkipWhitespace());
}

// Applies the flags given to `vc`; an error names the flag.
absl::Status Apply(const VcFlags& f, v1::VirtualCluster* vc) {
  if (f.quota) vc->set_quota(*f.quota);
  if (f.weight) vc->set_weight(*f.weight);
  for (auto [flag, text, out] :
       {std::tuple{"--borrow", &f.borrow,
                   &v1::VirtualCluster::set_borrow_limit},
        std::tuple{"--lend", &f.lend, &v1::VirtualCluster::set_lend_limit}}) {
    if (!*text) continue;
    int32_t n = -1;
    if (**text != "all" && (!absl::SimpleAtoi(**text, &n) || n < 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": expected a GPU count or all, got \"", **text, "\""));
    }
    (vc->*out)(n);
  }
  if (f.fair) {
    if (*f.fair != "user" && *f.fair != "job") {
      return absl::InvalidArgumentError(
          absl::StrCat("--fair: expected user or job, got \"", *f.fair, "\""));
    }
    vc->set_fair_per_user(*f.fair == "user");
  }
  if (f.fair_quantum) vc->set_fair_quantum_seconds(*f.fair_quantum);
  std::vector<std::string> removed = f.remove_members;
  if (f.members) {
    // Those no longer members lose their default here too.
    const std::vector<std::string> now = Users(*f.members);
    for (const std::string& u : vc->members()) {
      if (std::find(now.begin(), now.end(), u) == now.end()) {
        removed.push_back(u);
      }
    }
    vc->clear_members();
    for (const std::string& u : now) vc->add_members(u);
  }
  for (const std::string& u : f.add_members) vc->add_members(u);
  for (const std::string& u : f.remove_members) {
    if (std::find(vc->members().begin(), vc->members().end(), u) ==
        vc->members().end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--remove-member: ", u, " is not a named member (members: ",
          absl::StrJoin(vc->members(), ","),
          "; a VC open to * takes everyone: set --members instead)"));
    }
  }
  if (!removed.empty()) {
    std::vector<std::string> kept;
    for (const std::string& u : vc->members()) {
      if (std::find(removed.begin(), removed.end(), u) == removed.end()) {
        kept.push_back(u);
      }
    }
    vc->mutable_members()->Assign(kept.begin(), kept.end());
    std::vector<std::string> defaults;
    const bool everyone =
        std::find(kept.begin(), kept.end(), "*") != kept.end();
    for (const std::string& u : vc->default_for()) {
      if (everyone || std::find(kept.begin(), kept.end(), u) != kept.end()) {
        defaults.push_back(u);
      }
    }
    vc->mutable_default_for()->Assign(defaults.begin(), defaults.end());
  }
  if (f.default_for) {
    vc->clear_default_for();
    for (const std::string& u : Users(*f.default_for)) vc->add_default_for(u);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ListVcsResponse> List(MasterClient& client,
                                         const std::string& master,
                                         const std::string& what) {
  v1::ListVcsResponse resp;
  grpc::Status s = client.stub().ListVcs(client.Context().get(), {}, &resp);
  if (!s.ok()) {
    return absl::UnavailableError(cli::DescribeRpcError(s, master, what));
  }
  return resp;
}

int SetVc(const VcFlags& f, bool create) {
  const std::string what =
      absl::StrCat("admin vc ", create ? "create " : "set ", f.name);
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::SetVcRequest req;
  req.set_create(create);
  v1::VirtualCluster* vc = req.mutable_vc();
  // A change is made on the VC as it stands, read first (RetryWhileAborted).
  std::optional<std::string> local;  // a problem found before sending
  grpc::Status s = cli::RetryWhileAborted([&] {
    vc->Clear();
    if (!create) {
      absl::StatusOr<v1::ListVcsResponse> vcs = List(client, f.master, what);
      if (!vcs.ok()) {
        local = std::string(vcs.status().message());
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, *local);
      }
      bool found = false;
      for (const v1::VcStatus& status : vcs->vcs()) {
        if (status.vc().name() == f.name) *vc = status.vc(), found = true;
      }
      if (!found) {
        local = absl::StrCat(what, ": no virtual cluster \"", f.name,
                             "\" (`tiresias vc list`)");
        return grpc::Status(grpc::StatusCode::NOT_FOUND, *local);
      }
      *req.mutable_expected() = *vc;
    } else {
      vc->set_name(f.name);
      vc->set_borrow_limit(-1);
      vc->set_lend_limit(-1);
    }
    if (absl::Status applied = Apply(f, vc); !applied.ok()) {
      local = absl::StrCat(what, ": ", applied.message());
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *local);
    }
    v1::SetVcResponse resp;
    return stub->SetVc(client.Context().get(), req, &resp);
  });
  if (local) return Fail(*local);
  if (!s.ok()) return Fail(cli::DescribeRpcError(s, f.master, what));
  std::printf(
      "virtual cluster %s %s: quota %s, weight %g, borrow %s, lend "
      "%s, members %s\n",
      cli::Printable(f.name).c_str(), create ? "created" : "changed",
      vc->quota().empty() ? "none" : vc->quota().c_str(),
      vc->weight() > 0 ? vc->weight() : 1.0, Limit(vc->borrow_limit()).c_str(),
      Limit(vc->lend_limit()).c_str(),
      vc->members().empty()
          ? "none"
          : cli::Printable(absl::StrJoin(vc->members(), ",")).c_str());
  return 0;
}

int RemoveVc(const VcFlags& f) {
  MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::RemoveVcRequest req;
  req.set_name(f.name);
  v1::RemoveVcResponse resp;
  grpc::Status s = stub->RemoveVc(client.Context().get(), req, &resp);
  if (!s.ok()) {
    return Fail(cli::DescribeRpcError(
        s, f.master, absl::StrCat("admin vc remove ", f.name)));
  }
  std::printf("virtual cluster %s removed\n", cli::Printable(f.name).c_str());
  return 0;
}

int ListVcs(const VcFlags& f) {
  MasterClient client(f.master);
  absl::StatusOr<v1::ListVcsResponse> vcs = List(client, f.master, "vc list");
  if (!vcs.ok()) return Fail(std::string(vcs.status().message()));
  if (f.json) {
    std::printf("%s\n", api::Dump(api::VcListJson(*vcs)).c_str());
    return 0;
  }
  if (vcs->vcs().empty()) {
    std::printf(
        "no virtual clusters: every job shares the whole cluster "
        "(an admin makes one with `tiresias admin vc create`)\n");
    return 0;
  }
  std::printf("%-16s %-14s %5s %5s %8s %7s %7s %6s %6s %6s %-5s %s\n", "VC",
              "QUOTA", "GPUS", "USED", "BORROWED", "RUNNING", "WAITING",
              "WEIGHT", "BORROW", "LEND", "FAIR", "MEMBERS");
  for (const v1::VcStatus& s : vcs->vcs()) {
    const v1::VirtualCluster& vc = s.vc();
    std::printf("%-16s %-14s %5d %5d %8d %7d %7d %6g %6s %6s %-5s %s\n",
                cli::Printable(vc.name()).c_str(),
                vc.quota().empty() ? "-" : vc.quota().c_str(), s.quota_gpus(),
                s.guaranteed_gpus(), s.borrowed_gpus(), s.running_jobs(),
                s.waiting_jobs(), vc.weight(), Limit(vc.borrow_limit()).c_str(),
                Limit(vc.lend_limit()).c_str(),
                vc.fair_per_user() ? "user" : "job",
                cli::Printable(absl::StrJoin(vc.members(), ",")).c_str());
  }
  return 0;
}

// `vc show`'s users: what each one's unfinished jobs in the VC hold and
// how many wait, from the VC's jobs (ListJobsRequest.vc).
int ShowUsers(MasterClient& client, const VcFlags& f) {
  struct Use {
    int running = 0, gpus = 0, borrowed = 0, waiting = 0;
  };
  std::map<std::string, Use> users;
  for (v1::JobState state : {v1::JOB_STATE_STARTING, v1::JOB_STATE_RUNNING,
                             v1::JOB_STATE_PENDING, v1::JOB_STATE_PREEMPTED}) {
    v1::ListJobsRequest req;
    req.set_vc(f.name);
    req.set_state(state);
    req.set_page_size(1000);
    absl::Status listed = cli::ForEachListedJob(
        client, req, absl::StrCat("vc show ", f.name), [&](v1::Job& job) {
          // A master before ListJobsRequest.vc lists every VC's jobs.
          if (job.spec().vc() != f.name) return;
          Use& use = users[job.spec().user()];
          if (state == v1::JOB_STATE_PENDING ||
              state == v1::JOB_STATE_PREEMPTED) {
            ++use.waiting;
          } else {
            ++use.running;
            use.gpus += job.spec().gpus();
            if (job.borrowing()) use.borrowed += job.spec().gpus();
          }
        });
    if (!listed.ok()) return Fail(std::string(listed.message()));
  }
  if (users.empty()) {
    std::printf("  Users:       no unfinished jobs\n");
    return 0;
  }
  std::printf("  Users:\n");
  for (const auto& [user, use] : users) {
    std::printf("    %-12s %d running (%d GPUs, %d borrowed), %d waiting\n",
                cli::Printable(user).c_str(), use.running, use.gpus,
                use.borrowed, use.waiting);
  }
  return 0;
}

int ShowVc(const VcFlags& f) {
  MasterClient client(f.master);
  absl::StatusOr<v1::ListVcsResponse> vcs =
      List(client, f.master, absl::StrCat("vc show ", f.name));
  if (!vcs.ok()) return Fail(std::string(vcs.status().message()));
  for (const v1::VcStatus& s : vcs->vcs()) {
    const v1::VirtualCluster& vc = s.vc();
    if (vc.name() != f.name) continue;
    std::printf("VC %s\n", cli::Printable(vc.name()).c_str());
    std::printf("  Quota:       %s (%d GPUs)\n",
                vc.quota().empty() ? "none" : vc.quota().c_str(),
                s.quota_gpus());
    std::printf(
        "  Using:       %d GPUs on its quota, %d borrowed; %d jobs "
        "running, %d waiting\n",
        s.guaranteed_gpus(), s.borrowed_gpus(), s.running_jobs(),
        s.waiting_jobs());
    std::printf(
        "  Cells bound: %s\n",
        s.bound_cells().empty()
            ? "none (bound only while its jobs run)"
            : cli::Printable(absl::StrJoin(s.bound_cells(), " ")).c_str());
    std::printf("  Weight:      %g; may borrow %s GPUs, lend %s\n", vc.weight(),
                Limit(vc.borrow_limit()).c_str(),
                Limit(vc.lend_limit()).c_str());
    std::printf("  Fair share:  %s\n",
                vc.fair_per_user()
                    ? absl::StrCat("per user, in steps of ",
                                   vc.fair_quantum_seconds() > 0
                                       ? vc.fair_quantum_seconds()
                                       : 600.0,
                                   " GPU-seconds")
                          .c_str()
                    : "per job (the policy's order)");
    std::printf(
        "  Members:     %s\n",
        vc.members().empty()
            ? "none"
            : cli::Printable(absl::StrJoin(vc.members(), ", ")).c_str());
    std::printf(
        "  Default for: %s\n",
        vc.default_for().empty()
            ? "-"
            : cli::Printable(absl::StrJoin(vc.default_for(), ", ")).c_str());
    return ShowUsers(client, f);
  }
  return Fail(absl::StrCat("vc show: no virtual cluster \"", f.name,
                           "\" (`tiresias vc list`)"));
}

void AddSettingFlags(CLI::App* cmd, VcFlags* f, bool create) {
  auto* quota = cmd->add_option(
      "--quota", f->quota,
      "Its quota in cells, COUNTxSIZE,...: \"2x8,4x1\" is two whole 8-GPU "
      "servers and four single GPUs (SIZE a power of two)");
  if (create) quota->required();
  cmd->add_option("--weight", f->weight,
                  "Its share of what is lent when VCs compete (default 1)");
  cmd->add_option("--borrow", f->borrow,
                  "GPUs beyond its quota it may use at once, or all "
                  "(default all)");
  cmd->add_option("--lend", f->lend,
                  "GPUs of its idle quota others may use at once, or all "
                  "(default all)");
  cmd->add_option("--fair", f->fair,
                  "user: per-user fair share inside it; job: the policy's "
                  "order alone (default job)");
  cmd->add_option("--fair-quantum", f->fair_quantum,
                  "GPU-seconds per step of per-user fair share (default 600)");
  cmd->add_option("--members", f->members,
                  "Who may submit to it: user,user,... or * for everyone");
  cmd->add_option("--default-for", f->default_for,
                  "Users whose jobs go here when they name no VC (replaces "
                  "the list)");
  if (create) return;
  cmd->add_option("--add-member", f->add_members, "Add a member (repeatable)");
  cmd->add_option("--remove-member", f->remove_members,
                  "Remove a member (repeatable)");
}

}  // namespace

void AddVcCommands(CLI::App& app, int* exit_code) {
  CLI::App* vc = app.add_subcommand(
      "vc", "Virtual clusters (teams): quotas, members and what each uses");
  vc->require_subcommand(1);
  auto list = std::make_shared<VcFlags>();
  CLI::App* cmd = vc->add_subcommand(
      "list", "Every VC: its quota, what it uses and borrows, its members");
  cli::AddMasterFlag(cmd, &list->master);
  cmd->add_flag("--json", list->json, "Print as JSON");
  cmd->callback([list, exit_code] { *exit_code = ListVcs(*list); });
  auto show = std::make_shared<VcFlags>();
  cmd = vc->add_subcommand("show", "One VC in detail, with its bound cells");
  cli::AddMasterFlag(cmd, &show->master);
  cmd->add_option("name", show->name, "The VC")->required();
  cmd->callback([show, exit_code] { *exit_code = ShowVc(*show); });
}

void AddAdminVcCommands(CLI::App* admin, int* exit_code) {
  CLI::App* vc = admin->add_subcommand(
      "vc",
      "Create, change and remove virtual clusters (needs an admin token)");
  vc->require_subcommand(1);
  auto create = std::make_shared<VcFlags>();
  CLI::App* cmd = vc->add_subcommand(
      "create", "A new VC; its quota must fit the cluster with every other's");
  cli::AddMasterFlag(cmd, &create->master);
  cmd->add_option("name", create->name, "Its name")->required();
  AddSettingFlags(cmd, create.get(), /*create=*/true);
  cmd->callback([create, exit_code] { *exit_code = SetVc(*create, true); });
  auto set = std::make_shared<VcFlags>();
  cmd = vc->add_subcommand(
      "set",
      "Change a VC: the flags given, the rest as it is; running jobs "
      "keep running (beyond a smaller quota they borrow)");
  cli::AddMasterFlag(cmd, &set->master);
  cmd->add_option("name", set->name, "The VC")->required();
  AddSettingFlags(cmd, set.get(), /*create=*/false);
  cmd->callback([set, exit_code] { *exit_code = SetVc(*set, false); });
  auto remove = std::make_shared<VcFlags>();
  cmd = vc->add_subcommand("remove",
                           "Remove a VC (refused while a job in it is "
                           "unfinished)");
  cli::AddMasterFlag(cmd, &remove->master);
  cmd->add_option("name", remove->name, "The VC")->required();
  cmd->callback([remove, exit_code] { *exit_code = RemoveVc(*remove); });
}

}  // namespace tiresias
