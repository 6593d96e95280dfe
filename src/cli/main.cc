// The `tiresias` command. One file per subcommand.
#include <CLI/CLI.hpp>

#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/admin_command.h"
#include "cli/agent_command.h"
#include "cli/cluster_commands.h"
#include "cli/did_you_mean.h"
#include "cli/profile_command.h"
#include "cli/simulate.h"

#ifndef TIRESIAS_VERSION
#define TIRESIAS_VERSION "dev"
#endif

namespace {

// gRPC's own log lines (a failed bind, a dropped connection) are for
// debugging gRPC, not for users, who get one line of ours saying what went
// wrong. TIRESIAS_GRPC_LOG=1 shows them.
void QuietGrpcLog(gpr_log_func_args*) {}

// CLI11 takes the word after an option as its value even when that word is
// another flag: `--init-ca --state-dir=x` made a folder named
// "--state-dir=x". Every named option that takes a value refuses one that
// starts with "--" (positionals, such as a job's command, are left alone).
void RefuseFlagsAsValues(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (option->get_type_size() == 0 || !option->nonpositional()) continue;
    option->check(CLI::Validator(
        [](std::string& value) -> std::string {
          if (value.rfind("--", 0) != 0) return "";
          return "needs a value, and got the flag " + value + " instead";
        },
        "", "not-a-flag"));
  }
  for (CLI::App* sub : app->get_subcommands({})) RefuseFlagsAsValues(sub);
}

// `tiresias jbos` would get only CLI11's "A subcommand is required": name
// the word, and the command it looks like.
bool RefuseUnknownCommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(word)) return false;
    names.push_back(sub->get_name());
  }
  const std::string nearest = tiresias::NearestName(word, names);
  std::fprintf(stderr, "tiresias: unknown command \"%s\"%s\n", word.c_str(),
               nearest.empty()
                   ? ""
                   : ("; did you mean \"" + nearest + "\"?").c_str());
  std::fprintf(stderr, "Run with --help for the commands.\n");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* show = std::getenv("TIRESIAS_GRPC_LOG");
      show == nullptr || std::string(show) != "1") {
    gpr_set_log_function(QuietGrpcLog);
  }
  CLI::App app{
      "Tiresias: a GPU cluster manager for distributed deep learning, and "
      "its trace-driven simulator."};
  app.set_version_flag("--version", TIRESIAS_VERSION);
  app.require_subcommand(1);
  std::string command_line = "tiresias";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  int exit_code = 0;
  tiresias::AddSimulateCommand(app, command_line, &exit_code);
  tiresias::AddClusterCommands(app, command_line, &exit_code);
  tiresias::AddAgentCommand(app, &exit_code);
  tiresias::AddAdminCommands(app, &exit_code);
  tiresias::AddWhoAmICommand(app, &exit_code);
  tiresias::AddProfileCommand(app, &exit_code);
  RefuseFlagsAsValues(&app);
  if (RefuseUnknownCommand(app, argc, argv)) return 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      std::fprintf(stderr, "tiresias: %s\n", e.what());
      std::fprintf(stderr, "Run with --help for usage.\n");
      return 2;
    }
    return app.exit(e);
  }
  return exit_code;
}
