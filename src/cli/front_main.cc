// `tiresias`, the command users type. The client subcommands (submit,
// jobs, job, cancel, nodes, status, logs, watch, admin, whoami) and
// --version run here, in a small binary linked without the simulator, the
// master, the agent, SQLite or the HTTP server, and statically against
// gRPC, protobuf, abseil and OpenSSL, so that it starts in about a
// millisecond (BENCHMARKS.md, "The command-line client"). Everything else
// (master, agent, up, dashboard, simulate, profile, --help, no arguments, a
// mistyped command) is handed to `tiresias-full`, installed beside this
// binary, by exec: the same process id, arguments, environment and exit
// code, so scripts and tests see one command.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/admin_command.h"
#include "cli/app.h"
#include "cli/cluster_commands.h"
#include "cli/control_channel.h"

namespace {

// The subcommands this binary runs (their first word); must match what
// main() adds below.
constexpr std::string_view kClientCommands[] = {
    "submit",  "jobs",   "job",        "cancel",  "hold",   "release",
    "requeue", "update", "__complete", "history", "nodes",  "node",
    "status",  "logs",   "watch",      "admin",   "whoami", "vc",
    "report",  "qos",    "--version"};

bool RunsHere(std::string_view word) {
  for (std::string_view name : kClientCommands) {
    if (word == name) return true;
  }
  return false;
}

// Replaces this process by tiresias-full beside it. Returns only if that
// fails, with the exit code.
int ExecFull(char** argv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string full = "tiresias-full";
  if (n > 0) {
    std::string_view path(self, static_cast<size_t>(n));
    const size_t slash = path.rfind('/');
    if (slash != std::string_view::npos) {
      full = std::string(path.substr(0, slash + 1)) + full;
    }
  }
  execv(full.c_str(), argv);
  std::fprintf(stderr,
               "tiresias: cannot run %s: %s (it runs master, agent, up, "
               "dashboard, simulate, profile and --help, and belongs beside "
               "tiresias)\n",
               full.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "__control") {
    const int code = tiresias::cli::control::Serve(argc, argv);
    _exit(code);  // its detached threads are done or idle
  }
  if (argc < 2 || !RunsHere(argv[1])) return ExecFull(argv);
  tiresias::cli::control::Enable();
  tiresias::cli::QuietGrpcLogs();
  CLI::App app{tiresias::cli::kAppDescription};
  app.set_version_flag("--version", TIRESIAS_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  tiresias::AddClientCommands(app, &exit_code);
  tiresias::AddAdminCommands(app, &exit_code);
  tiresias::AddWhoAmICommand(app, &exit_code);
  const int code = tiresias::cli::ParseAndRun(app, argc, argv, exit_code);
  // Exit without tearing down what the process is about to lose anyway
  // (gRPC's threads, OpenSSL's tables, static destructors): the output is
  // all that must survive.
  std::fflush(nullptr);
  _exit(code);
}
