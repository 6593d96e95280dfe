// `tiresias profile [--json] [--seconds N] -- CMD...`: runs a command on
// this machine under the traffic profiler (src/profiler) and prints its
// profile: iteration period, bytes and messages per iteration, tensor
// skew, bytes per peer, message sizes. A user checks a model this way
// before submitting it.
#ifndef TIRESIAS_CLI_PROFILE_COMMAND_H_
#define TIRESIAS_CLI_PROFILE_COMMAND_H_

#include <CLI/CLI.hpp>

namespace tiresias {

// Adds the subcommand to `app`; its callback stores the process exit code
// in *exit_code: 0 when a profile was printed and the command exited 0 or
// was stopped at --seconds; 1 when the command failed on its own (the
// profile is still printed), could not run, or sent nothing; 130 when
// interrupted (the profile so far is printed).
void AddProfileCommand(CLI::App& app, int* exit_code);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_PROFILE_COMMAND_H_
