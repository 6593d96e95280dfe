// The agent's AgentLogs gRPC service (proto/tiresias.proto): serves the log
// files of the tasks this agent ran, <state dir>/logs/job-<id>-attempt-<a>-
// rank-<r>.log, to the master, which relays them to clients (ReadJobLog).
// With TLS it serves the master alone: a client must present the master's
// certificate from the cluster's CA (logs may hold secrets).
#ifndef TIRESIAS_AGENT_LOG_SERVICE_H_
#define TIRESIAS_AGENT_LOG_SERVICE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "agent/task_io.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/tls.h"

namespace grpc {
class Server;
}

namespace tiresias {

// The log file of a task under `logs_dir` (the agent's naming).
std::string TaskLogPath(const std::string& logs_dir, int64_t job_id,
                        int attempt, int rank);

// What TaskIo needs of the agent: its interactive tasks, and the process
// group of a task it runs (nullopt: not running here, or ended).
struct TaskIoHooks {
  TaskIoRegistry* sessions = nullptr;  // null: no interactive tasks
  std::function<std::optional<pid_t>(const TaskIoRegistry::Key&)> running_pgid;
};

// TaskIo (io_service.cc): an interactive task's session (task_io.h); any
// other running task's log from its end on, polled every 100 ms (`attach`
// to a batch job: output only); or, with open.forward_port, a TCP
// connection to 127.0.0.1 (or ::1) on that port, which must be a listening
// socket that one of the task's processes holds (its process group, or its
// session with a pty): a job reaches only its own servers, never another
// user's or the agent's.
class AgentLogService final : public v1::AgentLogs::Service {
 public:
  // Most bytes one read returns.
  static constexpr int kMaxBytes = 1 << 20;

  // `require_master`: refuse (PERMISSION_DENIED) any caller that did not
  // present the master's certificate.
  AgentLogService(std::string logs_dir, bool require_master,
                  TaskIoHooks io = {})
      : logs_dir_(std::move(logs_dir)),
        require_master_(require_master),
        io_(std::move(io)) {}

  grpc::Status ReadTaskLog(grpc::ServerContext*, const v1::ReadTaskLogRequest*,
                           v1::ReadTaskLogResponse*) override;
  grpc::Status TaskIo(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>*) override;

 private:
  grpc::Status CheckMaster(grpc::ServerContext* ctx) const;
  grpc::Status SessionIo(
      grpc::ServerContext* ctx, const v1::IoOpen& open,
      std::shared_ptr<TaskIoSession> session,
      grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>* stream);
  grpc::Status TailLog(
      grpc::ServerContext* ctx, const v1::IoOpen& open,
      grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>* stream);
  grpc::Status Forward(
      grpc::ServerContext* ctx, const v1::IoOpen& open, pid_t pgid,
      grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>* stream);

  std::string logs_dir_;
  bool require_master_;
  TaskIoHooks io_;
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
      const security::TlsConfig& tls = security::InsecureTlsConfig(),
      TaskIoHooks io = {});
  ~AgentLogServer();  // shuts down

  int port() const { return port_; }

 private:
  AgentLogServer(std::string logs_dir, bool require_master, TaskIoHooks io)
      : service_(std::move(logs_dir), require_master, std::move(io)) {}
  AgentLogService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LOG_SERVICE_H_
