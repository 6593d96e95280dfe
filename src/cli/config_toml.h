// The TOML a configuration file is written in (config_file.h), read by
// ParseConfig (config_toml.cc): what applying it to flags (config_file.cc)
// shares with the parser. Internal to the two.
#ifndef TIRESIAS_CLI_CONFIG_TOML_H_
#define TIRESIAS_CLI_CONFIG_TOML_H_

#include <string>
#include <string_view>

namespace tiresias::cli::config_internal {

// "state_dir" and "state-dir" both name --state-dir.
std::string FlagName(std::string_view key);

// A number as TOML writes one: decimal with optional sign, _ between
// digits, fraction and exponent; inf and nan. Returns it without the _s.
bool ParseNumber(std::string_view token, std::string* out);

}  // namespace tiresias::cli::config_internal

#endif  // TIRESIAS_CLI_CONFIG_TOML_H_
