// A secure master as users meet it, for tests of what one user may do to
// another: a real MasterServer with TLS (a CA made here) on loopback, real
// SQLite state, bearer tokens for alice, mallory (both plain users) and an
// admin, and real gRPC stubs. The MasterState's clock is a FakeClock (the
// audit log's rate limit and summaries follow it); the server's is real.
#ifndef TIRESIAS_TESTS_MASTER_SECURE_MASTER_TEST_UTIL_H_
#define TIRESIAS_TESTS_MASTER_SECURE_MASTER_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/server.h"
#include "master_test_util.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/identity.h"
#include "security/pki.h"
#include "security/tls.h"

namespace tiresias::master_testing {

class SecureMasterTest : public MasterFixture {
 protected:
  void SetUp() override {
    auto ca = security::CreateCa("test cluster CA");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = *ca;
    options_.require_auth = true;
    options_.node_timeout = Seconds{3600};
    Open();
    security::CertRequest req;
    req.common_name =
        security::CommonName({security::IdentityKind::kMaster, ""});
    req.dns_names = {"localhost", "master"};
    req.ip_addresses = {"127.0.0.1"};
    req.server_auth = true;
    req.client_auth = true;
    auto pair = security::IssueCertificate(ca_, req);
    ASSERT_TRUE(pair.ok()) << pair.status();
    auto server =
        MasterServer::Start(master_.get(), &real_clock_, "127.0.0.1:0",
                            security::TlsConfig{false, ca_.cert_pem,
                                                pair->cert_pem, pair->key_pem});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    auto alice = master_->CreateToken("alice", false, std::nullopt, "");
    auto mallory = master_->CreateToken("mallory", false, std::nullopt, "");
    auto admin = master_->CreateToken("ops", true, std::nullopt, "");
    ASSERT_TRUE(alice.ok() && mallory.ok() && admin.ok());
    alice_ = alice->text;
    mallory_ = mallory->text;
    admin_ = admin->text;
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // A client with no certificate: it authenticates with a token, if any.
  std::shared_ptr<grpc::Channel> Channel() const {
    return security::Dial(address_,
                          security::TlsConfig{false, ca_.cert_pem, "", ""});
  }
  std::unique_ptr<v1::Tiresias::Stub> Client() const {
    return v1::Tiresias::NewStub(Channel());
  }
  std::unique_ptr<v1::Admin::Stub> AdminClient() const {
    return v1::Admin::NewStub(Channel());
  }
  // A context with a deadline and, if given, a bearer token.
  static std::unique_ptr<grpc::ClientContext> Ctx(
      const std::string& token = "") {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(10));
    if (!token.empty()) security::AttachToken(ctx.get(), token);
    return ctx;
  }

  // Audit entries whose action starts with `action_prefix` ("" any) and
  // whose outcome is `outcome` ("ok", "denied"), read as the admin.
  int AuditCount(const std::string& action_prefix,
                 const std::string& outcome) const {
    v1::ListAuditRequest req;
    v1::ListAuditResponse entries;
    grpc::Status s = AdminClient()->ListAudit(Ctx(admin_).get(), req, &entries);
    EXPECT_TRUE(s.ok()) << s.error_message();
    int count = 0;
    for (const v1::AuditEntry& e : entries.entries()) {
      count +=
          e.action().rfind(action_prefix, 0) == 0 && e.outcome() == outcome;
    }
    return count;
  }

  security::PemPair ca_;
  master::RealClock real_clock_;
  std::unique_ptr<MasterServer> server_;
  std::string address_;
  std::string alice_, mallory_, admin_;
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_TESTS_MASTER_SECURE_MASTER_TEST_UTIL_H_
