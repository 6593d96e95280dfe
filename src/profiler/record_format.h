// The profile file: what the preloaded library (preload_*.cc) writes and
// profile_records.h reads. Text, one record per line, fields separated by
// one space, so that a person can read it and a truncated last line (a
// process killed while writing) costs one record:
//
//   P <pid> <ppid> <t_ns> <argv...>           a process that recorded something
//   C <pid> <conn> <kind> <local> <peer>      a connection of that process
//   M <pid> <conn> <t_ns> <bytes>             one message sent on it
//   E <pid> <t_ns> <why>                      the process stopped recording
//
// t_ns: CLOCK_MONOTONIC in nanoseconds (one clock for every process of the
// machine). conn: a number unique within the pid. kind: tcp, unix, verbs.
// local, peer: "1.2.3.4:80", "[::1]:80", a Unix socket path, "@name" for an
// abstract one, "qp:N" / "qp:N@lid:L" or "qp:N@gid:HEX" for a verbs queue
// pair, "-" when unknown. Text fields are escaped: every byte that is not a
// printable ASCII character other than space and '%' is written as %XX.
// argv: the process's arguments, each escaped, joined by spaces.
//
// Processes of one job append to the same file (O_APPEND), each writing
// whole lines only, so lines of different processes interleave but never
// mix. A line that does not parse is counted and skipped by the reader.
#ifndef TIRESIAS_PROFILER_RECORD_FORMAT_H_
#define TIRESIAS_PROFILER_RECORD_FORMAT_H_

namespace tiresias::profiler {

// Environment variables read by the preloaded library at process start.
// Without kOutEnv (or with it empty) the library records nothing.
inline constexpr char kOutEnv[] = "TIRESIAS_PROFILE_OUT";
// Messages one process records before it stops (default below).
inline constexpr char kMaxMessagesEnv[] = "TIRESIAS_PROFILE_MAX_MESSAGES";
// Seconds one process records, from its start (or its fork), before it
// stops (default below; fractions allowed).
inline constexpr char kSecondsEnv[] = "TIRESIAS_PROFILE_SECONDS";

inline constexpr unsigned long long kDefaultMaxMessages = 50000;
inline constexpr double kDefaultSeconds = 300;

// The longest line the library writes (a P line cuts its argv to fit, C
// lines their addresses).
inline constexpr unsigned long long kMaxRecordLineBytes = 1100;
// The longest M line: "M <pid> <conn> <t_ns> <bytes>\n", numbers of at
// most 20, 10, 20 and 20 digits.
inline constexpr unsigned long long kMaxMessageLineBytes =
    2 + 20 + 1 + 10 + 1 + 20 + 1 + 20 + 1;

// The file name of the preloaded library.
inline constexpr char kLibraryName[] = "libtiresias_profiler.so";

}  // namespace tiresias::profiler

#endif  // TIRESIAS_PROFILER_RECORD_FORMAT_H_
