// TLS credentials, channels and per-call identity in one place (STYLE.md
// "One place builds RPC channels and credentials"): every gRPC server and
// client of the cluster gets its credentials from here, so that TLS,
// proxies and deadlines are one change.
//
// Trust model: one cluster CA (pki.h). Servers present a certificate the
// CA signed; clients check it against the CA alone (never the system's
// public roots). Clients prove who they are with a CA-signed certificate
// (mutual TLS, identity in its common name, identity.h) or a bearer token
// in the call's metadata (tokens.h), or both.
//
//   ASSIGN_OR_RETURN(TlsConfig tls, LoadTlsDir("/etc/tiresias", "master"));
//   builder.AddListeningPort(addr, ServerCredentials(tls,
//                                       ClientCerts::kRequestAndVerify));
//   ...
//   std::shared_ptr<grpc::Channel> ch = Dial("master:50051", client_tls, {});
//   grpc::ClientContext ctx;  AttachToken(&ctx, token);
//
// Functions are thread-safe; TlsConfig is a plain value.
#ifndef TIRESIAS_SECURITY_TLS_H_
#define TIRESIAS_SECURITY_TLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "security/identity.h"
#include "security/rpc_status.h"

namespace tiresias::security {

// What one endpoint needs for TLS, as PEM text. insecure: plaintext, the
// other fields ignored (only with an explicit --insecure, DESIGN.md).
struct TlsConfig {
  bool insecure = false;
  std::string ca_pem;    // the cluster CA: roots for the peer's certificate
  std::string cert_pem;  // this endpoint's certificate; empty for a client
  std::string key_pem;   // ... and its private key (with cert_pem)
};

// A plaintext config, for --insecure.
inline TlsConfig InsecureTlsConfig() { return TlsConfig{.insecure = true}; }

struct TlsFiles {
  std::string ca_path;    // required
  std::string cert_path;  // optional for a client; with key_path
  std::string key_path;
};

// Reads and checks the files: the CA is a PEM certificate; cert and key
// come both or neither, the key matches the certificate, the certificate
// was signed by (one of) the CA(s) in ca_path and is valid now. Errors name
// the file and what was expected ("<path>: not a PEM certificate",
// "<path>: expired on ...", "<path>: not signed by the CA in <ca_path>").
absl::StatusOr<TlsConfig> LoadTlsConfig(const TlsFiles& files);

// LoadTlsConfig of <dir>/ca.pem, <dir>/<base_name>.pem and
// <dir>/<base_name>-key.pem, all three required (the layout that
// `tiresias admin ...-cert issue --out DIR` writes).
absl::StatusOr<TlsConfig> LoadTlsDir(const std::string& dir,
                                     const std::string& base_name);

// Whether a TLS server asks clients for a certificate.
enum class ClientCerts {
  // Clients may present a certificate; one that does must chain to the CA
  // or the handshake fails. Clients without one connect, and authenticate
  // with a bearer token instead.
  kRequestAndVerify,
  // Every client must present a CA-signed certificate (agents' log
  // service: only the master reads it).
  kRequireAndVerify,
};

// Credentials for grpc::ServerBuilder::AddListeningPort. A TLS config must
// hold cert_pem and key_pem (LoadTlsDir guarantees it); without them gRPC
// cannot listen and BuildAndStart returns null. An insecure config gives
// InsecureServerCredentials.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(
    const TlsConfig& config, ClientCerts policy);

struct DialOptions {
  // Checks the server's certificate for this name instead of the dialled
  // host, for reaching a server at an address its certificate does not
  // list (an IP, a tunnel). Empty: the dialled host.
  std::string target_name_override;
  // Other channel arguments (keepalive, message sizes...), passed through:
  // where Dial has a default for the same key (below), the caller's wins.
  grpc::ChannelArguments args;
  // Given several masters (a leader and its standbys), how long one
  // connection attempt (TCP and the TLS handshake) may take before
  // pick_first gives it up and goes on to the next address. Only when the
  // addresses resolve; a single target keeps gRPC's 20 s. Clients keep
  // 2 s, to leave a frozen leader fast; agents ask 5 s
  // (agent_dependencies.cc).
  int several_masters_attempt_ms = 2000;
  // Services ("tiresias.v1.Tiresias") whose calls gRPC retries when they
  // fail UNAVAILABLE: up to 3 attempts, 0.2 s then 0.4 s apart (each
  // +-20%), with the channel reconnecting 0.1 s after a failed connection
  // rather than 1 s, so that the retry finds a fresh connection. Only for
  // services whose every call may safely run twice (reads, idempotent
  // writes): a call the server ran whose answer the connection lost is run
  // again.
  // Why: a channel must ride out one failed connection attempt. gRPC 1.51
  // (Debian 12) fails a connect to a listening server at random under load
  // (errno overwritten between connect(2) and its check: grpc/grpc#35064;
  // BENCHMARKS.md, "With TLS and bearer tokens"), and without retries the
  // call fails at once. The price: a client of a master that is really
  // down learns it after the retries (0.6 s), not at once.
  std::vector<std::string> retry_services;
};

// Splits "a:1, b:2" at its commas (each trimmed; empty parts dropped).
std::vector<std::string> SplitAddresses(const std::string& address);
// A gRPC target naming every address of each of `addresses` (host:port,
// or [v6]:port) by IP, in order: "ipv4:10.0.0.1:5000,10.0.0.2:5000" when
// each has an IPv4 address (their IPv6 ones left out), else
// "ipv6:[..]:5000,[::ffff:10.0.0.2]:5000"; those that do not resolve are
// left out; "" if none does. Resolved once (a master's new address needs
// a new channel); an IPv6 zone (%eth0) is lost.
std::string ResolveAll(const std::vector<std::string>& addresses);

// A channel to `address` (host:port), or to the first of several that
// accepts a connection ("a:1,b:2": a master and its standbys, of which
// only the one leading listens). TLS: the CA as the only root, the
// certificate and key as the client identity when the config has them.
// Insecure: plaintext. Connects lazily, on the first call. A TLS config
// must hold ca_pem (LoadTlsConfig guarantees it): with none, gRPC would
// fall back to the system's public roots.
std::shared_ptr<grpc::Channel> Dial(const std::string& address,
                                    const TlsConfig& config,
                                    const DialOptions& options = {});

// Adds "authorization: Bearer <token>" to the call's metadata. Call before
// the call starts. Over plaintext the token travels in the clear.
void AttachToken(grpc::ClientContext* context, const std::string& token);

// The bearer token of a call ("Bearer " matched in any case), or nullopt
// when it has none or an empty one. Accepts grpc::ServerContext and
// grpc::CallbackServerContext alike.
std::optional<std::string> BearerToken(const grpc::ServerContextBase& context);

// The identity in the peer's certificate, only when the call came over TLS
// and the peer presented a certificate the handshake verified against the
// CA, and its common name is a tiresias identity; nullopt otherwise.
std::optional<Identity> PeerIdentity(const grpc::ServerContextBase& context);

// The peer's address for audit logs: "127.0.0.1:5000", "[::1]:5000", or
// gRPC's own form for other transports ("unix:/path").
std::string PeerAddress(const grpc::ServerContextBase& context);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_TLS_H_
