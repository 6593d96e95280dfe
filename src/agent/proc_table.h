// What the agent asks the kernel about processes it did not necessarily
// start (for example tasks left running by a previous agent), behind an
// interface so that tests can replace it (STYLE rule 4).
//
// A pid alone does not identify a process: pids are reused. A process is
// identified by (pid, start time), the start time being field 22 of
// /proc/<pid>/stat (clock ticks since boot), which the kernel fixes at fork.
#ifndef TIRESIAS_AGENT_PROC_TABLE_H_
#define TIRESIAS_AGENT_PROC_TABLE_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias {

struct ProcStat {
  char state = '?';          // 'R', 'S', 'D', 'Z' (zombie), 'X' (dead), ...
  pid_t pgid = 0;            // process group
  uint64_t start_ticks = 0;  // start time, clock ticks after boot

  // A zombie has exited; it only waits for its parent to reap it.
  bool exited() const { return state == 'Z' || state == 'X'; }
};

// Parses the text of /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from its last ')'.
absl::StatusOr<ProcStat> ParseProcStat(std::string_view text);

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  // The process `pid` as it is now; nullopt if there is none. An error only
  // when the process exists but cannot be read or parsed.
  virtual absl::StatusOr<std::optional<ProcStat>> Stat(pid_t pid) = 0;
};

// Reads /proc. Never null, never destroyed, thread-safe.
ProcessTable* RealProcessTable();

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_PROC_TABLE_H_
