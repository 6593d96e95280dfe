// `submit --signal SIG[@SECONDS]` (Slurm's --signal): a signal to a job's
// processes that many seconds before its time limit (--time), for it to
// checkpoint or wrap up. Only the stop signals a task's shim outlives
// (spawn.h), so that the signal reaches the processes and never their
// shim: USR1, USR2, TERM, INT, HUP, QUIT, ALRM.
#ifndef TIRESIAS_CORE_WARN_SIGNAL_H_
#define TIRESIAS_CORE_WARN_SIGNAL_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias {

// Seconds before the limit when --signal names none (Slurm's default), and
// the most (Slurm's too).
inline constexpr int kDefaultWarnSeconds = 60;
inline constexpr int kMaxWarnSeconds = 65535;

struct WarnSignal {
  int signal = 0;  // 0: none
  int seconds = kDefaultWarnSeconds;

  bool operator==(const WarnSignal&) const = default;
};

// Whether `signal` is one --signal may send.
bool IsWarnSignal(int signal);
// "USR1" for SIGUSR1; the number as text for another.
std::string SignalName(int signal);

// "SIG[@SECONDS]": SIG a name with or without "SIG" (USR1, SIGUSR1, any
// case) or its number (10); SECONDS 1 to kMaxWarnSeconds. An error names
// what was expected.
absl::StatusOr<WarnSignal> ParseWarnSignal(std::string_view text);
// The text ParseWarnSignal reads back: "USR1@60".
std::string FormatWarnSignal(const WarnSignal& warn);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_WARN_SIGNAL_H_
