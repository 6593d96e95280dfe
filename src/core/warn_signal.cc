#include "core/warn_signal.h"

#include <signal.h>

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

struct Named {
  int signal;
  const char* name;
};
constexpr Named kWarnSignals[] = {
    {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}, {SIGTERM, "TERM"}, {SIGINT, "INT"},
    {SIGHUP, "HUP"},   {SIGQUIT, "QUIT"}, {SIGALRM, "ALRM"}};

constexpr const char* kExpected =
    "expected SIG[@SECONDS], SIG one of USR1, USR2, TERM, INT, HUP, QUIT, "
    "ALRM (or its number) and SECONDS 1 to 65535 (default 60), e.g. "
    "USR1@90";

}  // namespace

bool IsWarnSignal(int signal) {
  return std::any_of(std::begin(kWarnSignals), std::end(kWarnSignals),
                     [&](const Named& n) { return n.signal == signal; });
}

std::string SignalName(int signal) {
  for (const Named& n : kWarnSignals) {
    if (n.signal == signal) return n.name;
  }
  return absl::StrCat(signal);
}

absl::StatusOr<WarnSignal> ParseWarnSignal(std::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", std::string(text), "\": ", kExpected));
  };
  const size_t at = text.find('@');
  std::string name = absl::AsciiStrToUpper(
      std::string(at == std::string_view::npos ? text : text.substr(0, at)));
  WarnSignal warn;
  if (at != std::string_view::npos) {
    const std::string seconds(text.substr(at + 1));
    if (!absl::SimpleAtoi(seconds, &warn.seconds) || warn.seconds < 1 ||
        warn.seconds > kMaxWarnSeconds ||
        !std::all_of(seconds.begin(), seconds.end(),
                     [](char c) { return std::isdigit(c); })) {
      return bad();
    }
  }
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  int number = 0;
  if (absl::SimpleAtoi(name, &number)) {
    warn.signal = number;
  } else {
    for (const Named& n : kWarnSignals) {
      if (name == n.name) warn.signal = n.signal;
    }
  }
  if (!IsWarnSignal(warn.signal)) return bad();
  return warn;
}

std::string FormatWarnSignal(const WarnSignal& warn) {
  return absl::StrCat(SignalName(warn.signal), "@", warn.seconds);
}

}  // namespace tiresias
