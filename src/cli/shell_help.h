// Shell completion and manual pages for the `tiresias` command, generated
// from the CLI11 command tree itself, so that every subcommand and option
// the binary accepts is completed and documented, and nothing it does not
// accept is: `tiresias completion bash|zsh` and `tiresias man`.
#ifndef TIRESIAS_CLI_SHELL_HELP_H_
#define TIRESIAS_CLI_SHELL_HELP_H_

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tiresias::cli {

// The type names (CLI::Option::type_name) that mark an option or
// positional whose values are the cluster's job ids or node names: the
// completion asks the master for them (`tiresias __complete jobs|nodes`,
// hidden; nothing when it does not answer) instead of offering files.
inline constexpr char kJobType[] = "JOB";
inline constexpr char kNodeType[] = "NODE";

// A bash script defining `_tiresias` and `complete -F _tiresias tiresias`:
// subcommands at any depth, each command's options, the choices of options
// whose values are a fixed set (CLI11's IsMember, shown as "{a,b}"), job
// ids and node names where an option's type is kJobType or kNodeType,
// files for other values and positionals, and commands then files after a bare
// "--" (a job's command). Needs bash alone, not the bash-completion
// package. Hidden subcommands and options (empty group) are left out.
std::string BashCompletion(const CLI::App& root);

// The same for zsh, through zsh's bashcompinit.
std::string ZshCompletion(const CLI::App& root);

struct ManPage {
  std::string file;  // "tiresias.1", "tiresias-submit.1", "tiresias-admin-token.1"
  std::string text;  // man(7) source
};

// One page per command: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (each with its
// value type, default and description), COMMANDS (for a command with
// subcommands), EXIT STATUS and ENVIRONMENT (on tiresias.1), SEE ALSO.
// `version` goes in each page's footer.
std::vector<ManPage> ManPages(const CLI::App& root, const std::string& version);

// A validator that accepts anything and names `choices`, so that --help
// shows them ("TEXT:{fifo,las}") and the completion offers them, for an
// option whose value is checked elsewhere (a comma-separated list of them,
// say).
CLI::Validator ChoicesHint(const std::vector<std::string>& choices);

// Adds `tiresias completion SHELL` and `tiresias man [COMMAND...] [--dir
// DIR]` to `root`, which they describe (so call it after every other
// subcommand is added, or the pages are generated at run time anyway: they
// read the tree when they run).
void AddShellHelpCommands(CLI::App& root, const std::string& version,
                          int* exit_code);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_SHELL_HELP_H_
