// `tiresias config check FILE` and `tiresias config example`: the daemons'
// configuration file (config_file.h, docs/config.md).
#include "cli/config_command.h"

#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/agent_flags.h"
#include "cli/config_file.h"
#include "cli/master_flags.h"

namespace tiresias {
namespace {

// A daemon's flags on a command of their own, for the file to be applied
// to as the daemon would.
struct Daemon {
  CLI::App app;
  CLI::App* cmd = nullptr;
  MasterFlags master;
  AgentFlags agent = DefaultAgentFlags();

  explicit Daemon(std::string_view section) {
    cmd = app.add_subcommand(std::string(section), "");
    if (section == "master") {
      AddMasterFlags(cmd, &master);
    } else {
      AddAgentFlags(cmd, &agent);
    }
    app.parse(std::vector<std::string>{std::string(section)});
  }

  // The checks the daemon makes of its flags before it starts.
  absl::Status Check() const {
    if (cmd->get_name() == "master") {
      if (absl::Status s = CheckTlsChoice(master); !s.ok()) return s;
      return ToOptions(master).status();
    }
    return ToAgentOptions(agent).status();
  }
};

int Check(const std::string& path) {
  absl::StatusOr<cli::ConfigFile> file = cli::ReadConfigFile(path);
  if (!file.ok()) {
    std::fprintf(stderr, "tiresias config: %s\n",
                 std::string(file.status().message()).c_str());
    return 2;
  }
  std::vector<std::string> said;
  for (std::string_view section : cli::kConfigSections) {
    const std::vector<cli::ConfigEntry>* entries = file->Section(section);
    if (entries == nullptr) continue;
    Daemon daemon(section);
    if (absl::Status s = cli::ApplyAndCheckConfig(
            *file, section, {}, daemon.cmd, [&] { return daemon.Check(); });
        !s.ok()) {
      std::fprintf(stderr, "tiresias config: %s\n",
                   std::string(s.message()).c_str());
      return 2;
    }
    said.push_back(
        absl::StrCat("[", std::string(section), "] ", entries->size(),
                     entries->size() == 1 ? " setting" : " settings"));
  }
  if (said.empty()) {
    std::fprintf(stderr,
                 "tiresias config: %s: no [master] or [agent] section: "
                 "nothing is set\n",
                 path.c_str());
    return 2;
  }
  std::printf("%s: ok (%s)\n", path.c_str(), absl::StrJoin(said, ", ").c_str());
  return 0;
}

}  // namespace

void AddConfigCommand(CLI::App& app, int* exit_code) {
  CLI::App* config = app.add_subcommand(
      "config",
      "The daemons' configuration file: TOML with a [master] and an [agent] "
      "section, each key a flag's long name (docs/config.md). `tiresias "
      "master --config FILE` and `tiresias agent --config FILE` read it; "
      "flags given on the command line win.");
  config->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App* check = config->add_subcommand(
      "check",
      "Check FILE as the master and the agent would read it: its syntax, "
      "that every key is a flag of its section's daemon, and every value; "
      "names the line and key of the first error, exit 2");
  check->add_option("FILE", *path, "The configuration file")->required();
  check->callback([path, exit_code] { *exit_code = Check(*path); });
  CLI::App* example = config->add_subcommand(
      "example",
      "Print a configuration file with every flag of the master and the "
      "agent, commented out at its default, each with its help");
  example->callback([exit_code] {
    std::printf(
        "# Tiresias configuration (docs/config.md). Each key is a flag of "
        "the\n# daemon of its section, without its dashes; uncomment to "
        "set. Flags\n# given on the command line win over this file.\n\n");
    for (std::string_view section : cli::kConfigSections) {
      Daemon daemon(section);
      std::printf("%s\n", cli::ExampleSection(*daemon.cmd, section).c_str());
    }
    *exit_code = 0;
  });
}

}  // namespace tiresias
