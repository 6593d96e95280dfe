// Real TLS handshakes between a real gRPC server on 127.0.0.1 (a fake
// AgentLogs service that records what the security helpers see of each
// call) and real clients.
#include "security/tls.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/pem_files.h"
#include "security/pki.h"

namespace tiresias::security {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// What the server saw of the last call.
struct Seen {
  std::optional<std::string> token;
  std::optional<Identity> identity;
  std::string peer;
};

class FakeLogs final : public v1::AgentLogs::Service {
 public:
  grpc::Status ReadTaskLog(grpc::ServerContext* context,
                           const v1::ReadTaskLogRequest*,
                           v1::ReadTaskLogResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    seen_ = {BearerToken(*context), PeerIdentity(*context),
             PeerAddress(*context)};
    response->set_data("hello");
    return grpc::Status::OK;
  }
  Seen seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  Seen seen_;
};

// Certificates made once for the whole suite (key generation is the slow
// part of these tests).
struct Pki {
  PemPair ca, master, agent, user, named_only;
  PemPair other_ca, other_agent, other_master;
};

PemPair Issue(const PemPair& ca, CertRequest request) {
  absl::StatusOr<PemPair> pair = IssueCertificate(ca, request);
  EXPECT_TRUE(pair.ok()) << pair.status();
  return pair.ok() ? *pair : PemPair{};
}

Pki MakePki() {
  Pki p;
  p.ca = *CreateCa("tls test CA");
  p.other_ca = *CreateCa("another CA");
  const CertRequest master{.common_name = "tiresias-master",
                           .dns_names = {"localhost"},
                           .ip_addresses = {"127.0.0.1"},
                           .server_auth = true,
                           .client_auth = true};
  const CertRequest agent{.common_name = "tiresias-agent:node-1",
                          .ip_addresses = {"127.0.0.1"},
                          .server_auth = true,
                          .client_auth = true};
  p.master = Issue(p.ca, master);
  p.agent = Issue(p.ca, agent);
  p.user =
      Issue(p.ca, {.common_name = "tiresias-user:alice", .client_auth = true});
  p.named_only = Issue(p.ca, {.common_name = "tiresias-master",
                              .dns_names = {"master.cluster.internal"},
                              .server_auth = true});
  p.other_master = Issue(p.other_ca, master);
  p.other_agent = Issue(p.other_ca, agent);
  return p;
}

TlsConfig Tls(const PemPair& ca, const PemPair& own = {}) {
  return TlsConfig{
      .ca_pem = ca.cert_pem, .cert_pem = own.cert_pem, .key_pem = own.key_pem};
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new Pki(MakePki()); }
  static void TearDownTestSuite() { delete pki_; }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // Starts the fake service on 127.0.0.1 with `credentials`.
  void Serve(std::shared_ptr<grpc::ServerCredentials> credentials) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
  }

  // One ReadTaskLog call over `channel`, with `token` if not empty.
  grpc::Status Call(std::shared_ptr<grpc::Channel> channel,
                    const std::string& token = "") {
    std::unique_ptr<v1::AgentLogs::Stub> stub = v1::AgentLogs::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    if (!token.empty()) AttachToken(&context, token);
    v1::ReadTaskLogRequest request;
    v1::ReadTaskLogResponse response;
    grpc::Status status = stub->ReadTaskLog(&context, request, &response);
    if (status.ok()) {
      EXPECT_EQ(response.data(), "hello");
    }
    return status;
  }

  static Pki* pki_;
  FakeLogs service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

Pki* TlsTest::pki_ = nullptr;

TEST_F(TlsTest, HandshakeWithTheClusterCaAndATokenInsteadOfACert) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca)), "tsk_1_abc");
  ASSERT_TRUE(status.ok()) << status.error_message();
  Seen seen = service_.seen();
  EXPECT_EQ(seen.token, "tsk_1_abc");
  EXPECT_EQ(seen.identity, std::nullopt) << "no client certificate";
  EXPECT_THAT(seen.peer, StartsWith("127.0.0.1:"));
}

TEST_F(TlsTest, PeerIdentityNamesTheAgentOfAVerifiedCertificate) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca, pki_->agent)));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(service_.seen().identity,
            (Identity{IdentityKind::kAgent, "node-1"}));
  EXPECT_EQ(service_.seen().token, std::nullopt);
}

TEST_F(TlsTest, PeerIdentityNamesTheUser) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  ASSERT_TRUE(Call(Dial(address_, Tls(pki_->ca, pki_->user))).ok());
  EXPECT_EQ(service_.seen().identity, (Identity{IdentityKind::kUser, "alice"}));
}

TEST_F(TlsTest, ClientCertificateFromAnotherCaIsRefused) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca, pki_->other_agent)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(TlsTest, ExtendedKeyUsageIsEnforcedBothWays) {
  // A server-only certificate cannot be a client's...
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  EXPECT_EQ(Call(Dial(address_, Tls(pki_->ca, pki_->named_only))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  server_->Shutdown();
  // ...and a user's (client-only) certificate cannot serve.
  Serve(ServerCredentials(Tls(pki_->ca, pki_->user),
                          ClientCerts::kRequestAndVerify));
  DialOptions options;
  options.target_name_override = "tiresias-user:alice";  // its only name
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca), options));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("certificate verify failed"));
}

TEST_F(TlsTest, ServerCertificateFromAnotherCaIsRefused) {
  Serve(ServerCredentials(Tls(pki_->other_ca, pki_->other_master),
                          ClientCerts::kRequestAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("certificate verify failed"));
}

TEST_F(TlsTest, RequireAndVerifyRefusesAClientWithoutCertificate) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->agent),
                          ClientCerts::kRequireAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca)), "tsk_1_abc");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(TlsTest, RequireAndVerifyAcceptsACertificateOfTheCa) {
  // The master reading an agent's logs: both sides present certificates.
  Serve(ServerCredentials(Tls(pki_->ca, pki_->agent),
                          ClientCerts::kRequireAndVerify));
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca, pki_->master)));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(service_.seen().identity, (Identity{IdentityKind::kMaster, ""}));
}

TEST_F(TlsTest, PlaintextClientCannotTalkToATlsServer) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  grpc::Status status = Call(Dial(address_, InsecureTlsConfig()), "tsk_1_a");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_EQ(service_.seen().token, std::nullopt) << "no call reached it";
}

TEST_F(TlsTest, TlsClientCannotTalkToAPlaintextServer) {
  Serve(ServerCredentials(InsecureTlsConfig(), ClientCerts::kRequestAndVerify));
  EXPECT_EQ(Call(Dial(address_, Tls(pki_->ca))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, InsecureOnBothSidesWorksAndHasNoPeerIdentity) {
  Serve(ServerCredentials(InsecureTlsConfig(), ClientCerts::kRequireAndVerify));
  ASSERT_TRUE(Call(Dial(address_, InsecureTlsConfig()), "tsk_2_b").ok());
  EXPECT_EQ(service_.seen().token, "tsk_2_b");
  EXPECT_EQ(service_.seen().identity, std::nullopt);
}

TEST_F(TlsTest, TargetNameOverrideReachesACertificateWithoutTheDialledName) {
  // The certificate lists only master.cluster.internal; we dial 127.0.0.1.
  Serve(ServerCredentials(Tls(pki_->ca, pki_->named_only),
                          ClientCerts::kRequestAndVerify));
  grpc::Status plain = Call(Dial(address_, Tls(pki_->ca)));
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(plain.error_message(),
              HasSubstr("Peer name 127.0.0.1 is not in peer certificate"));
  DialOptions options;
  options.target_name_override = "master.cluster.internal";
  grpc::Status overridden = Call(Dial(address_, Tls(pki_->ca), options));
  EXPECT_TRUE(overridden.ok()) << overridden.error_message();
  options.target_name_override = "someone.else";
  EXPECT_FALSE(Call(Dial(address_, Tls(pki_->ca), options)).ok());
}

// A port nothing listens on (bound, then let go).
// A TCP socket bound to a free loopback port, and that port.
int BoundSocket(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in in = {};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(in);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof(in)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&in), &size), 0);
  *port = ntohs(in.sin_port);
  return fd;
}

int ClosedPort() {
  int port = 0;
  close(BoundSocket(&port));
  return port;
}

// Several masters (a leader and its standbys): the one that listens is
// reached, wherever it is in the list, over TLS checked for the first
// address's name.
TEST_F(TlsTest, SeveralAddressesReachTheOneThatListens) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  const std::string closed = "127.0.0.1:" + std::to_string(ClosedPort());
  for (const std::string& list :
       {closed + "," + address_, address_ + ", " + closed}) {
    grpc::Status status = Call(Dial(list, Tls(pki_->ca)));
    EXPECT_TRUE(status.ok()) << list << ": " << status.error_message();
  }
  // A single address with a stray comma is that address.
  EXPECT_TRUE(Call(Dial(address_ + ",", Tls(pki_->ca))).ok());
}

// A master frozen with its port open (SIGSTOP) first in the list: the
// kernel completes the TCP handshake, the TLS one never ends. The channel
// gives the attempt up after 2 s and reaches the next address; a caller
// may ask for longer (agents ask 5 s: a loaded master's handshakes take
// longer than 2 s, BENCHMARKS.md). As gRPC 1.51 (Debian 12) does it: a
// later pick_first starts on the next address after 250 ms.
TEST_F(TlsTest, AnAttemptOnAFrozenMasterIsGivenUpAfter2SecondsOrAsAsked) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  int port = 0;
  const int frozen = BoundSocket(&port);
  ASSERT_EQ(listen(frozen, 16), 0);  // never accepted
  const std::string list = "127.0.0.1:" + std::to_string(port) + "," + address_;
  auto seconds_to_reach = [&](const DialOptions& options) {
    const auto began = std::chrono::steady_clock::now();
    grpc::Status status = Call(Dial(list, Tls(pki_->ca), options));
    EXPECT_TRUE(status.ok()) << status.error_message();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         began)
        .count();
  };
  const double by_default = seconds_to_reach({});
  EXPECT_GE(by_default, 1.5);
  EXPECT_LT(by_default, 4.5);
  DialOptions longer;
  longer.several_masters_attempt_ms = 5000;
  const double asked = seconds_to_reach(longer);
  EXPECT_GE(asked, 4.5);
  EXPECT_LT(asked, 9.5);
  EXPECT_GT(asked - by_default, 2);
  // A caller's own channel argument wins over the field and Dial's default.
  DialOptions by_argument;
  by_argument.args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  EXPECT_GE(seconds_to_reach(by_argument), 4.5);
  close(frozen);
}

TEST_F(TlsTest, SeveralAddressesStillCheckTheCertificatesName) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->named_only),
                          ClientCerts::kRequestAndVerify));
  const std::string closed = "127.0.0.1:" + std::to_string(ClosedPort());
  grpc::Status status = Call(Dial(closed + "," + address_, Tls(pki_->ca)));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(),
              HasSubstr("Peer name 127.0.0.1 is not in peer certificate"));
}

TEST(ResolveAllTest, NamesEveryAddressInOrderInOneFamily) {
  EXPECT_EQ(SplitAddresses(" a:1 , ,b:2,"),
            (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(ResolveAll({"127.0.0.2:7", "127.0.0.1:8"}),
            "ipv4:127.0.0.2:7,127.0.0.1:8");
  // localhost's IPv4 address is kept whatever order the resolver gives.
  EXPECT_THAT(ResolveAll({"localhost:9", "127.0.0.1:8"}),
              HasSubstr("ipv4:127.0.0.1:9,127.0.0.1:8"));
  // A master with only an IPv6 address: all as IPv6, IPv4 ones mapped.
  EXPECT_EQ(ResolveAll({"[::1]:7", "127.0.0.1:8"}),
            "ipv6:[::1]:7,[::ffff:127.0.0.1]:8");
  EXPECT_EQ(ResolveAll({"no-such-host.invalid:7", "127.0.0.1:8"}),
            "ipv4:127.0.0.1:8");
  EXPECT_EQ(ResolveAll({"no-such-host.invalid:7", "no-port"}), "");
}

TEST_F(TlsTest, ChannelArgumentsPassThrough) {
  Serve(ServerCredentials(Tls(pki_->ca, pki_->master),
                          ClientCerts::kRequestAndVerify));
  DialOptions options;
  options.args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  options.args.SetMaxReceiveMessageSize(1);  // "hello" is more than 1 byte
  grpc::Status status = Call(Dial(address_, Tls(pki_->ca), options));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
}

TEST_F(TlsTest, ServerWithoutACertificateDoesNotStart) {
  // The contract ServerCredentials states: no cert, no listening port.
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      "127.0.0.1:0",
      ServerCredentials(Tls(pki_->ca), ClientCerts::kRequestAndVerify), &port);
  builder.RegisterService(&service_);
  EXPECT_EQ(builder.BuildAndStart(), nullptr);
}

TEST_F(TlsTest, BearerSchemeIsMatchedInAnyCase) {
  Serve(ServerCredentials(InsecureTlsConfig(), ClientCerts::kRequestAndVerify));
  // The token the server reads from a call with this authorization value.
  auto token_of = [&](const char* authorization) {
    std::unique_ptr<v1::AgentLogs::Stub> stub =
        v1::AgentLogs::NewStub(Dial(address_, InsecureTlsConfig()));
    grpc::ClientContext context;
    context.AddMetadata("authorization", authorization);
    v1::ReadTaskLogResponse response;
    EXPECT_TRUE(stub->ReadTaskLog(&context, {}, &response).ok());
    return service_.seen().token;
  };
  EXPECT_EQ(token_of("bearer tsk_3_c"), "tsk_3_c");
  EXPECT_EQ(token_of("BEARER tsk_3_c"), "tsk_3_c");
  EXPECT_EQ(token_of("Basic dXNlcjpwdw=="), std::nullopt);
  EXPECT_EQ(token_of("Bearer "), std::nullopt);
  EXPECT_EQ(token_of("Bearertsk"), std::nullopt);
}

// Files: what LoadTlsConfig accepts and how it names what it refuses.
class LoadTlsTest : public TlsTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    return dir_.Write(name, text, 0600);
  }
  test_support::TestDir dir_{"load_tls_test"};
};

TEST_F(LoadTlsTest, LoadsADirectoryAndServesFromIt) {
  ASSERT_TRUE(WritePemFiles(dir_.path().string(), "agent", pki_->agent).ok());
  ASSERT_TRUE(WritePemFiles(dir_.path().string(), "ca", pki_->ca).ok());
  absl::StatusOr<TlsConfig> config = LoadTlsDir(dir_.path().string(), "agent");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->insecure);
  EXPECT_EQ(config->ca_pem, pki_->ca.cert_pem);
  EXPECT_EQ(config->cert_pem, pki_->agent.cert_pem);
  EXPECT_EQ(config->key_pem, pki_->agent.key_pem);
  Serve(ServerCredentials(*config, ClientCerts::kRequireAndVerify));
  EXPECT_TRUE(Call(Dial(address_, Tls(pki_->ca, pki_->master))).ok());
}

TEST_F(LoadTlsTest, ClientNeedsOnlyTheCa) {
  const std::string ca = Write("ca.pem", pki_->ca.cert_pem);
  absl::StatusOr<TlsConfig> config = LoadTlsConfig({.ca_path = ca});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->cert_pem.empty());
  EXPECT_TRUE(config->key_pem.empty());
}

TEST_F(LoadTlsTest, ErrorsNameTheFile) {
  const std::string ca = Write("ca.pem", pki_->ca.cert_pem);
  const std::string cert = Write("agent.pem", pki_->agent.cert_pem);
  const std::string key = Write("agent-key.pem", pki_->agent.key_pem);
  const std::string user_key = Write("user-key.pem", pki_->user.key_pem);
  const std::string foreign = Write("other.pem", pki_->other_agent.cert_pem);
  const std::string foreign_key =
      Write("other-key.pem", pki_->other_agent.key_pem);
  auto message = [](const TlsFiles& files) {
    return std::string(LoadTlsConfig(files).status().message());
  };
  EXPECT_EQ(message({ca, cert, user_key}),
            user_key + ": does not match the certificate in " + cert);
  EXPECT_EQ(message({ca, foreign, foreign_key}),
            foreign + ": not signed by the CA in " + ca);
  EXPECT_EQ(message({key, cert, key}), key + ": not a PEM certificate");
  EXPECT_EQ(message({ca, cert, cert}),
            cert +
                ": not a PEM private key (or one protected by a "
                "passphrase)");
  EXPECT_EQ(message({dir_.File("nope.pem"), cert, key}),
            dir_.File("nope.pem") + ": unreadable: No such file or directory");
  EXPECT_THAT(message({ca, cert, ""}), HasSubstr("expected both or neither"));
  EXPECT_THAT(message({"", "", ""}), HasSubstr("CA file"));
  EXPECT_THAT(
      std::string(LoadTlsDir(dir_.File("empty"), "master").status().message()),
      HasSubstr(dir_.File("empty") + "/ca.pem: unreadable"));
}

TEST_F(LoadTlsTest, ExpiredCertificateIsNamed) {
  // A CA that lived one second, and a certificate cut to its end.
  absl::StatusOr<PemPair> short_ca = CreateCa("short", std::chrono::seconds(1));
  ASSERT_TRUE(short_ca.ok());
  PemPair leaf =
      Issue(*short_ca, {.common_name = "tiresias-master", .server_auth = true});
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const std::string ca = Write("ca.pem", short_ca->cert_pem);
  EXPECT_THAT(std::string(LoadTlsConfig({ca}).status().message()),
              HasSubstr(ca + ": expired on "));
}

// A free port on 127.0.0.1 (bound, then released), for a server that must
// start after its client dialled.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// A channel with retry_services rides out a failed connection attempt (the
// server not there yet, as after gRPC 1.51's spurious connect failures);
// without them the call fails at once.
TEST_F(TlsTest, RetryServicesRideOutAFailedConnection) {
  address_ = "127.0.0.1:" + std::to_string(FreePort());
  grpc::Status plain = Call(Dial(address_, InsecureTlsConfig()));
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE);

  DialOptions options;
  options.retry_services = {"tiresias.v1.AgentLogs"};
  std::shared_ptr<grpc::Channel> channel =
      Dial(address_, InsecureTlsConfig(), options);
  std::thread later([&] {
    // Up once the channel's first attempt has failed.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (channel->GetState(/*try_to_connect=*/false) !=
               GRPC_CHANNEL_TRANSIENT_FAILURE &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  });
  const auto start = std::chrono::steady_clock::now();
  grpc::Status retried = Call(channel);
  later.join();
  ASSERT_NE(server_, nullptr);
  EXPECT_TRUE(retried.ok()) << retried.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// With nothing listening at all, the retries end and the call fails
// UNAVAILABLE: a client of a master that is down still hears so.
TEST_F(TlsTest, RetryServicesStillFailWhenNothingListens) {
  address_ = "127.0.0.1:" + std::to_string(FreePort());
  DialOptions options;
  options.retry_services = {"tiresias.v1.AgentLogs"};
  grpc::Status status = Call(Dial(address_, InsecureTlsConfig(), options));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace tiresias::security
