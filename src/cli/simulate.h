// `tiresias simulate`: replays a trace under one or more policies and
// prints the comparison table (or JSON), optionally writing per-job CSVs,
// time series, summary.json and report.html into --out.
#ifndef TIRESIAS_CLI_SIMULATE_H_
#define TIRESIAS_CLI_SIMULATE_H_

#include <CLI/CLI.hpp>

#include <string>

namespace tiresias {

// Adds the subcommand to `app`; its callback runs the simulation and stores
// the process exit code in *exit_code.
void AddSimulateCommand(CLI::App& app, const std::string& command_line,
                        int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_SIMULATE_H_
