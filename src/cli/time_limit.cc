#include "cli/time_limit.h"

#include <cstdint>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"

namespace tiresias::cli {
namespace {

// A field of digits only (no sign, no spaces), at most 9 of them.
bool ParseField(absl::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, out);
}

}  // namespace

absl::StatusOr<double> ParseTimeLimit(std::string_view what,
                                      std::string_view text) {
  const absl::string_view in = ToAbsl(text);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(what), " \"", in, "\": ", why,
        "; expected MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS "
        "(e.g. 30, 1:30:00, 2-12), or 0 for no limit"));
  };
  if (absl::EqualsIgnoreCase(in, "unlimited") ||
      absl::EqualsIgnoreCase(in, "infinite")) {
    return 0.0;
  }
  int64_t days = 0;
  absl::string_view rest = in;
  const bool has_days = absl::StrContains(in, '-');
  if (has_days) {
    std::vector<absl::string_view> parts = absl::StrSplit(in, '-');
    if (parts.size() != 2 || !ParseField(parts[0], &days)) {
      return bad("the days before '-' must be a whole number");
    }
    rest = parts[1];
  }
  std::vector<absl::string_view> fields = absl::StrSplit(rest, ':');
  if (fields.size() > 3) return bad("too many ':'");
  std::vector<int64_t> values(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!ParseField(fields[i], &values[i])) {
      return bad(absl::StrCat("\"", fields[i], "\" is not a whole number"));
    }
  }
  // What each field is: without days, MM / MM:SS / HH:MM:SS; with days,
  // D-HH / D-HH:MM / D-HH:MM:SS.
  int64_t hours = 0, minutes = 0, seconds = 0;
  if (has_days) {
    hours = values[0];
    if (values.size() > 1) minutes = values[1];
    if (values.size() > 2) seconds = values[2];
    if (hours >= 24) return bad("hours after a day must be below 24");
    if (values.size() > 1 && minutes >= 60) {
      return bad("minutes must be below 60");
    }
    if (values.size() > 2 && seconds >= 60) {
      return bad("seconds must be below 60");
    }
  } else if (values.size() == 1) {
    minutes = values[0];
  } else if (values.size() == 2) {
    minutes = values[0];
    seconds = values[1];
    if (seconds >= 60) return bad("seconds must be below 60");
  } else {
    hours = values[0];
    minutes = values[1];
    seconds = values[2];
    if (minutes >= 60) return bad("minutes must be below 60");
    if (seconds >= 60) return bad("seconds must be below 60");
  }
  return static_cast<double>(((days * 24 + hours) * 60 + minutes) * 60 +
                             seconds);
}

}  // namespace tiresias::cli
