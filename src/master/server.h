// MasterServer: the running master. A grpc::Server serving TiresiasService
// and AgentRegistryService over one MasterState, and one scheduling thread
// that calls MasterState::RunPass when woken (submit, cancel, agent
// reports, node changes) or at the scheduler's next wakeup, CheckTimeouts
// every second, and RecordClusterSample every options().history_interval
// (the dashboard's chart); the notifications each pass queued go to its
// Notifier.
//
//   ASSIGN_OR_RETURN(auto server, MasterServer::Start(state.get(), &clock,
//                                                     "127.0.0.1:0"));
//   ... server->port() ...
//   server->Shutdown();  // also done by the destructor
#ifndef TIRESIAS_MASTER_SERVER_H_
#define TIRESIAS_MASTER_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "master/admin_service.h"
#include "master/clock.h"
#include "master/master_state.h"
#include "master/notifier.h"
#include "master/service.h"
#include "security/tls.h"

namespace tiresias {

class MasterServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one). `state`
  // and `clock` must outlive the server. Unavailable if it cannot bind.
  // `tls`: the master's identity and the cluster's CA (security/tls.h);
  // clients may present certificates, agents must (checked per call). An
  // insecure config serves plain text.
  static absl::StatusOr<std::unique_ptr<MasterServer>> Start(
      MasterState* state, master::Clock* clock, const std::string& address,
      const security::TlsConfig& tls = security::InsecureTlsConfig());
  ~MasterServer();

  int port() const { return port_; }
  // The agents' WatchDesiredState streams open now.
  int open_watches() { return agent_service_.open_watches(); }
  // The clients' WatchEvents streams open now.
  int open_event_watches() { return tiresias_service_.open_watches(); }
  // `user`'s WatchEvents and JobIo streams open now (MasterOptions::
  // max_streams_per_user).
  int open_streams_of(const std::string& user) {
    return tiresias_service_.open_streams_of(user);
  }
  // Each user's streams open and refused (/metrics).
  std::map<std::string, UserStreams::Count> stream_counts() {
    return tiresias_service_.stream_counts();
  }
  // Asks the scheduling thread for a pass soon. Thread-safe.
  void Notify() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving (in-flight calls finish) and joins the scheduling thread.
  // Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  MasterServer(MasterState* state, master::Clock* clock,
               const security::TlsConfig& tls);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Every 10 s, on the loop's thread: says so (at most once a minute) when
  // 90% of the open-file limit is in use, before connections are refused.
  void WatchOpenFiles(std::chrono::steady_clock::time_point now);
  // Every second, on the loop's thread: gives glibc's freed memory back to
  // the system (malloc_trim) once the resident size grew 64 MiB since it
  // last did. A large answer (every job listed) is built and freed on a
  // server thread, and glibc keeps what it freed in that thread's arena:
  // a full listing of 100,000 jobs held 250 MB for good.
  void ReleaseFreedMemory();

  MasterState* state_;
  master::Clock* clock_;
  TiresiasService tiresias_service_;
  AgentRegistryService agent_service_;
  AdminService admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  // Delivers what MasterState::TakeNotifications gives, each pass.
  std::unique_ptr<Notifier> notifier_;

  Mutex mu_;
  SteadyCondVar cv_;  // signalled when notified_ or stopping_ is set
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // WatchOpenFiles's, touched only by the loop's thread.
  std::chrono::steady_clock::time_point next_files_check_{};
  std::chrono::steady_clock::time_point next_files_warning_{};
  // ReleaseFreedMemory's: the resident bytes after it last trimmed.
  int64_t trimmed_rss_ = 0;
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_SERVER_H_
