// The control channel: a per-user process that keeps one connection to a
// master open for the short-lived `tiresias` commands of a shell loop, as
// ssh's ControlMaster does for ssh. A `submit` that makes its own TLS
// connection spends most of its 7 ms of CPU starting gRPC and OpenSSL and
// in the handshake (BENCHMARKS.md, "The command-line client"); one that
// hands its request to the control process over a Unix socket spends what
// `tiresias --version` does.
//
// How it is used (MasterStub in cluster_client.h): a unary call goes to the
// control socket of (master address, CA, certificate, key, server name)
// when one answers; otherwise the call is made directly, as before: when
// nothing listens or the call could not be sent whole, when the control
// process does not forward the method, or when its connection to the master
// is down. A call sent whole and then left unanswered is not made again
// (the master may have carried it out): it fails UNAVAILABLE. A command that
// finds the previous command on the same endpoint ran less than kLoopWindow ago
// (a loop) starts a control process for the next ones. It serves only its
// own user (the socket's folder is 0700 and checked; each connection's
// peer uid is checked, and the command checks the listener's), forwards
// only the Tiresias service's unary methods, carries each caller's token
// per call (it keeps none: it is started with an environment without
// TIRESIAS_TOKEN and TIRESIAS_TOKEN_FILE, so /proc/PID/environ shows no
// token either), and exits
// after TIRESIAS_CONTROL_PERSIST seconds (default 10) without a call.
// TIRESIAS_CONTROL_PERSIST=0 turns it off.
#ifndef TIRESIAS_CLI_CONTROL_CHANNEL_H_
#define TIRESIAS_CLI_CONTROL_CHANNEL_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tiresias::cli::control {

// A command this soon after the previous one on the same endpoint starts
// the control process.
inline constexpr std::chrono::seconds kLoopWindow{3};
// How long after a control process failed to start no command starts one.
inline constexpr std::chrono::seconds kStartFailureBackoff{30};
// A frame larger than this is refused (a `submit --file` of 100,000 jobs
// is about 20 MiB).
inline constexpr size_t kMaxFrame = 64u << 20;

struct Request {
  std::string method;  // "/tiresias.v1.Tiresias/SubmitJob"
  std::string token;   // the caller's bearer token; empty: none
  double timeout_seconds = 10;
  std::string body;    // the serialized request message
};

struct Response {
  int code = 0;         // grpc::StatusCode
  std::string message;  // the status's message
  std::string body;     // the serialized response message (code 0)
};

// The frames on the socket: a 4-byte little-endian length, then the fields
// as length-prefixed strings (the timeout as decimal text). Decoding
// refuses a truncated frame or one with bytes left over.
std::string EncodeRequest(const Request& request);
absl::StatusOr<Request> DecodeRequest(absl::string_view frame);
std::string EncodeResponse(const Response& response);
absl::StatusOr<Response> DecodeResponse(absl::string_view frame);

// Lets this process's unary calls use the control channel. The front
// binary calls it; tiresias-full's commands (replay, up, the dashboard)
// keep their own connection.
void Enable();
bool Enabled();

// Whether `response` asks for the call to be made directly: the control
// process does not forward the method (a command newer than it), or its
// connection to the master is down right now (it answers so at once, and
// reconnects within a second). Every other answer stands.
bool CallDirectly(const Response& response);

// Where the control process of one endpoint listens.
struct Endpoint {
  std::string socket;    // DIR/ctl-HASH.sock
  std::string lock;      // DIR/ctl-HASH.lock, held by the serving process
  std::string last_use;  // DIR/ctl-HASH.last, touched by every command
  double persist_seconds = 10;
  // DIR/ctl-HASH.failed, touched by a control process that could not start
  // (no credentials, no socket); no command starts one for
  // kStartFailureBackoff after.
  std::string failed;
};

// The endpoint for a master address and the credential files, in
// $TIRESIAS_CONTROL_DIR, else $XDG_RUNTIME_DIR/tiresias, else
// /tmp/tiresias-UID, made 0700 if missing. Nullopt when the channel is off
// (TIRESIAS_CONTROL_PERSIST=0) or the folder is not safely ours: not a
// directory we own (a symbolic link counts as not ours), or open to group
// or others, since a socket someone else planted there would see our
// token.
std::optional<Endpoint> EndpointFor(const std::string& address,
                                    const std::string& ca,
                                    const std::string& cert,
                                    const std::string& key,
                                    const std::string& server_name);

// The environment NoteDirectCall starts the control process with: the
// entries of `env` (null-terminated "K=V" strings; the pointers are env's),
// less any that sets a kClientTokenVariables entry (cluster_client.h),
// then a null. It keeps the rest: the master's name, TIRESIAS_CA and the
// user certificate's files (kClientCertificateVariables), which the
// process's own TLS connection needs, TIRESIAS_CONTROL_*.
std::vector<char*> ControlProcessEnvironment(char** env);

// One call over the endpoint's socket. Unavailable when nothing listens
// there or the process there went away; the caller then calls directly.
absl::StatusOr<Response> Call(const Endpoint& endpoint,
                              const Request& request);

// Touches last_use and, when the previous command on this endpoint was
// less than kLoopWindow ago, starts the control process (this binary,
// `/proc/self/exe __control SOCKET ADDRESS`, detached, its own session,
// standard streams on /dev/null, the environment inherited for the
// credential files, less the token: ControlProcessEnvironment). Never
// fails the command: what goes wrong only loses the speed-up.
void NoteDirectCall(const Endpoint& endpoint, const std::string& address);

// The control process: `tiresias __control SOCKET ADDRESS`. Serves until
// idle for the endpoint's persist time; returns the exit code (0 also when
// another process already serves this socket).
int Serve(int argc, char** argv);

}  // namespace tiresias::cli::control

#endif  // TIRESIAS_CLI_CONTROL_CHANNEL_H_
