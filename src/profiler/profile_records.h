// Reading a profile file (record_format.h) back into values: the processes
// that recorded, their connections and every message, as written by the
// preloaded library. Pure parsing; analysis is profile_analysis.h.
#ifndef TIRESIAS_PROFILER_PROFILE_RECORDS_H_
#define TIRESIAS_PROFILER_PROFILE_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tiresias::profiler {

// A process image: a process from its first record, until it execs another
// program (which records as a new image under the same pid).
struct ProcessRecord {
  int64_t pid = 0;
  int64_t ppid = 0;
  uint64_t start_ns = 0;          // CLOCK_MONOTONIC of its first record
  std::vector<std::string> argv;  // possibly cut short by the writer
  std::string stop_reason;        // "messages", "seconds", "exit", or ""
};

struct ConnectionRecord {
  size_t process = 0;  // index into Records::processes
  uint32_t conn = 0;   // unique within the process
  std::string kind;    // "tcp", "unix", "verbs"
  std::string local;   // addresses as written, unescaped; "" if unknown
  std::string peer;
};

struct MessageRecord {
  size_t process = 0;  // index into Records::processes
  uint32_t conn = 0;
  uint64_t t_ns = 0;  // when its first byte was handed to the kernel
  uint64_t bytes = 0;
};

struct Records {
  std::vector<ProcessRecord> processes;
  std::vector<ConnectionRecord> connections;
  std::vector<MessageRecord> messages;  // in file order
  // Lines that did not parse (a process killed mid-write, a foreign line).
  int64_t malformed_lines = 0;
};

// Parses a whole file's text. Never fails: what does not parse is counted
// in malformed_lines. A line belongs to the latest P line of its pid
// before it (each process writes its P line first, and flushes before it
// execs); a pid without one gets a process with no argv. A message of a
// connection with no C line is kept (the analysis calls its peer unknown).
Records ParseRecords(absl::string_view text);

// Reads and parses `path`. NotFound if it does not exist (a job that sent
// nothing leaves no file); other read errors name the path.
absl::StatusOr<Records> ReadRecordsFile(const std::string& path);

// Undoes the %XX escaping of a text field; "-" is the empty string.
std::string Unescape(absl::string_view field);

}  // namespace tiresias::profiler

#endif  // TIRESIAS_PROFILER_PROFILE_RECORDS_H_
