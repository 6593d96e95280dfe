// `tiresias master`: the master daemon. Opens the state dir, serves the
// client API and the agent protocol until SIGINT or SIGTERM, then stops
// serving (in-flight calls finish) and exits 0.
#include <cstdio>
#include <memory>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/config_file.h"
#include "cli/master_flags.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "security/private_files.h"

namespace tiresias {
namespace {

int RunMaster(const MasterFlags& f) {
  // Before any thread starts: gRPC's and the scheduler's inherit the mask,
  // so only WaitForStopSignal sees the signals.
  BlockStopSignals();
  // Its state holds every job's environment and the tokens' hashes.
  security::MakeFilesPrivateByDefault();
  master::RealClock clock;
  absl::StatusOr<RunningMaster> master = StartMaster(f, &clock);
  if (!master.ok()) return cli::Fail(std::string(master.status().message()));
  std::printf("tiresias master: listening on %s (state dir %s, policy %s)\n",
              master->address.c_str(), f.state_dir.c_str(), f.policy.c_str());
  if (f.insecure) {
    std::fprintf(stderr,
                 "tiresias master: WARNING: --insecure: no TLS and no "
                 "authentication; anyone who reaches %s may run anything\n",
                 master->address.c_str());
  }
  if (!master->admin_token_path.empty()) {
    std::printf("tiresias master: first admin token in %s\n"
                "  export TIRESIAS_TOKEN_FILE=%s\n",
                master->admin_token_path.c_str(),
                master->admin_token_path.c_str());
  }
  if (master->http) {
    std::printf("tiresias master: metrics on http://%s/metrics%s\n",
                master->http_address.c_str(),
                MetricsTokenRequired(f)
                    ? " (send \"Authorization: Bearer <token>\")"
                    : "");
  }
  std::fflush(stdout);
  std::fprintf(stderr, "tiresias master: %s received, shutting down\n",
               WaitForStopSignal());
  master->Shutdown();
  return 0;
}

}  // namespace

void AddMasterCommand(CLI::App& app, const std::string& /*command_line*/,
                      int* exit_code) {
  auto flags = std::make_shared<MasterFlags>();
  CLI::App* cmd = app.add_subcommand(
      "master",
      "Run the master daemon: schedules jobs on the agents' GPUs, keeps its "
      "state in --state-dir, runs until SIGINT or SIGTERM.\nPolicies: " +
          absl::StrJoin(PolicyNames(), ", ") +
          ".\nPlacements: " + absl::StrJoin(PlacerNames(), ", ") + ".");
  AddMasterFlags(cmd, flags.get());
  auto config = std::make_shared<std::string>();
  cli::AddConfigFlag(cmd, config.get());
  cmd->callback([flags, config, cmd, exit_code] {
    cli::ConfigFile file;
    std::set<std::string> given;
    if (absl::Status s = cli::LoadConfig(*config, "master", cmd, &file, &given);
        !s.ok()) {
      *exit_code = cli::Fail(std::string(s.message()));
      return;
    }
    if (absl::Status s = ToOptions(*flags).status(); !s.ok()) {
      *exit_code = cli::Fail(
          cli::PlaceInConfig(file, "master", given, std::string(s.message())));
      return;
    }
    *exit_code = RunMaster(*flags);
  });
}

}  // namespace tiresias
