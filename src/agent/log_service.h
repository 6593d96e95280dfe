// The agent's AgentLogs gRPC service (proto/tiresias.proto): serves the log
// files of the tasks this agent ran, <state dir>/logs/job-<id>-attempt-<a>-
// rank-<r>.log, to the master, which relays them to clients (ReadJobLog).
// With TLS it serves the master alone: a client must present the master's
// certificate from the cluster's CA (logs may hold secrets).
#ifndef TIRESIAS_AGENT_LOG_SERVICE_H_
#define TIRESIAS_AGENT_LOG_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/tls.h"

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

  // `require_master`: refuse (PERMISSION_DENIED) any caller that did not
  // present the master's certificate.
  AgentLogService(std::string logs_dir, bool require_master)
      : logs_dir_(std::move(logs_dir)), require_master_(require_master) {}

  grpc::Status ReadTaskLog(grpc::ServerContext*, const v1::ReadTaskLogRequest*,
                           v1::ReadTaskLogResponse*) override;

 private:
  std::string logs_dir_;
  bool require_master_;
};

// AgentLogService on its own gRPC server.
class AgentLogServer {
 public:
  // Listens on `listen` (host:port; port 0 picks a free one) with `tls`
  // (the agent's certificate; callers must present one from the CA, and
  // only the master's is served); insecure: plain text, anyone. Errors name
  // the address.
  static absl::StatusOr<std::unique_ptr<AgentLogServer>> Start(
      const std::string& listen, std::string logs_dir,
      const security::TlsConfig& tls = security::InsecureTlsConfig());
  ~AgentLogServer();  // shuts down

  int port() const { return port_; }

 private:
  AgentLogServer(std::string logs_dir, bool require_master)
      : service_(std::move(logs_dir), require_master) {}
  AgentLogService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LOG_SERVICE_H_
