// The process's open-file limit, which a daemon that holds a connection
// per agent and per client meets first as it grows (1,024 by default in a
// shell): raised to its hard limit at start, and watched, so that running
// out is said rather than silent (gRPC refuses the next connection and
// logs nothing).
//
//   const int64_t limit = RaiseOpenFileLimit();
//   if (OpenFiles() > limit * 9 / 10) Warn(...);
#ifndef TIRESIAS_CORE_OPEN_FILES_H_
#define TIRESIAS_CORE_OPEN_FILES_H_

#include <cstdint>

namespace tiresias {

// Descriptors a daemon keeps for itself (its store, logs, listeners,
// gRPC's own): what is left of the limit is for connections.
inline constexpr int64_t kReservedOpenFiles = 64;

// Raises the soft RLIMIT_NOFILE to the hard limit (capped at 1,048,576:
// an unlimited hard limit would make every close-all loop a long one) and
// returns the soft limit now; -1 if unreadable.
int64_t RaiseOpenFileLimit();

// The current soft RLIMIT_NOFILE; -1 if unreadable.
int64_t OpenFileSoftLimit();

// The descriptors this process has open (entries of /proc/self/fd, less
// the one reading it); -1 if unreadable. O(open files).
int64_t OpenFiles();

}  // namespace tiresias

#endif  // TIRESIAS_CORE_OPEN_FILES_H_
