// `tiresias master`: the master daemon. Opens the state dir, serves the
// client API and the agent protocol until SIGINT or SIGTERM, then stops
// serving (in-flight calls finish) and exits 0.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/config_file.h"
#include "cli/master_flags.h"
#include "core/status_macros.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/server.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "security/private_files.h"

namespace tiresias {
namespace {

// The words after `master` on this process's command line, to evaluate
// the flags again on SIGHUP as a restart would.
std::vector<std::string> MasterArgs() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  auto it =
      std::find(words.begin() + (words.empty() ? 0 : 1), words.end(), "master");
  if (it == words.end()) return {};
  return std::vector<std::string>(it + 1, words.end());
}

// The master's flags from `args` and `file` (none: no --config), as at a
// start: each flag's values by name, and the checked options.
struct Evaluated {
  std::map<std::string, std::vector<std::string>> values;
  MasterOptions options;
};

absl::StatusOr<Evaluated> Evaluate(const std::vector<std::string>& args,
                                   const cli::ConfigFile* file) {
  CLI::App app;
  CLI::App* cmd = app.add_subcommand("master");
  MasterFlags flags;
  AddMasterFlags(cmd, &flags);
  std::string config;
  cli::AddConfigFlag(cmd, &config);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  reversed.push_back("master");
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  const std::set<std::string> given = cli::GivenOptions(*cmd);
  if (file != nullptr) {
    RETURN_IF_ERROR(cli::ApplyConfig(*file, "master", given, cmd));
  }
  Evaluated out;
  absl::StatusOr<MasterOptions> options = ToOptions(flags);
  if (!options.ok()) {
    return absl::InvalidArgumentError(
        file == nullptr
            ? std::string(options.status().message())
            : cli::PlaceInConfig(*file, "master", given,
                                 std::string(options.status().message())));
  }
  out.options = *std::move(options);
  for (const CLI::Option* opt : cmd->get_options()) {
    if (opt->get_lnames().empty()) continue;
    out.values[opt->get_lnames().front()] = opt->results();
  }
  return out;
}

// SIGHUP: reads the --config file again. The scheduling settings
// (thresholds, promote-knob, queue-order) take effect at once, unless
// settings applied with `tune`/`admin tuning` are in force; any other
// change is reported as waiting for a restart. A bad file changes
// nothing.
void Reload(const std::string& path, const std::vector<std::string>& args,
            Evaluated* in_force, MasterState* state) {
  if (path.empty()) {
    std::fprintf(stderr,
                 "tiresias master: SIGHUP: no --config file to read again\n");
    return;
  }
  absl::StatusOr<cli::ConfigFile> file = cli::ReadConfigFile(path);
  absl::StatusOr<Evaluated> now =
      file.ok() ? Evaluate(args, &*file) : file.status();
  if (!now.ok()) {
    std::fprintf(stderr, "tiresias master: SIGHUP: %s; nothing changed\n",
                 std::string(now.status().message()).c_str());
    return;
  }
  static const std::set<std::string> kLive = {"thresholds", "promote-knob",
                                              "queue-order"};
  std::vector<std::string> live, later;
  for (const auto& [name, values] : now->values) {
    if (name == "config" || in_force->values[name] == values) continue;
    (kLive.contains(name) ? live : later).push_back("--" + name);
  }
  if (live.empty() && later.empty()) {
    std::fprintf(stderr, "tiresias master: SIGHUP: %s: nothing changed\n",
                 path.c_str());
    return;
  }
  if (!live.empty()) {
    absl::StatusOr<bool> applied =
        state->SetFlagsTuning({now->options.queues, now->options.promote_knob,
                               now->options.queue_order});
    if (!applied.ok()) {
      std::fprintf(stderr, "tiresias master: SIGHUP: %s: %s\n", path.c_str(),
                   std::string(applied.status().message()).c_str());
      return;
    }
    std::fprintf(stderr, "tiresias master: SIGHUP: %s: %s %s\n", path.c_str(),
                 absl::StrJoin(live, ", ").c_str(),
                 *applied ? "in force now"
                          : "changed; the settings applied with `tune` stay "
                            "in force (`tiresias admin tuning reset` to use "
                            "the file's)");
  }
  if (!later.empty()) {
    std::fprintf(stderr,
                 "tiresias master: SIGHUP: %s: %s changed: in force at the "
                 "next start\n",
                 path.c_str(), absl::StrJoin(later, ", ").c_str());
  }
  for (const std::string& name : live) {
    in_force->values[name.substr(2)] = now->values[name.substr(2)];
  }
}

int RunMaster(const MasterFlags& f, const std::string& config_path) {
  // Before any thread starts: gRPC's and the scheduler's inherit the mask,
  // so only WaitForSignal sees the signals.
  BlockStopSignals();
  BlockHangupSignal();
  const std::vector<std::string> args = MasterArgs();
  Evaluated in_force;
  if (!config_path.empty()) {
    // As read at this start (the caller applied the same file to `f`).
    absl::StatusOr<cli::ConfigFile> file = cli::ReadConfigFile(config_path);
    absl::StatusOr<Evaluated> e =
        file.ok() ? Evaluate(args, &*file) : file.status();
    if (!e.ok()) return cli::Fail(std::string(e.status().message()));
    in_force = *std::move(e);
  }
  // Its state holds every job's environment and the tokens' hashes.
  security::MakeFilesPrivateByDefault();
  master::RealClock clock;
  absl::StatusOr<RunningMaster> master = StartMaster(f, &clock);
  if (absl::IsCancelled(master.status())) {
    // Stopped while a standby: it never led, and leaves as asked.
    std::fprintf(stderr, "tiresias master: %s, shutting down\n",
                 std::string(master.status().message()).c_str());
    return 0;
  }
  if (!master.ok()) return cli::Fail(std::string(master.status().message()));
  std::printf(
      "tiresias master: listening on %s (state dir %s, policy %s, epoch "
      "%llu)\n",
      master->address.c_str(), f.state_dir.c_str(), f.policy.c_str(),
      static_cast<unsigned long long>(master->state->epoch()));
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
  const char* signal_name;
  while (std::string_view(signal_name = WaitForSignal()) == "SIGHUP") {
    Reload(config_path, args, &in_force, master->state.get());
  }
  std::fprintf(stderr, "tiresias master: %s received, shutting down\n",
               signal_name);
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
    if (absl::Status s = cli::LoadAndCheckConfig(
            *config, "master", cmd, [&] { return ToOptions(*flags).status(); });
        !s.ok()) {
      *exit_code = cli::Fail(std::string(s.message()));
      return;
    }
    *exit_code = RunMaster(*flags, *config);
  });
}

}  // namespace tiresias
