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

// ParseTimeArg into *out when `text` is not empty (a flag not given keeps
// its default); its error otherwise.
absl::Status ParseTimeArgInto(std::string_view flag, std::string_view text,
                              double* out);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_TIME_ARG_H_
