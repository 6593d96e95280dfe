// Helpers shared by the files of AgentDaemon (agent_daemon.cc: the
// converge loop; agent_protocol.cc: reports, register, heartbeat, the
// desired state; agent_recovery.cc: the state
// directory and what a restarted agent finds there; agent_tasks.cc:
// starting, stopping and reaping tasks). Not for other users.
#ifndef TIRESIAS_AGENT_AGENT_DAEMON_INTERNAL_H_
#define TIRESIAS_AGENT_AGENT_DAEMON_INTERNAL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// The gRPC stub (AgentDependencies'), kept out of the public header.
class AgentStub {
 public:
  explicit AgentStub(std::unique_ptr<v1::AgentRegistry::StubInterface> stub)
      : stub_(std::move(stub)) {}
  v1::AgentRegistry::StubInterface& get() { return *stub_; }

 private:
  std::unique_ptr<v1::AgentRegistry::StubInterface> stub_;
};

}  // namespace tiresias

namespace tiresias::agent_internal {

inline double UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

inline std::string TaskName(int64_t job, int attempt, int rank) {
  return absl::StrCat("job ", job, " attempt ", attempt, " rank ", rank);
}

// The profile in `path` for the master; nullopt if there is none. The file
// is the task's to write (AddProfiler hands it to the task's account), so
// it is read as task_file.h says: a symbolic link, anything but a regular
// file, or a file over profiler::MaxProfileFileBytes of the limits the
// agent sets is refused unread, an error naming the path (and the size);
// the caller logs it, and only the profile is lost.
absl::StatusOr<std::optional<v1::TrafficProfile>> ReadTaskProfile(
    const std::string& path);

}  // namespace tiresias::agent_internal

#endif  // TIRESIAS_AGENT_AGENT_DAEMON_INTERNAL_H_
