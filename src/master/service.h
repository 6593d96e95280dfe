// The gRPC services of the master: the client API (v1::Tiresias) and the
// agent protocol (v1::AgentRegistry), thin translations onto MasterState.
// MasterState takes its own lock, so handlers may run on any gRPC thread.
// A bad request gets a gRPC status (INVALID_ARGUMENT, NOT_FOUND,
// FAILED_PRECONDITION, ...) with MasterState's one-line message; no request
// can crash the master.
//
// SubmitJob validates the spec and request id and waits until the job is
// durable (MasterState's group commit); SubmitJobs does so for many specs,
// all or none, in one transaction of their own. ListJobs answers one page,
// filtered and cut by the store (page_size, page_token, a byte budget).
//
// WatchEvents streams the stored events with sequence > after_sequence
// (absent: from now on), then each new one once it is durable, for one job
// or all, until the client cancels or Stop() (server shutdown: the stream
// ends UNAVAILABLE): a callback stream served by EventWatches, one thread
// for every client's stream (event_watch.h).
//
// ReadJobLog asks MasterState where the task's log is (LocateTaskLog) and
// reads it from that node's agent (v1::AgentLogs.ReadTaskLog; one channel
// per node, replaced when the agent's address changes), trying candidate
// nodes in turn until one has it. Each agent call waits at most
// kAgentLogTimeout, and no longer than the client does.
#ifndef TIRESIAS_MASTER_SERVICE_H_
#define TIRESIAS_MASTER_SERVICE_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/mutex.h"
#include "master/call_auth.h"
#include "master/desired_watch.h"
#include "master/event_watch.h"
#include "master/master_state.h"
#include "master/user_streams.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/tls.h"

namespace tiresias {

class TiresiasService final
    : public v1::Tiresias::WithCallbackMethod_WatchEvents<
          v1::Tiresias::Service> {
 public:
  // `state` must outlive the service; `on_change` (may be empty) is called
  // after a request that a scheduling pass should see. `agent_tls`: the
  // master's identity when it reads logs from agents (insecure: none).
  TiresiasService(MasterState* state, std::function<void()> on_change,
                  security::TlsConfig agent_tls = security::InsecureTlsConfig())
      : state_(state),
        on_change_(std::move(on_change)),
        agent_tls_(std::move(agent_tls)),
        auth_(state),
        streams_(state->options().max_streams_per_user),
        watches_(state, kWatchPoll) {}

  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest*,
                         v1::SubmitJobResponse*) override;
  grpc::Status SubmitJobs(grpc::ServerContext*, const v1::SubmitJobsRequest*,
                          v1::SubmitJobsResponse*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*,
                      v1::GetJobResponse*) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*,
                        v1::ListJobsResponse*) override;
  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest*,
                         v1::CancelJobResponse*) override;
  grpc::Status UpdateJobs(grpc::ServerContext*, const v1::UpdateJobsRequest*,
                          v1::UpdateJobsResponse*) override;
  grpc::Status ModifyJob(grpc::ServerContext*, const v1::ModifyJobRequest*,
                         v1::ModifyJobResponse*) override;
  // Most job ids one UpdateJobs request may name.
  static constexpr int kMaxUpdateIds = 100000;
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse*) override;
  // Admins only (anyone on an --insecure master); audited.
  grpc::Status DrainNode(grpc::ServerContext*, const v1::DrainNodeRequest*,
                         v1::DrainNodeResponse*) override;
  grpc::Status ResumeNode(grpc::ServerContext*, const v1::ResumeNodeRequest*,
                          v1::ResumeNodeResponse*) override;
  grpc::Status GetClusterStatus(grpc::ServerContext*,
                                const v1::GetClusterStatusRequest*,
                                v1::ClusterStatus*) override;
  // service_history.cc; anyone authenticated.
  grpc::Status GetClusterHistory(grpc::ServerContext*,
                                 const v1::GetClusterHistoryRequest*,
                                 v1::GetClusterHistoryResponse*) override;
  grpc::Status ListVcs(grpc::ServerContext*, const v1::ListVcsRequest*,
                       v1::ListVcsResponse*) override;
  grpc::Status ListQos(grpc::ServerContext*, const v1::ListQosRequest*,
                       v1::ListQosResponse*) override;
  static constexpr int kDefaultHistoryPoints = 1000;
  static constexpr int kMaxHistoryPoints = 10000;
  grpc::ServerWriteReactor<v1::JobEvent>* WatchEvents(
      grpc::CallbackServerContext*, const v1::WatchEventsRequest*) override;
  grpc::Status ReadJobLog(grpc::ServerContext*, const v1::ReadJobLogRequest*,
                          v1::ReadJobLogResponse*) override;
  grpc::Status WhoAmI(grpc::ServerContext*, const v1::WhoAmIRequest*,
                      v1::WhoAmIResponse*) override;
  // service_io.cc: the client's stream relayed to the task's agent
  // (AgentLogs.TaskIo) and back; two threads while it is open.
  grpc::Status JobIo(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>*) override;

  // Ends every open WatchEvents stream promptly (and any opened later).
  // Call before grpc::Server::Shutdown so that it need not wait for them.
  void Stop() { watches_.Stop(); }
  // WatchEvents streams open now.
  int open_watches() { return watches_.open(); }
  // `user`'s streams open now: WatchEvents and JobIo (user_streams.h).
  int open_streams_of(const std::string& user) {
    return streams_.open_of(user);
  }
  std::map<std::string, UserStreams::Count> stream_counts() {
    return streams_.Counts();
  }

  // ListJobs: jobs in a page when the request says 0, and at most.
  static constexpr int kDefaultPageSize = 500;
  static constexpr int kMaxPageSize = 5000;
  // ListJobs ends a page once its jobs reach about this many bytes
  // (MasterState::JobListQuery::max_bytes), and never lets the encoded jobs
  // pass kMaxPageBytes: far below gRPC's 4 MiB, whatever the jobs' sizes (a
  // job is at most about 270 KiB, job_limits.h).
  static constexpr int64_t kPageBudgetBytes = 2 << 20;
  static constexpr size_t kMaxPageBytes = 3 << 20;

  static constexpr std::chrono::milliseconds kWatchPoll{200};
  static constexpr std::chrono::milliseconds kAgentLogTimeout{5000};
  // Most bytes one ReadJobLog returns (also its default).
  static constexpr int kMaxLogBytes = 1 << 20;

 private:
  void Changed() {
    if (on_change_) on_change_();
  }
  // Shared: AgentLogsStub may replace a node's channel while another
  // request still uses the old one.
  struct AgentChannel {
    std::string address;
    std::shared_ptr<v1::AgentLogs::Stub> stub;
  };
  std::shared_ptr<v1::AgentLogs::Stub> AgentLogsStub(
      const std::string& node, const std::string& address)
      ABSL_LOCKS_EXCLUDED(stubs_mu_);

  // The caller, if it may act on job `id` (its owner or an admin); else
  // Unauthenticated, NotFound or PermissionDenied (audited).
  absl::StatusOr<Principal> MayActOnJob(const grpc::ServerContext& ctx,
                                        JobId id, std::string_view action);

  MasterState* state_;
  std::function<void()> on_change_;
  security::TlsConfig agent_tls_;
  CallAuth auth_;
  UserStreams streams_;
  EventWatches watches_;
  Mutex stubs_mu_;
  std::map<std::string, AgentChannel> stubs_  // by node name
      ABSL_GUARDED_BY(stubs_mu_);
};

// The agent protocol. WatchDesiredState pushes a node's desired state each
// time its version grows (MasterState::DesiredStateAfter): a callback
// stream served by DesiredWatches, one thread for every agent's stream,
// which wakes on MasterState's desired generation and at least every
// kWatchPoll to notice an ended session (then NOT_FOUND: register again).
class AgentRegistryService final
    : public v1::AgentRegistry::WithCallbackMethod_WatchDesiredState<
          v1::AgentRegistry::Service> {
 public:
  AgentRegistryService(MasterState* state, std::function<void()> on_change)
      : state_(state),
        on_change_(std::move(on_change)),
        auth_(state),
        watches_(state, kWatchPoll) {}

  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest*,
                        v1::RegisterResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override;
  grpc::ServerWriteReactor<v1::DesiredState>* WatchDesiredState(
      grpc::CallbackServerContext*,
      const v1::WatchDesiredStateRequest*) override;

  // Ends every open WatchDesiredState stream promptly (and any opened
  // later). Call before grpc::Server::Shutdown.
  void Stop();
  // WatchDesiredState streams open now.
  int open_watches() { return watches_.open(); }

  static constexpr std::chrono::milliseconds kWatchPoll{200};

 private:
  MasterState* state_;
  std::function<void()> on_change_;
  CallAuth auth_;
  DesiredWatches watches_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_SERVICE_H_
