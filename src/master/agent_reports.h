// Checks of what agents send, at the door: a report with an impossible
// field is refused with a message naming the field, before anything of it
// reaches the master's state (a NaN end time once made a job's record
// unwritable and so wedged every later write). Pure functions.
#ifndef TIRESIAS_MASTER_AGENT_REPORTS_H_
#define TIRESIAS_MASTER_AGENT_REPORTS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/time.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// Limits on what an agent may send.
inline constexpr int kMaxNodeNameBytes = 253;
inline constexpr int kMaxAddressBytes = 255;
inline constexpr int kMinAgentTokenBytes = 16;
inline constexpr int kMaxAgentTokenBytes = 256;
// Tasks in one report: far above what any node runs (one task per launch
// and node), low enough that a report stays small.
inline constexpr int kMaxReportedTasks = 65536;
// RegisterRequest.cpus and memory_mib: at most these.
inline constexpr int kMaxNodeCpus = 65536;
inline constexpr int64_t kMaxNodeMemoryMib = int64_t{1} << 40;
// A reported time may be this far ahead of the master's clock (clock skew
// between machines), no more.
inline constexpr Seconds kMaxClockSkew{86400};

// OK, or InvalidArgument naming the field: name (1..253 bytes of printable
// UTF-8), address and log_address (at most 255 printable bytes), gpus
// (1..max_gpus), agent_token (16..256 bytes), grace_seconds (finite, >= 0),
// at most kMaxReportedTasks tasks, gpu_model and features (core/
// node_filter.h), cpus and memory_mib (0 to kMaxNodeCpus, kMaxNodeMemoryMib).
absl::Status ValidateRegisterRequest(const v1::RegisterRequest& req,
                                     int max_gpus);
// The same for a heartbeat's own fields (node_id > 0, log_address, task
// count); its task reports are checked one by one.
absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& req);

// Empty if the `index`th task report of a node with `gpus` GPUs is
// possible at master time `now`, else one line naming the field, e.g.
// "tasks[2].end_time: expected a finite Unix time, got nan".
std::string TaskReportError(const v1::TaskStatus& task, int index, int gpus,
                            Seconds now);

// True if `text` is valid UTF-8 with no control character (C0, DEL, C1).
bool IsPrintableUtf8(std::string_view text);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_AGENT_REPORTS_H_
