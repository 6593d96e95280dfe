#include "cli/time_arg.h"

#include <cmath>
#include <ctime>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"

namespace tiresias::cli {
namespace {

// The local time `text` names in `format`, if all of `text` is that and the
// date exists.
bool ParseLocal(const std::string& text, const char* format, double* out) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), format, &tm);
  if (end == nullptr || *end != '\0') return false;
  const std::tm asked = tm;
  tm.tm_isdst = -1;  // let the zone's rules say
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return false;
  // mktime normalizes 2024-02-30 to March 1st: not what was written.
  if (tm.tm_year != asked.tm_year || tm.tm_mon != asked.tm_mon ||
      tm.tm_mday != asked.tm_mday) {
    return false;
  }
  *out = static_cast<double>(t);
  return true;
}

}  // namespace

absl::StatusOr<double> ParseTimeArg(std::string_view flag,
                                    std::string_view text) {
  const std::string value(text);
  double seconds = 0;
  if (absl::SimpleAtod(value, &seconds) && std::isfinite(seconds) &&
      value.find_first_not_of("0123456789.") == std::string::npos) {
    return seconds;
  }
  if (ParseLocal(value, "%Y-%m-%dT%H:%M:%S", &seconds) ||
      ParseLocal(value, "%Y-%m-%d", &seconds)) {
    return seconds;
  }
  // A time ago: "30d", "12h", "90m", "45s".
  if (value.size() >= 2) {
    const std::string number = value.substr(0, value.size() - 1);
    double unit = 0;
    switch (value.back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        break;
    }
    double ago = 0;
    if (unit > 0 && absl::SimpleAtod(number, &ago) && std::isfinite(ago) &&
        number.find_first_not_of("0123456789.") == std::string::npos) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      return static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9 - ago * unit;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(flag), " ", value,
      ": expected Unix seconds, a local date YYYY-MM-DD[THH:MM:SS] or a "
      "time ago (30d, 12h, 90m, 45s)"));
}

absl::Status ParseTimeArgInto(std::string_view flag, std::string_view text,
                              double* out) {
  if (text.empty()) return absl::OkStatus();
  absl::StatusOr<double> t = ParseTimeArg(flag, text);
  if (!t.ok()) return t.status();
  *out = *t;
  return absl::OkStatus();
}

}  // namespace tiresias::cli
