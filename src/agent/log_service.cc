#include "agent/log_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/task_file.h"

namespace tiresias {

std::string TaskLogPath(const std::string& logs_dir, int64_t job_id,
                        int attempt, int rank) {
  return absl::StrCat(logs_dir, "/job-", job_id, "-attempt-", attempt, "-rank-",
                      rank, ".log");
}

grpc::Status AgentLogService::CheckMaster(grpc::ServerContext* ctx) const {
  if (!require_master_) return grpc::Status::OK;
  std::optional<security::Identity> peer = security::PeerIdentity(*ctx);
  if (!peer || peer->kind != security::IdentityKind::kMaster) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "task logs and I/O are served to the master alone "
                        "(its certificate); ask the master: tiresias logs "
                        "JOB, tiresias attach JOB");
  }
  return grpc::Status::OK;
}

grpc::Status AgentLogService::ReadTaskLog(grpc::ServerContext* ctx,
                                          const v1::ReadTaskLogRequest* req,
                                          v1::ReadTaskLogResponse* resp) {
  if (grpc::Status master = CheckMaster(ctx); !master.ok()) return master;
  if (req->offset() < 0 || req->max_bytes() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "offset and max_bytes: must be >= 0");
  }
  const v1::TaskRef& task = req->task();
  const std::string path =
      TaskLogPath(logs_dir_, task.job_id(), task.attempt(), task.rank());
  // The file is the task's (its account owns it): opened as one a task may
  // have written (task_file.h), never through a link, and read in bounded
  // pieces (kMaxBytes a call) whatever its size.
  absl::StatusOr<TaskFile> file = TaskFile::Open(path);
  if (!file.ok()) {
    const grpc::StatusCode code = absl::IsNotFound(file.status())
                                      ? grpc::StatusCode::NOT_FOUND
                                  : absl::IsFailedPrecondition(file.status())
                                      ? grpc::StatusCode::FAILED_PRECONDITION
                                      : grpc::StatusCode::UNAVAILABLE;
    return grpc::Status(
        code, absl::StrCat("cannot read task log ", file.status().message()));
  }
  const int64_t size = file->size();
  resp->set_size(size);
  const int64_t want = std::min<int64_t>(
      std::min(req->max_bytes() == 0 ? kMaxBytes : req->max_bytes(), kMaxBytes),
      std::max<int64_t>(size - req->offset(), 0));
  if (want > 0) {
    absl::StatusOr<std::string> data =
        file->ReadAt(req->offset(), static_cast<size_t>(want));
    if (!data.ok()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          std::string(data.status().message()));
    }
    resp->set_data(*std::move(data));
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<AgentLogServer>> AgentLogServer::Start(
    const std::string& listen, std::string logs_dir,
    const security::TlsConfig& tls, TaskIoHooks io) {
  std::unique_ptr<AgentLogServer> server(
      new AgentLogServer(std::move(logs_dir), !tls.insecure, std::move(io)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      listen,
      security::ServerCredentials(tls,
                                  security::ClientCerts::kRequireAndVerify),
      &server->port_);
  builder.RegisterService(&server->service_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve logs on ", listen, " (address in use or not valid?)"));
  }
  return server;
}

AgentLogServer::~AgentLogServer() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
  }
}

}  // namespace tiresias
