// The traffic profiler as the rest of Tiresias uses it: how to run a
// process under it (the environment to add) and how to turn what it wrote
// into a Profile, as a value and as JSON or a table. `tiresias profile`
// uses this; so will the agent (profile a job's first launch) and the
// master (store the profile with the job).
//
//   ASSIGN_OR_RETURN(std::string lib, FindProfilerLibrary());
//   for (auto& [k, v] : ProfilerEnvironment(lib, out_path, limits,
//                                            getenv("LD_PRELOAD")))
//     setenv(k, v);                      // in the child, before exec
//   ... run the task ...
//   ASSIGN_OR_RETURN(Profile p, ProfileFromFile(out_path));
#ifndef TIRESIAS_PROFILER_PROFILER_H_
#define TIRESIAS_PROFILER_PROFILER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "profiler/profile_analysis.h"

namespace tiresias::profiler {

// Where libtiresias_profiler.so is: $TIRESIAS_PROFILER_LIB if set, else
// next to the running executable, in ../profiler (the build tree) or
// ../lib/tiresias (an install). NotFound names the places looked at.
absl::StatusOr<std::string> FindProfilerLibrary();

struct RecordingLimits {
  uint64_t max_messages_per_process = 50000;
  double seconds_per_process = 300;
};

// The largest profile file a reader takes from processes recording under
// `limits` (a reader that distrusts the file, as the agent does, refuses a
// larger one unread). Each process writes at most its P and E lines, one C
// line per connection and one M line per message up to
// max_messages_per_process; the number of processes is not bounded by the
// library (every fork records on), so the bound allows kProfileProcesses
// processes at their full limits with kProfileConnections connections
// each: about 31 MiB under the defaults. A profile of more is refused.
inline constexpr int kProfileProcesses = 8;
inline constexpr int kProfileConnections = 256;
uint64_t MaxProfileFileBytes(const RecordingLimits& limits);

// The variables that make a process (and its children) record into
// `out_path`: LD_PRELOAD (the library first, then `existing_preload` if
// any), TIRESIAS_PROFILE_OUT and the limits.
std::vector<std::pair<std::string, std::string>> ProfilerEnvironment(
    const std::string& library, const std::string& out_path,
    const RecordingLimits& limits, const char* existing_preload);

// Analyses the text of a profile file (ParseRecords, then Analyze).
Profile ProfileFromText(absl::string_view text,
                        const PeriodOptions& options = {});

// Reads and analyses a profile file. NotFound when it does not exist (the
// job sent nothing on a socket); a file with no messages is a Profile with
// periodic false.
absl::StatusOr<Profile> ProfileFromFile(const std::string& path,
                                        const PeriodOptions& options = {});

// The profile as JSON. Always: periodic, tensor_skew, iteration_s,
// bytes_per_iteration, messages_per_iteration (null when not periodic),
// peer_byte_shares [{peer, bytes, share}], message_sizes [{bytes, count}],
// processes, recorded {messages, bytes, seconds, processes, connections}.
nlohmann::json ProfileToJson(const Profile& profile);

// The profile for a terminal: a summary, then per-process and per-peer
// tables and the largest message sizes.
std::string FormatProfile(const Profile& profile);

}  // namespace tiresias::profiler

#endif  // TIRESIAS_PROFILER_PROFILER_H_
