// `tiresias admin tuning set`: an admin sets the scheduler's K queues,
// PROMOTEKNOB, queue order or placement by hand (the rest as they are),
// at once and durably, through the SetTuning that `tune --apply` sends.
// What is in force shows in `tiresias status`.
#include <cmath>
#include <cstdio>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/admin_command.h"
#include "cli/cluster_client.h"
#include "cli/printable.h"

namespace tiresias {
namespace {

struct TuningFlags {
  std::string master;
  std::optional<std::string> thresholds;
  std::optional<std::string> promote_knob;
  std::optional<std::string> queue_order;
  std::optional<std::string> placement;
  std::string note;
};

// Fills `t` from the flags given; the master checks the values.
absl::Status Apply(const TuningFlags& f, v1::Tuning* t) {
  if (f.thresholds) {
    t->clear_thresholds();
    for (absl::string_view part :
         absl::StrSplit(*f.thresholds, ':', absl::SkipEmpty())) {
      double v = 0;
      if (!absl::SimpleAtod(part, &v)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--thresholds ", *f.thresholds,
            ": expected GPU-seconds, colons between K - 1 bounds (3600 or "
            "3250:7200)"));
      }
      t->add_thresholds(v);
    }
  }
  if (f.promote_knob) {
    double knob = 0;
    if (*f.promote_knob == "inf" || *f.promote_knob == "off") {
      knob = 0;
    } else if (!absl::SimpleAtod(*f.promote_knob, &knob) || !(knob > 0) ||
               !std::isfinite(knob)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--promote-knob ", *f.promote_knob,
                       ": expected a positive number, or inf for none"));
    }
    t->set_promote_knob(knob);
  }
  if (f.queue_order) t->set_queue_order(*f.queue_order);
  if (f.placement) t->set_placement(*f.placement);
  return absl::OkStatus();
}

int SetTuning(const TuningFlags& f) {
  if (!f.thresholds && !f.promote_knob && !f.queue_order && !f.placement) {
    return cli::Fail(
        "admin tuning set: give at least one of --thresholds, "
        "--promote-knob, --queue-order, --placement");
  }
  cli::MasterClient client(f.master);
  auto stub = v1::Admin::NewStub(client.channel());
  std::optional<std::string> local;
  v1::SetTuningResponse resp;
  grpc::Status s = cli::RetryWhileAborted([&] {
    v1::ClusterStatus status;
    grpc::Status got =
        client.stub().GetClusterStatus(client.Context().get(), {}, &status);
    if (!got.ok()) return got;
    v1::SetTuningRequest req;
    *req.mutable_expected() = status.tuning().tuning();
    *req.mutable_tuning() = status.tuning().tuning();
    // Placement: the one in force unless changed.
    if (req.tuning().placement().empty()) {
      req.mutable_tuning()->set_placement(status.placement());
    }
    if (absl::Status applied = Apply(f, req.mutable_tuning()); !applied.ok()) {
      local = absl::StrCat("admin tuning set: ", applied.message());
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *local);
    }
    req.set_note(f.note.empty() ? "admin tuning set" : f.note);
    return stub->SetTuning(client.Context().get(), req, &resp);
  });
  if (local) return cli::Fail(*local);
  if (!s.ok())
    return cli::Fail(cli::DescribeRpcError(s, f.master, "admin tuning set"));
  std::printf("scheduling settings: %s\n",
              cli::DescribeTuning(resp.status()).c_str());
  return 0;
}

int ResetTuning(const std::string& master) {
  cli::MasterClient client(master);
  auto stub = v1::Admin::NewStub(client.channel());
  v1::SetTuningRequest req;
  req.set_reset(true);
  req.set_note("admin tuning reset");
  v1::SetTuningResponse resp;
  grpc::Status s = stub->SetTuning(client.Context().get(), req, &resp);
  if (!s.ok()) {
    return cli::Fail(cli::DescribeRpcError(s, master, "admin tuning reset"));
  }
  std::printf("scheduling settings: %s\n",
              cli::DescribeTuning(resp.status()).c_str());
  return 0;
}

}  // namespace

void AddAdminTuningCommands(CLI::App* admin, int* exit_code) {
  CLI::App* tuning = admin->add_subcommand(
      "tuning",
      "Set the scheduler's queues, PROMOTEKNOB, queue order or placement by "
      "hand (`tiresias tune --apply` sets them from the cluster's history); "
      "they stay in force over the master's flags across restarts");
  tuning->require_subcommand(1);
  auto f = std::make_shared<TuningFlags>();
  CLI::App* cmd = tuning->add_subcommand(
      "set", "Change the settings given, the others as they are, at once");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--thresholds", f->thresholds,
                  "Queue bounds in GPU-seconds: 3600 (K = 2) or 3250:7200");
  cmd->add_option("--promote-knob", f->promote_knob,
                  "PROMOTEKNOB: a positive number, or inf for none");
  cmd->add_option("--queue-order", f->queue_order, "stable or start-time");
  cmd->add_option("--placement", f->placement,
                  "consolidate, spread, pack, random, profiled or count");
  cmd->add_option("--note", f->note, "Why, for the audit log and `status`");
  cmd->callback([f, exit_code] { *exit_code = SetTuning(*f); });
  auto reset = std::make_shared<std::string>();
  cmd = tuning->add_subcommand(
      "reset", "Back to the master's flags at once, and at its next start");
  cli::AddMasterFlag(cmd, reset.get());
  cmd->callback([reset, exit_code] { *exit_code = ResetTuning(*reset); });
}

}  // namespace tiresias
