#include "cli/app.h"

#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/did_you_mean.h"

namespace tiresias::cli {
namespace {

void QuietGrpcLog(gpr_log_func_args*) {}

// CLI11 takes the word after an option as its value even when that word is
// another flag: `--init-ca --state-dir=x` made a folder named
// "--state-dir=x". Every named option that takes a value refuses one that
// starts with "--" (positionals, such as a job's command, are left alone).
void RefuseFlagsAsValues(CLI::App* app) {
  for (CLI::Option* option : app->get_options()) {
    if (option->get_items_expected_max() == 0 || !option->nonpositional()) {
      continue;  // a flag (its type size is 1 all the same) or positional
    }
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
  const std::string nearest = NearestName(word, names);
  std::fprintf(stderr, "tiresias: unknown command \"%s\"%s\n", word.c_str(),
               nearest.empty()
                   ? ""
                   : ("; did you mean \"" + nearest + "\"?").c_str());
  std::fprintf(stderr, "Run with --help for the commands.\n");
  return true;
}

// `simulate --polcy fifo` would get CLI11's "The following arguments were
// not expected: fifo --polcy": name the flag, the command, and the flag it
// looks like. Walks the words up to a bare "--" (a job's command follows),
// following subcommand names, and checks each "--name" or "--name=value"
// against the options of the command reached so far.
bool RefuseUnknownFlag(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  std::string path = "tiresias";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return false;
    if (word.rfind("--", 0) != 0) {
      for (const CLI::App* sub : command->get_subcommands({})) {
        if (sub->check_name(word)) {
          command = sub;
          path += " " + sub->get_name();
          break;
        }
      }
      continue;
    }
    const std::string name = word.substr(2, word.find('=') - 2);
    std::vector<std::string> known;
    bool found = false;
    for (const CLI::Option* option : command->get_options()) {
      for (const std::string& lname : option->get_lnames()) {
        found |= lname == name;
        known.push_back("--" + lname);
      }
    }
    if (found) continue;
    const std::string nearest = NearestName("--" + name, known);
    std::fprintf(stderr, "tiresias: unknown option \"--%s\" for `%s`%s\n",
                 name.c_str(), path.c_str(),
                 nearest.empty()
                     ? ""
                     : ("; did you mean \"" + nearest + "\"?").c_str());
    std::fprintf(stderr, "Run `%s --help` for its options.\n", path.c_str());
    return true;
  }
  return false;
}

}  // namespace

void QuietGrpcLogs() {
  if (const char* show = std::getenv("TIRESIAS_GRPC_LOG");
      show == nullptr || std::string(show) != "1") {
    gpr_set_log_function(QuietGrpcLog);
  }
}

std::string CommandLine(int argc, char** argv) {
  std::string command_line = "tiresias";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  return command_line;
}

int ParseAndRun(CLI::App& app, int argc, char** argv, const int& exit_code) {
  RefuseFlagsAsValues(&app);
  if (RefuseUnknownCommand(app, argc, argv)) return 2;
  if (RefuseUnknownFlag(app, argc, argv)) return 2;
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

}  // namespace tiresias::cli
