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

namespace tiresias::cli {

// How long one client RPC may take before we give up on the master.
inline constexpr std::chrono::seconds kRpcDeadline{10};

// $TIRESIAS_MASTER if set and non-empty, else 127.0.0.1:50051.
std::string DefaultMasterAddress();

// Adds --master to `cmd`, defaulting *address to DefaultMasterAddress().
void AddMasterFlag(CLI::App* cmd, std::string* address);

// A connection to one master. Cheap to make; connects on the first call.
class MasterClient {
 public:
  explicit MasterClient(std::string address);
  const std::string& address() const { return address_; }
  v1::Tiresias::Stub& stub() { return *stub_; }
  // A context carrying kRpcDeadline; fails fast when nothing listens.
  std::unique_ptr<grpc::ClientContext> Context() const;
  // A new channel that tries to connect at the next call, whatever failed
  // before (for retries: gRPC otherwise waits out its own backoff).
  void Reconnect();

 private:
  void Connect(bool fresh);

  std::string address_;
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
