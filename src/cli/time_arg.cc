#include "cli/time_arg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"

namespace tiresias::cli {
namespace {

// The instants at which the local wall clock reads `tm` (its date and time
// normalized as mktime does; tm_isdst ignored): one, or two in the hour a
// fall-back to standard time repeats, earlier first; `tm` comes back
// normalized. {-1, -1} if mktime fails. A time a spring-forward skips
// reads as mktime has it (the hour after).
std::pair<std::time_t, std::time_t> LocalInstants(std::tm& tm) {
  std::tm guess = tm;
  guess.tm_isdst = -1;  // let the zone's rules say
  const std::time_t t = std::mktime(&guess);
  if (t == static_cast<std::time_t>(-1)) return {t, t};
  std::pair<std::time_t, std::time_t> both{t, t};
  for (int isdst : {0, 1}) {
    std::tm other = tm;
    other.tm_isdst = isdst;
    const std::time_t u = std::mktime(&other);
    if (u == static_cast<std::time_t>(-1) || u == t) continue;
    std::tm back{};
    localtime_r(&u, &back);
    if (back.tm_year == guess.tm_year && back.tm_mon == guess.tm_mon &&
        back.tm_mday == guess.tm_mday && back.tm_hour == guess.tm_hour &&
        back.tm_min == guess.tm_min && back.tm_sec == guess.tm_sec) {
      both = {std::min(t, u), std::max(t, u)};  // the same reading, twice
    }
  }
  tm = guess;
  return both;
}

// The local time `text` names in `format`, if all of `text` is that and the
// date exists; the first of two in a repeated hour.
bool ParseLocal(const std::string& text, const char* format, double* out) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), format, &tm);
  if (end == nullptr || *end != '\0') return false;
  const std::tm asked = tm;
  const std::time_t t = LocalInstants(tm).first;
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

namespace {

// The local midnight starting the day of Unix time `t`.
double LocalMidnight(double t) {
  const std::time_t at = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&at, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  return static_cast<double>(LocalInstants(tm).first);
}

// The next instant the local clock reads `hour`:`minute`:`second`: today,
// or tomorrow if it has passed (in an hour a fall-back repeats, the
// repeat if only the first has passed).
double NextTimeOfDay(double now, int hour, int minute, int second) {
  const std::time_t at = static_cast<std::time_t>(now);
  std::tm tm{};
  localtime_r(&at, &tm);
  for (int day = 0; day < 2; ++day) {
    std::tm when = tm;
    when.tm_mday += day;
    when.tm_hour = hour;
    when.tm_min = minute;
    when.tm_sec = second;
    const auto [first, last] = LocalInstants(when);
    if (static_cast<double>(first) > now || day == 1) {
      return static_cast<double>(first);
    }
    if (static_cast<double>(last) > now) return static_cast<double>(last);
  }
  return now;  // not reached
}

// Unix seconds a begin time may name: from 2001-09-09 (so that 20240105,
// a date without its dashes, is not taken for 1970) to 2^33 (2242, the
// master's limit).
constexpr double kEarliestUnixBegin = 1e9;
constexpr double kLatestBegin = 8589934592.0;

// Seconds in one `unit` of "now+N<unit>"; 0 for none known.
double UnitSeconds(std::string_view unit) {
  if (unit.empty() || unit == "s" || unit == "sec" || unit == "seconds") {
    return 1;
  }
  if (unit == "m" || unit == "min" || unit == "minutes") return 60;
  if (unit == "h" || unit == "hours") return 3600;
  if (unit == "d" || unit == "days") return 86400;
  if (unit == "w" || unit == "weeks") return 7 * 86400;
  return 0;
}

}  // namespace

absl::StatusOr<double> ParseBeginTime(std::string_view flag,
                                      std::string_view text, double now) {
  const std::string value(text);
  if (value == "now") return 0.0;
  if (value.rfind("now+", 0) == 0) {
    const std::string rest = value.substr(4);
    const size_t digits = rest.find_first_not_of("0123456789");
    const std::string number = rest.substr(0, digits);
    const double unit = UnitSeconds(
        digits == std::string::npos ? ""
                                    : std::string_view(rest).substr(digits));
    double n = 0;
    if (!number.empty() && unit > 0 && absl::SimpleAtod(number, &n) &&
        now + n * unit <= kLatestBegin) {
      return now + n * unit;
    }
  } else if (value == "midnight" || value == "tomorrow") {
    return NextTimeOfDay(now, 0, 0, 0);
  } else if (value == "today") {
    return LocalMidnight(now);
  } else if (value == "noon") {
    return NextTimeOfDay(now, 12, 0, 0);
  } else if (value == "teatime") {
    return NextTimeOfDay(now, 16, 0, 0);
  } else {
    int h = 0, m = 0, sec = 0;
    char tail = 0;
    const int got =
        std::sscanf(value.c_str(), "%2d:%2d:%2d%c", &h, &m, &sec, &tail);
    if ((got == 2 || got == 3) && value.size() == (got == 2 ? 5u : 8u) &&
        h >= 0 && h < 24 && m >= 0 && m < 60 && sec >= 0 && sec < 60) {
      return NextTimeOfDay(now, h, m, sec);
    }
    double t = 0;
    if (ParseLocal(value, "%Y-%m-%dT%H:%M", &t)) return t;
    if (value.find_first_not_of("0123456789-T:.") == std::string::npos &&
        value.find_first_of("-") != std::string::npos) {
      absl::StatusOr<double> date = ParseTimeArg(flag, value);
      if (date.ok()) return date;
    } else if (!value.empty() &&
               value.find_first_not_of("0123456789.") == std::string::npos &&
               absl::SimpleAtod(value, &t) && t >= kEarliestUnixBegin &&
               t <= kLatestBegin) {
      return t;  // Unix seconds; a smaller number is likely a date typo
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      ToAbsl(flag), " ", value,
      ": expected now, now+N[s|m|h|d|w], HH:MM[:SS], midnight, noon, "
      "teatime, today, tomorrow, a local date YYYY-MM-DD[THH:MM[:SS]] or "
      "Unix seconds"));
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
