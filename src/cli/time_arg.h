// Instants given on the command line (`tiresias jobs --since TIME`): Unix
// seconds, or a local date and time as a person writes it.
#ifndef TIRESIAS_CLI_TIME_ARG_H_
#define TIRESIAS_CLI_TIME_ARG_H_

#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias::cli {

// Unix seconds for `text`: a number ("1700000000", "1700000000.5"), a
// date in the local time zone, "YYYY-MM-DD" (its midnight) or
// "YYYY-MM-DDTHH:MM:SS", or a time before now: a number of days, hours,
// minutes or seconds ("30d", "12h", "90m", "45s"). InvalidArgument naming
// `flag` and the accepted forms for anything else, an impossible date
// ("2024-02-30") included.
absl::StatusOr<double> ParseTimeArg(std::string_view flag,
                                    std::string_view text);

// Unix seconds for a start time (`submit --begin`, `update --begin`, as
// Slurm's --begin), `now` being the current Unix time: "now" (0: no begin
// time), "now+N" with N seconds or N followed by s, m, h, d or w (or
// seconds, minutes, hours, days, weeks), a local time of day "HH:MM[:SS]"
// (today, or tomorrow once it has passed), "midnight", "noon", "teatime"
// (16:00) likewise, "today", "tomorrow" (their midnight), a local date
// "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM[:SS]", or Unix seconds.
// InvalidArgument naming `flag` and the accepted forms for anything else.
absl::StatusOr<double> ParseBeginTime(std::string_view flag,
                                      std::string_view text, double now);

// ParseTimeArg into *out when `text` is not empty (a flag not given keeps
// its default); its error otherwise.
absl::Status ParseTimeArgInto(std::string_view flag, std::string_view text,
                              double* out);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_TIME_ARG_H_
