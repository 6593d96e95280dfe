// What the client subcommands share: the --master flag, a stub to the
// master's Tiresias service, turning a failed RPC into one line for the
// user, and the formatting of states, times and JSON.
#ifndef TIRESIAS_CLI_CLUSTER_CLIENT_H_
#define TIRESIAS_CLI_CLUSTER_CLIENT_H_

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"
#include "security/tls.h"
#include "absl/status/statusor.h"

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
  security::TlsConfig tls;
  std::string token;
  std::string server_name;
};
// Errors name the variable and the file.
absl::StatusOr<ClientCredentials> LoadClientCredentials();

// The owner a submission names: empty for a master with TLS, which knows
// who you are from your credential (and refuses a job for anyone else);
// for one started with --insecure, the login name ($USER, else the
// password database's name of this uid).
std::string OwnerToSend(const ClientCredentials& creds);

class MasterClient {
 public:
  // Loads ClientCredentials; a bad one ends the process with its error
  // (this is a command-line client).
  explicit MasterClient(std::string address);
  // With credentials the caller loaded (each load reads and checks the PEM
  // files: do it once per command).
  MasterClient(std::string address, ClientCredentials creds);
  const std::string& address() const { return address_; }
  const ClientCredentials& credentials() const { return creds_; }
  // The stub and the channel (for the other services, Admin) are made on
  // the first use, once; a command that fails before calling the master
  // never starts gRPC.
  v1::Tiresias::Stub& stub();
  std::shared_ptr<grpc::Channel> channel();
  // A context carrying kRpcDeadline; fails within a second when nothing
  // listens (after the channel's retries, security::DialOptions).
  std::unique_ptr<grpc::ClientContext> Context() const;
  // A new channel that tries to connect at the next call, whatever failed
  // before (for retries: gRPC otherwise waits out its own backoff).
  void Reconnect();

 private:
  void Connect(bool fresh);

  std::string address_;
  ClientCredentials creds_;
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

// "pending", "running", ... (lowercase, without the JOB_STATE_ prefix).
std::string JobStateName(v1::JobState state);
std::string NodeStateName(v1::NodeState state);
bool IsFinal(v1::JobState state);

// A duration as H:MM:SS (or D-HH:MM:SS past a day), like squeue; "-" for a
// negative or non-finite value.
std::string FormatDuration(double seconds);
// Unix seconds as local "YYYY-MM-DD HH:MM:SS".
std::string FormatTime(double unix_seconds);
double NowUnixSeconds();

// The message as indented JSON with proto field names (snake_case), every
// field printed. int64 fields are JSON strings, as proto3 JSON mandates;
// bytes fields (JobSpec's text) are their text, not base64, and a JobSpec's
// env is an object {"NAME": "value"}.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_CLUSTER_CLIENT_H_
