// What the client subcommands share: the --master flag, a stub to the
// master's Tiresias service, turning a failed RPC into one line for the
// user, and the formatting of states and times (JSON: api_json.h).
#ifndef TIRESIAS_CLI_CLUSTER_CLIENT_H_
#define TIRESIAS_CLI_CLUSTER_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/control_channel.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"
#include "security/tls.h"

namespace tiresias::cli {

// How long one client RPC may take before we give up on the master.
inline constexpr std::chrono::seconds kRpcDeadline{10};

// $TIRESIAS_MASTER if set and non-empty, else 127.0.0.1:50051.
std::string DefaultMasterAddress();

// Adds --master to `cmd`, defaulting *address to DefaultMasterAddress().
void AddMasterFlag(CLI::App* cmd, std::string* address);

// A connection to one master. Cheap to make; connects on the first call.
// How the client proves who it is, from the environment:
//   TIRESIAS_CA          the cluster CA (ca.pem): TLS. Unset: plain text, for
//                        a master started with --insecure.
//   TIRESIAS_TOKEN       a bearer token (`tiresias admin token create`), or
//   TIRESIAS_TOKEN_FILE  a file holding one (first line).
//   TIRESIAS_CERT, TIRESIAS_KEY  a user certificate and key, instead of a
//                        token (`tiresias admin user-cert issue`).
//   TIRESIAS_MASTER_NAME the name in the master's certificate, when
//                        TIRESIAS_MASTER is an address it does not list.
struct ClientCredentials {
  // With TIRESIAS_CA set, tls.insecure is false, and tls holds the PEM text
  // once loaded: at once, or, in a process that may use the control channel,
  // on its first direct connection (tls_files then says what to load), so a
  // call that the control process carries never reads or parses them.
  security::TlsConfig tls;
  security::TlsFiles tls_files;
  bool tls_pending = false;
  std::string token;
  std::string server_name;
};
// Errors name the variable and the file.
absl::StatusOr<ClientCredentials> LoadClientCredentials();
// Loads and checks the PEM files of credentials whose TLS is pending.
absl::Status LoadPendingTls(ClientCredentials* creds);

// The variables above that prove who a client is (TIRESIAS_CA and
// TIRESIAS_MASTER_NAME only say whom to trust): kClientCredentialVariables,
// the one list of their names. A bearer token (the token, or the file
// holding it) is sent with each call, so a process that carries other
// processes' calls (the control process) needs neither; a user certificate
// and its key (the paths of files) make the TLS connection itself, so that
// process keeps them.
inline constexpr std::array<const char*, 2> kClientTokenVariables = {
    "TIRESIAS_TOKEN", "TIRESIAS_TOKEN_FILE"};
inline constexpr std::array<const char*, 2> kClientCertificateVariables = {
    "TIRESIAS_CERT", "TIRESIAS_KEY"};
inline constexpr std::array<const char*, 4> kClientCredentialVariables = {
    kClientTokenVariables[0], kClientTokenVariables[1],
    kClientCertificateVariables[0], kClientCertificateVariables[1]};

// For the daemons (`tiresias agent`, `up`), which authenticate with their
// own certificates and use no client credential: removes every
// kClientCredentialVariables entry from this process's environment, so that
// nothing the daemon starts (jobs, helpers) can inherit an operator's token,
// and returns one line saying which were dropped, starting with `who`
// ("tiresias agent"); empty if none was set. Not thread-safe (unsetenv):
// call it before the daemon starts a thread.
std::string DropClientCredentials(absl::string_view who);

// The owner a submission names: empty for a master with TLS, which knows
// who you are from your credential (and refuses a job for anyone else);
// for one started with --insecure, the login name ($USER, else the
// password database's name of this uid).
std::string OwnerToSend(const ClientCredentials& creds);

class MasterClient;

// The Tiresias service as the commands call it, with the generated stub's
// signatures: each unary method goes over the control channel
// (control_channel.h) when one serves this master and these credentials,
// and directly otherwise (or when the control process fails or cannot
// reach the master); the streaming WatchEvents always goes directly. A new
// unary RPC needs its one-line method here.
class MasterStub {
 public:
  explicit MasterStub(MasterClient* client) : client_(client) {}
  grpc::Status SubmitJob(grpc::ClientContext* context,
                         const v1::SubmitJobRequest& request,
                         v1::SubmitJobResponse* response) {
    return Unary("SubmitJob", context, request, response,
                 &v1::Tiresias::Stub::SubmitJob);
  }
  grpc::Status SubmitJobs(grpc::ClientContext* context,
                          const v1::SubmitJobsRequest& request,
                          v1::SubmitJobsResponse* response) {
    return Unary("SubmitJobs", context, request, response,
                 &v1::Tiresias::Stub::SubmitJobs);
  }
  grpc::Status GetJob(grpc::ClientContext* context,
                      const v1::GetJobRequest& request,
                      v1::GetJobResponse* response) {
    return Unary("GetJob", context, request, response,
                 &v1::Tiresias::Stub::GetJob);
  }
  grpc::Status ListJobs(grpc::ClientContext* context,
                        const v1::ListJobsRequest& request,
                        v1::ListJobsResponse* response) {
    return Unary("ListJobs", context, request, response,
                 &v1::Tiresias::Stub::ListJobs);
  }
  grpc::Status CancelJob(grpc::ClientContext* context,
                         const v1::CancelJobRequest& request,
                         v1::CancelJobResponse* response) {
    return Unary("CancelJob", context, request, response,
                 &v1::Tiresias::Stub::CancelJob);
  }
  grpc::Status UpdateJobs(grpc::ClientContext* context,
                          const v1::UpdateJobsRequest& request,
                          v1::UpdateJobsResponse* response) {
    return Unary("UpdateJobs", context, request, response,
                 &v1::Tiresias::Stub::UpdateJobs);
  }
  grpc::Status ModifyJob(grpc::ClientContext* context,
                         const v1::ModifyJobRequest& request,
                         v1::ModifyJobResponse* response) {
    return Unary("ModifyJob", context, request, response,
                 &v1::Tiresias::Stub::ModifyJob);
  }
  grpc::Status ListNodes(grpc::ClientContext* context,
                         const v1::ListNodesRequest& request,
                         v1::ListNodesResponse* response) {
    return Unary("ListNodes", context, request, response,
                 &v1::Tiresias::Stub::ListNodes);
  }
  grpc::Status DrainNode(grpc::ClientContext* context,
                         const v1::DrainNodeRequest& request,
                         v1::DrainNodeResponse* response) {
    return Unary("DrainNode", context, request, response,
                 &v1::Tiresias::Stub::DrainNode);
  }
  grpc::Status ResumeNode(grpc::ClientContext* context,
                          const v1::ResumeNodeRequest& request,
                          v1::ResumeNodeResponse* response) {
    return Unary("ResumeNode", context, request, response,
                 &v1::Tiresias::Stub::ResumeNode);
  }
  grpc::Status ReadJobLog(grpc::ClientContext* context,
                          const v1::ReadJobLogRequest& request,
                          v1::ReadJobLogResponse* response) {
    return Unary("ReadJobLog", context, request, response,
                 &v1::Tiresias::Stub::ReadJobLog);
  }
  grpc::Status WhoAmI(grpc::ClientContext* context,
                      const v1::WhoAmIRequest& request,
                      v1::WhoAmIResponse* response) {
    return Unary("WhoAmI", context, request, response,
                 &v1::Tiresias::Stub::WhoAmI);
  }
  grpc::Status ListVcs(grpc::ClientContext* context,
                       const v1::ListVcsRequest& request,
                       v1::ListVcsResponse* response) {
    return Unary("ListVcs", context, request, response,
                 &v1::Tiresias::Stub::ListVcs);
  }
  grpc::Status ListQos(grpc::ClientContext* context,
                       const v1::ListQosRequest& request,
                       v1::ListQosResponse* response) {
    return Unary("ListQos", context, request, response,
                 &v1::Tiresias::Stub::ListQos);
  }
  grpc::Status GetClusterStatus(grpc::ClientContext* context,
                                const v1::GetClusterStatusRequest& request,
                                v1::ClusterStatus* response) {
    return Unary("GetClusterStatus", context, request, response,
                 &v1::Tiresias::Stub::GetClusterStatus);
  }
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> WatchEvents(
      grpc::ClientContext* context, const v1::WatchEventsRequest& request);

 private:
  template <typename Request, typename Response>
  grpc::Status Unary(const char* method, grpc::ClientContext* context,
                     const Request& request, Response* response,
                     grpc::Status (v1::Tiresias::Stub::*direct)(
                         grpc::ClientContext*, const Request&, Response*));
  // The call over the control channel; nullopt when it should be made
  // directly (no control process, or it failed or found the master
  // unreachable: the direct call has the client's own reconnects).
  std::optional<grpc::Status> ViaControl(const char* method,
                                         const grpc::ClientContext& context,
                                         const google::protobuf::Message& request,
                                         google::protobuf::Message* response);
  v1::Tiresias::Stub& Direct();

  MasterClient* client_;
};

class MasterClient {
 public:
  // Loads ClientCredentials; a bad one ends the process with its error
  // (this is a command-line client).
  explicit MasterClient(std::string address);
  // With credentials the caller loaded (each load reads and checks the PEM
  // files: do it once per command).
  MasterClient(std::string address, ClientCredentials creds);
  MasterClient(const MasterClient&) = delete;  // stub() points back here
  MasterClient& operator=(const MasterClient&) = delete;
  const std::string& address() const { return address_; }
  const ClientCredentials& credentials() const { return creds_; }
  // The stub and the channel (for the other services, Admin) are made on
  // the first use, once; a command that fails before calling the master
  // never starts gRPC.
  MasterStub& stub() { return stub_wrapper_; }
  // The generated stub on this process's own channel.
  v1::Tiresias::Stub& grpc_stub();
  std::shared_ptr<grpc::Channel> channel();
  // A context carrying kRpcDeadline and the caller's credential (the
  // token, when there is one); fails within a second when nothing listens
  // (after the channel's retries, security::DialOptions), unless several
  // masters are given: then it waits up to the deadline for one to lead.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // The same credential without a deadline, for a stream that lasts as long
  // as its caller wants (WatchEvents).
  std::unique_ptr<grpc::ClientContext> StreamContext() const;
  // A new channel that tries to connect at the next call, whatever failed
  // before (for retries: gRPC otherwise waits out its own backoff).
  void Reconnect();

 private:
  void Connect(bool fresh);

  friend class MasterStub;
  // The control endpoint: looked up on the first call, once.
  const control::Endpoint* ControlEndpoint();

  std::string address_;
  ClientCredentials creds_;
  bool endpoint_looked_up_ = false;
  std::optional<control::Endpoint> endpoint_;
  MasterStub stub_wrapper_{this};
  std::shared_ptr<grpc::Channel> channel_;  // null until first used
  std::unique_ptr<v1::Tiresias::Stub> stub_;
};

// One line (no "tiresias: " prefix, no newline) saying why `what` (e.g.
// "job 7", "submit") failed: master unreachable (naming the address), not
// found, rejected with the master's reason, and so on.
std::string DescribeRpcError(const grpc::Status& status,
                             const std::string& address,
                             const std::string& what);

// Prints "tiresias: <message>" on stderr and returns 1, the exit code.
int Fail(const std::string& message);

// Every job `req` selects, page after page (req's page token advanced),
// each handed to `fn`. A failed page: UNAVAILABLE with DescribeRpcError's
// line naming `what`.
absl::Status ForEachListedJob(MasterClient& client, v1::ListJobsRequest req,
                              const std::string& what,
                              const std::function<void(v1::Job&)>& fn);

// An admin's change of a record read first (a VC, a QOS), sent with what
// was read so that the master refuses it (ABORTED) if another admin
// changed the record in between: `attempt` reads, applies the flags and
// sends; one that was beaten is tried again from the read, at most 5
// times. Returns `attempt`'s last status; a problem found before sending
// is `attempt`'s to report (it returns that status, not ABORTED).
grpc::Status RetryWhileAborted(const std::function<grpc::Status()>& attempt);

// The id of the job `text` names (cli/job_ref.h): a plain id as it is,
// with no call; ARRAYID_INDEX ("12_3") by asking the master for the
// array's jobs. A one-line error naming `text` otherwise (unknown array or
// index, the master unreachable).
// GetJob on the master: the call's status, and the job once it is OK.
grpc::Status GetJob(MasterClient& client, int64_t id, v1::Job* job);

absl::StatusOr<int64_t> ResolveJobRef(MasterClient& client,
                                      absl::string_view text);

// "pending", "running", ... (lowercase, without the JOB_STATE_ prefix).
std::string JobStateName(v1::JobState state);
std::string NodeStateName(v1::NodeState state);
// The inverse of JobStateName ("failed", any case); false for a word that
// names no state.
bool ParseJobStateName(absl::string_view word, v1::JobState* state);
bool IsFinal(v1::JobState state);

// A duration as H:MM:SS (or D-HH:MM:SS past a day), like squeue; "-" for a
// negative or non-finite value.
std::string FormatDuration(double seconds);
// Unix seconds as local "YYYY-MM-DD HH:MM:SS".
std::string FormatTime(double unix_seconds);
// The scheduling settings in force, their source and drift, in words (one
// line; `status`, `admin tuning set`).
std::string DescribeTuning(const v1::TuningStatus& status);
double NowUnixSeconds();

template <typename Request, typename Response>
grpc::Status MasterStub::Unary(
    const char* method, grpc::ClientContext* context, const Request& request,
    Response* response,
    grpc::Status (v1::Tiresias::Stub::*direct)(grpc::ClientContext*,
                                               const Request&, Response*)) {
  if (std::optional<grpc::Status> status =
          ViaControl(method, *context, request, response)) {
    return *status;
  }
  return (Direct().*direct)(context, request, response);
}

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_CLUSTER_CLIENT_H_
