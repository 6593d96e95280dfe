// Job time limits as Slurm writes them (`tiresias submit --time`, the
// "time" field of a `submit --file` line).
#ifndef TIRESIAS_CLI_TIME_LIMIT_H_
#define TIRESIAS_CLI_TIME_LIMIT_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias::cli {

// Seconds for `text`, one of Slurm's forms: "MM", "MM:SS", "HH:MM:SS",
// "D-HH", "D-HH:MM", "D-HH:MM:SS" (fields are whole non-negative numbers;
// the first may be any size, the others are below 60, hours below 24 after
// a day). "0", "UNLIMITED" and "infinite" mean no limit: 0. InvalidArgument
// naming `what` and the accepted forms for anything else.
absl::StatusOr<double> ParseTimeLimit(std::string_view what,
                                      std::string_view text);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_TIME_LIMIT_H_
