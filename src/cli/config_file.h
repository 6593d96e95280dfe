// The daemons' configuration file (docs/config.md): TOML, one section per
// daemon ([master], [agent]), each key a long flag of that daemon without
// its dashes (`state-dir = "/var/lib/tiresias"`; `state_dir` too). Flags
// given on the command line win over the file.
//
// The TOML read is the part a flag needs: sections, bare keys, basic and
// literal strings, integers, floats, booleans and arrays of those (over
// several lines too), comments. Anything else (dotted keys, tables inside
// sections, inline tables, dates, multi-line strings) is refused with its
// line.
#ifndef TIRESIAS_CLI_CONFIG_FILE_H_
#define TIRESIAS_CLI_CONFIG_FILE_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tiresias::cli {

struct ConfigEntry {
  enum class Kind { kString, kNumber, kBool };
  std::string key;                  // as written
  std::vector<std::string> values;  // one, or an array's
  bool array = false;
  Kind kind = Kind::kString;  // of the value, or of an array's every one
  int line = 0;               // 1-based
};

struct ConfigFile {
  std::string path;
  // Section name -> its entries in file order.
  std::map<std::string, std::vector<ConfigEntry>, std::less<>> sections;

  const std::vector<ConfigEntry>* Section(std::string_view name) const;
};

// The sections a file may have.
inline constexpr std::string_view kConfigSections[] = {"master", "agent"};

// InvalidArgument "PATH:LINE: ..." on a syntax error, an unknown section,
// a key outside a section or given twice; NotFound / PermissionDenied
// naming PATH when it cannot be read.
absl::StatusOr<ConfigFile> ParseConfig(std::string_view text, std::string path);
absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path);

// Sets each option of `cmd` that `section` names and that is not in
// `given` (the options set on the command line: GivenOptions, taken
// before the first apply), converting and validating it as CLI11 does a
// flag. InvalidArgument "PATH:LINE: [section] key: ..." for a key that is
// no flag of `cmd` (or is --config or --help), a value of the wrong kind,
// or one the flag's check refuses.
absl::Status ApplyConfig(const ConfigFile& file, std::string_view section,
                         const std::set<std::string>& given, CLI::App* cmd);

// The long names of `cmd`'s options given on its command line.
std::set<std::string> GivenOptions(const CLI::App& cmd);

// The entry of `section` for flag --name (dashes or underscores), or null:
// to put a line on an error found later about that flag.
const ConfigEntry* FindFlag(const ConfigFile& file, std::string_view section,
                            std::string_view name);

// For a message about a flag ("--pack-limit 2: expected ..."): prefixes
// "PATH:LINE: [section] key: " when the file set that flag (the message's
// first word), and returns the message as is otherwise.
std::string PlaceInConfig(const ConfigFile& file, std::string_view section,
                          const std::set<std::string>& given,
                          std::string_view message);

// --config FILE on a daemon's command `cmd` (its section: master, agent),
// default $TIRESIAS_CONFIG.
void AddConfigFlag(CLI::App* cmd, std::string* path);

// When `path` is set: reads it and applies its [section] to `cmd` (see
// ApplyConfig); then `check` (the daemon's own checks of its flags), whose
// error is put on the file's line when the file set that flag
// (PlaceInConfig): what a daemon does with --config before it starts.
absl::Status LoadAndCheckConfig(const std::string& path,
                                std::string_view section, CLI::App* cmd,
                                const std::function<absl::Status()>& check);
// The same with a file already read and the options `given` on the
// command line (`tiresias config check`: none).
absl::Status ApplyAndCheckConfig(const ConfigFile& file,
                                 std::string_view section,
                                 const std::set<std::string>& given,
                                 CLI::App* cmd,
                                 const std::function<absl::Status()>& check);

// A commented file that sets every flag of `cmd` to its default, each with
// its help: the schema by example (`tiresias config example`).
std::string ExampleSection(const CLI::App& cmd, std::string_view section);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_CONFIG_FILE_H_
