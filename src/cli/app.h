// What both binaries of the `tiresias` command share around CLI11: quiet
// gRPC logs, the refusal of flags given as values and of unknown commands,
// and turning a parse error into one line and exit code 2.
//
// The command is two binaries installed side by side (docs/ARCHITECTURE.md,
// "The command-line client"): `tiresias` (front_main.cc) runs the client
// subcommands in a small, statically linked binary that starts in about a
// millisecond, and hands everything else to `tiresias-full` (main.cc), which
// has every subcommand, by exec.
#ifndef TIRESIAS_CLI_APP_H_
#define TIRESIAS_CLI_APP_H_

#include <CLI/CLI.hpp>

#include <string>

namespace tiresias::cli {

#ifndef TIRESIAS_VERSION
#define TIRESIAS_VERSION "dev"
#endif

inline constexpr const char* kAppDescription =
    "Tiresias: a GPU cluster manager for distributed deep learning, and its "
    "trace-driven simulator.";

// gRPC's own log lines (a failed bind, a dropped connection) are for
// debugging gRPC, not for users, who get one line of ours saying what went
// wrong. TIRESIAS_GRPC_LOG=1 shows them. Call first thing in main.
void QuietGrpcLogs();

// The full invocation, "tiresias ARG...", for the master's startup line
// and the simulator's record of the command.
std::string CommandLine(int argc, char** argv);

// Parses argv into `app` (whose subcommands are all added) and runs the
// chosen subcommand's callback. Returns the process exit code: `exit_code`
// as the callback left it, 2 after one "tiresias: " line for a usage error
// or an unknown command, 0 for --help and --version.
int ParseAndRun(CLI::App& app, int argc, char** argv, const int& exit_code);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_APP_H_
