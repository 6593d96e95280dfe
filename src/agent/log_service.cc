#include "agent/log_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace tiresias {

std::string TaskLogPath(const std::string& logs_dir, int64_t job_id,
                        int attempt, int rank) {
  return absl::StrCat(logs_dir, "/job-", job_id, "-attempt-", attempt, "-rank-",
                      rank, ".log");
}

grpc::Status AgentLogService::ReadTaskLog(grpc::ServerContext* ctx,
                                          const v1::ReadTaskLogRequest* req,
                                          v1::ReadTaskLogResponse* resp) {
  if (require_master_) {
    std::optional<security::Identity> peer = security::PeerIdentity(*ctx);
    if (!peer || peer->kind != security::IdentityKind::kMaster) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "task logs are served to the master alone (its "
                          "certificate); ask the master: tiresias logs JOB");
    }
  }
  if (req->offset() < 0 || req->max_bytes() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "offset and max_bytes: must be >= 0");
  }
  const v1::TaskRef& task = req->task();
  const std::string path =
      TaskLogPath(logs_dir_, task.job_id(), task.attempt(), task.rank());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    const bool missing = errno == ENOENT;
    return grpc::Status(
        missing ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::UNAVAILABLE,
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  const int64_t size = static_cast<int64_t>(in.tellg());
  resp->set_size(size);
  const int64_t want = std::min<int64_t>(
      std::min(req->max_bytes() == 0 ? kMaxBytes : req->max_bytes(), kMaxBytes),
      std::max<int64_t>(size - req->offset(), 0));
  if (want > 0) {
    std::string data(static_cast<size_t>(want), '\0');
    in.seekg(req->offset());
    in.read(data.data(), want);
    data.resize(static_cast<size_t>(in.gcount()));
    resp->set_data(std::move(data));
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<AgentLogServer>> AgentLogServer::Start(
    const std::string& listen, std::string logs_dir,
    const security::TlsConfig& tls) {
  std::unique_ptr<AgentLogServer> server(
      new AgentLogServer(std::move(logs_dir), !tls.insecure));
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
