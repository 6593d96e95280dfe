// The agent's AgentLogs gRPC service (proto/tiresias.proto): serves the log
// files of the tasks this agent ran, <state dir>/logs/job-<id>-attempt-<a>-
// rank-<r>.log, to the master, which relays them to clients (ReadJobLog).
#ifndef TIRESIAS_AGENT_LOG_SERVICE_H_
#define TIRESIAS_AGENT_LOG_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/tiresias.grpc.pb.h"

namespace grpc {
class Server;
}

namespace tiresias {

// The log file of a task under `logs_dir` (the agent's naming).
std::string TaskLogPath(const std::string& logs_dir, int64_t job_id,
                        int attempt, int rank);

class AgentLogService final : public v1::AgentLogs::Service {
 public:
  // Most bytes one read returns.
  static constexpr int kMaxBytes = 1 << 20;

  explicit AgentLogService(std::string logs_dir)
      : logs_dir_(std::move(logs_dir)) {}

  grpc::Status ReadTaskLog(grpc::ServerContext*, const v1::ReadTaskLogRequest*,
                           v1::ReadTaskLogResponse*) override;

 private:
  std::string logs_dir_;
};

// AgentLogService on its own gRPC server.
class AgentLogServer {
 public:
  // Listens on `listen` (host:port; port 0 picks a free one). Errors name
  // the address.
  static absl::StatusOr<std::unique_ptr<AgentLogServer>> Start(
      const std::string& listen, std::string logs_dir);
  ~AgentLogServer();  // shuts down

  int port() const { return port_; }

 private:
  AgentLogServer(std::string logs_dir) : service_(std::move(logs_dir)) {}
  AgentLogService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LOG_SERVICE_H_
