// The master's security as an attacker on the same network meets it: a real
// MasterServer with TLS (certificates from a CA made here), real gRPC
// clients with and without credentials, real SQLite state. Each test is an
// attack that used to work.
#include <chrono>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "agent/log_service.h"
#include "gtest/gtest.h"
#include "master/server.h"
#include "master_test_util.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/identity.h"
#include "security/pki.h"
#include "security/tls.h"

namespace tiresias::master_testing {
namespace {

using security::Identity;
using security::IdentityKind;
using security::TlsConfig;

// A cluster CA and the identities issued by it.
struct Pki {
  security::PemPair ca;
  TlsConfig Issue(Identity who, bool server) const {
    security::CertRequest req;
    req.common_name = security::CommonName(who);
    req.dns_names = {"localhost", who.name.empty() ? "master" : who.name};
    req.ip_addresses = {"127.0.0.1"};
    req.server_auth = server;
    req.client_auth = true;
    auto pair = security::IssueCertificate(ca, req);
    EXPECT_TRUE(pair.ok()) << pair.status();
    return TlsConfig{false, ca.cert_pem, pair->cert_pem, pair->key_pem};
  }
  TlsConfig ClientNoCert() const { return TlsConfig{false, ca.cert_pem, "", ""}; }
};

Pki NewPki() {
  auto ca = security::CreateCa("test cluster CA");
  EXPECT_TRUE(ca.ok()) << ca.status();
  return Pki{*ca};
}

class SecurityTest : public MasterFixture {
 protected:
  void SetUp() override {
    pki_ = NewPki();
    options_.require_auth = true;
    options_.node_timeout = Seconds{3600};
    auto state = MasterState::Open(options_, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    master_tls_ = pki_.Issue({IdentityKind::kMaster, ""}, /*server=*/true);
    auto server = MasterServer::Start(state_.get(), &real_clock_,
                                      "127.0.0.1:0", master_tls_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    auto alice = state_->CreateToken("alice", false, std::nullopt, "");
    auto bob = state_->CreateToken("bob", false, std::nullopt, "");
    auto root = state_->CreateToken("ops", true, std::nullopt, "");
    ASSERT_TRUE(alice.ok() && bob.ok() && root.ok());
    alice_ = alice->text;
    bob_ = bob->text;
    admin_ = root->text;
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<v1::Tiresias::Stub> Client(const TlsConfig& tls) {
    return v1::Tiresias::NewStub(security::Dial(address_, tls));
  }
  std::unique_ptr<v1::Tiresias::Stub> Client() {
    return Client(pki_.ClientNoCert());
  }
  // A context with a deadline and, if given, a bearer token.
  static std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "") {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!token.empty()) security::AttachToken(ctx.get(), token);
    return ctx;
  }
  grpc::Status Submit(const std::string& token, const std::string& user,
                      JobId* id, const std::string& secret = "") {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("id");
    req.mutable_spec()->set_user(user);
    if (!secret.empty()) {
      v1::EnvVar* var = req.mutable_spec()->add_env();
      var->set_key("AWS_SECRET_ACCESS_KEY");
      var->set_value(secret);
    }
    v1::SubmitJobResponse resp;
    grpc::Status s = Client()->SubmitJob(Ctx(token).get(), req, &resp);
    if (id != nullptr) *id = resp.job_id();
    return s;
  }

  Pki pki_;
  master::RealClock real_clock_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  TlsConfig master_tls_;
  std::string address_;
  std::string alice_, bob_, admin_;
};

// "An unauthenticated client submitted `id`." Now: refused, nothing stored.
TEST_F(SecurityTest, UnauthenticatedAndWrongTokenClientsAreRefused) {
  EXPECT_EQ(Submit("", "", nullptr).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A well-formed token that was never issued, and one with a wrong secret.
  const std::string forged =
      "tsk_1_" + std::string(64, 'a');
  EXPECT_EQ(Submit(forged, "", nullptr).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Submit("not a token", "", nullptr).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::ListJobsResponse jobs;
  grpc::Status s = Client()->ListJobs(Ctx().get(), {}, &jobs);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("TIRESIAS_TOKEN"), std::string::npos)
      << s.error_message();
  // Plain text does not even reach the service.
  auto plain = v1::Tiresias::NewStub(
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  EXPECT_FALSE(plain->ListJobs(Ctx(alice_).get(), {}, &jobs).ok());
  auto stored = state_->ListJobs();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
  // Refusals are in the audit log, with where they came from.
  auto audit = state_->AuditAfter(0, 100);
  ASSERT_TRUE(audit.ok());
  ASSERT_GE(audit->size(), 4u);
  EXPECT_EQ((*audit)[0].outcome, "unauthenticated");
  EXPECT_NE((*audit)[0].peer.find("127.0.0.1"), std::string::npos);
}

// "The job's user is whatever the client says": now it is the token's.
TEST_F(SecurityTest, RequestUserCannotImpersonate) {
  JobId id = 0;
  EXPECT_EQ(Submit(alice_, "bob", &id).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(Submit(alice_, "", &id).ok());
  EXPECT_EQ(state_->GetJob(id)->spec.user, "alice");
  ASSERT_TRUE(Submit(alice_, "alice", &id).ok());
  // An admin may submit for someone (a service account).
  ASSERT_TRUE(Submit(admin_, "bob", &id).ok());
  EXPECT_EQ(state_->GetJob(id)->spec.user, "bob");
}

// A job may depend only on its own user's jobs (afterok on another's
// would let a user learn when it ends and tie work to it); an admin's on
// any. Unknown ids are INVALID_ARGUMENT either way.
TEST_F(SecurityTest, DependenciesOnOthersJobsAreForAdminsOnly) {
  JobId bobs = 0;
  ASSERT_TRUE(Submit(bob_, "", &bobs).ok());
  auto submit_after = [&](const std::string& token, const std::string& user,
                          JobId on, JobId* id) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("id");
    req.mutable_spec()->set_user(user);
    v1::JobDependency* dep = req.mutable_spec()->add_dependencies();
    dep->set_kind(v1::DEPENDENCY_KIND_AFTER_OK);
    dep->set_job_id(on);
    v1::SubmitJobResponse resp;
    grpc::Status s = Client()->SubmitJob(Ctx(token).get(), req, &resp);
    *id = resp.job_id();
    return s;
  };
  JobId id = 0;
  grpc::Status refused = submit_after(alice_, "", bobs, &id);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("is bob's"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(submit_after(alice_, "", 999, &id).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(submit_after(bob_, "", bobs, &id).ok());
  EXPECT_EQ(state_->GetJob(id)->spec.dependencies.size(), 1u);
  // An admin submitting for alice may name bob's job.
  ASSERT_TRUE(submit_after(admin_, "alice", bobs, &id).ok());
  EXPECT_EQ(state_->GetJob(id)->spec.user, "alice");
}

// "Any client read another user's log and cancelled their job": now only
// its owner (or an admin) may; others do not see its environment.
TEST_F(SecurityTest, UsersCannotTouchOthersJobs) {
  JobId id = 0;
  ASSERT_TRUE(Submit(bob_, "", &id, "s3cr3t-value").ok());
  v1::CancelJobRequest cancel;
  cancel.set_job_id(id);
  v1::CancelJobResponse cancelled;
  grpc::Status s = Client()->CancelJob(Ctx(alice_).get(), cancel, &cancelled);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("bob's"), std::string::npos);
  v1::ReadJobLogRequest log;
  log.set_job_id(id);
  v1::ReadJobLogResponse log_resp;
  EXPECT_EQ(Client()->ReadJobLog(Ctx(alice_).get(), log, &log_resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Alice sees the job, not its secret.
  v1::GetJobRequest get;
  get.set_job_id(id);
  v1::GetJobResponse got;
  ASSERT_TRUE(Client()->GetJob(Ctx(alice_).get(), get, &got).ok());
  EXPECT_EQ(got.job().spec().env_size(), 0);
  v1::ListJobsResponse listed;
  ASSERT_TRUE(Client()->ListJobs(Ctx(bob_).get(), {}, &listed).ok());
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).spec().env_size(), 0);  // never in a listing
  EXPECT_EQ(listed.SerializeAsString().find("s3cr3t-value"), std::string::npos);
  // Its owner sees it, and may cancel.
  ASSERT_TRUE(Client()->GetJob(Ctx(bob_).get(), get, &got).ok());
  ASSERT_EQ(got.job().spec().env_size(), 1);
  EXPECT_EQ(got.job().spec().env(0).value(), "s3cr3t-value");
  EXPECT_TRUE(Client()->CancelJob(Ctx(bob_).get(), cancel, &cancelled).ok());
  EXPECT_EQ(state_->GetJob(id)->state, JobRecordState::kCancelled);
  // An admin may cancel anyone's.
  ASSERT_TRUE(Submit(bob_, "", &id).ok());
  cancel.set_job_id(id);
  EXPECT_TRUE(Client()->CancelJob(Ctx(admin_).get(), cancel, &cancelled).ok());
}

// Draining and resuming nodes is for admins: a user is refused (and the
// refusal audited) before the node is even looked up; an admin gets on to
// the node (here unknown: NOT_FOUND).
TEST_F(SecurityTest, OnlyAdminsDrainAndResumeNodes) {
  v1::DrainNodeRequest drain;
  drain.set_name("n1");
  drain.set_reason("maintenance");
  v1::DrainNodeResponse drained;
  EXPECT_EQ(Client()->DrainNode(Ctx().get(), drain, &drained).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status s = Client()->DrainNode(Ctx(alice_).get(), drain, &drained);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("only an admin"), std::string::npos)
      << s.error_message();
  v1::ResumeNodeRequest resume;
  resume.set_name("n1");
  v1::ResumeNodeResponse resumed;
  EXPECT_EQ(Client()->ResumeNode(Ctx(alice_).get(), resume, &resumed)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Client()->DrainNode(Ctx(admin_).get(), drain, &drained)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Client()->ResumeNode(Ctx(admin_).get(), resume, &resumed)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
  auto audit = state_->AuditAfter(0, 100);
  ASSERT_TRUE(audit.ok());
  bool refused = false;
  for (const AuditRecord& a : *audit) {
    refused = refused || (a.action == "DrainNode n1" &&
                          a.outcome == "denied" && a.principal == "alice");
  }
  EXPECT_TRUE(refused);
}

// "A revoked or expired token stops working at once."
TEST_F(SecurityTest, RevokedAndExpiredTokensStopAtOnce) {
  auto carol = state_->CreateToken("carol", false, Seconds{60}, "short");
  ASSERT_TRUE(carol.ok());
  v1::WhoAmIResponse who;
  ASSERT_TRUE(Client()->WhoAmI(Ctx(carol->text).get(), {}, &who).ok());
  EXPECT_EQ(who.user(), "carol");
  clock_.Advance(Seconds{61});  // the master's clock passes its expiry
  grpc::Status s = Client()->WhoAmI(Ctx(carol->text).get(), {}, &who);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("expired"), std::string::npos);

  auto admin = v1::Admin::NewStub(security::Dial(address_, pki_.ClientNoCert()));
  v1::RevokeTokenRequest revoke;
  revoke.set_id(std::stoll(alice_.substr(4, alice_.find('_', 4) - 4)));
  v1::RevokeTokenResponse revoked;
  // Only an admin may.
  EXPECT_EQ(admin->RevokeToken(Ctx(bob_).get(), revoke, &revoked).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(admin->RevokeToken(Ctx(admin_).get(), revoke, &revoked).ok());
  s = Client()->WhoAmI(Ctx(alice_).get(), {}, &who);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("revoked"), std::string::npos);
}

// A user certificate from the cluster's CA is a credential too.
TEST_F(SecurityTest, UserCertificateAuthenticates) {
  auto client = Client(pki_.Issue({IdentityKind::kUser, "dave"}, false));
  v1::WhoAmIResponse who;
  ASSERT_TRUE(client->WhoAmI(Ctx().get(), {}, &who).ok());
  EXPECT_EQ(who.user(), "dave");
  EXPECT_EQ(who.via(), "certificate");
  EXPECT_FALSE(who.admin());
  // An agent's certificate is not a user's.
  auto agent = Client(pki_.Issue({IdentityKind::kAgent, "n1"}, true));
  EXPECT_EQ(agent->WhoAmI(Ctx().get(), {}, &who).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

// "A rogue process registered as an agent, received a victim's job
// (including an AWS secret), reported exit 0." Now an agent must present
// its node's certificate from the cluster's CA.
TEST_F(SecurityTest, RogueAgentsAreRefused) {
  JobId id = 0;
  ASSERT_TRUE(Submit(bob_, "", &id, "s3cr3t-value").ok());
  v1::RegisterRequest reg = RegisterRequest("n1", 1);
  v1::RegisterResponse resp;
  // No certificate (a user's token does not make an agent).
  auto no_cert =
      v1::AgentRegistry::NewStub(security::Dial(address_, pki_.ClientNoCert()));
  EXPECT_EQ(no_cert->Register(Ctx(admin_).get(), reg, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A certificate from another CA: the handshake itself fails.
  Pki other = NewPki();
  TlsConfig foreign = other.Issue({IdentityKind::kAgent, "n1"}, true);
  foreign.ca_pem = pki_.ca.cert_pem;  // it trusts the master, not vice versa
  auto rogue = v1::AgentRegistry::NewStub(security::Dial(address_, foreign));
  EXPECT_FALSE(rogue->Register(Ctx().get(), reg, &resp).ok());
  // A user's certificate.
  auto user = v1::AgentRegistry::NewStub(
      security::Dial(address_, pki_.Issue({IdentityKind::kUser, "n1"}, false)));
  EXPECT_EQ(user->Register(Ctx().get(), reg, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Nothing registered: the job has nowhere to go.
  auto nodes = state_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
}

// "A forged heartbeat with a real node's id marked its job finished;
// registering under an existing node's name preempted its jobs." Now an
// agent's certificate names its node, and it speaks for that node only.
TEST_F(SecurityTest, AgentCannotActAsAnotherNode) {
  auto n1 = v1::AgentRegistry::NewStub(
      security::Dial(address_, pki_.Issue({IdentityKind::kAgent, "n1"}, true)));
  auto n2 = v1::AgentRegistry::NewStub(
      security::Dial(address_, pki_.Issue({IdentityKind::kAgent, "n2"}, true)));
  v1::RegisterResponse r1;
  ASSERT_TRUE(n1->Register(Ctx().get(), RegisterRequest("n1", 1), &r1).ok());
  v1::RegisterResponse r2;
  grpc::Status s = n2->Register(Ctx().get(), RegisterRequest("n1", 1), &r2);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("its own node"), std::string::npos);
  ASSERT_TRUE(n2->Register(Ctx().get(), RegisterRequest("n2", 1), &r2).ok());
  // n2 heartbeats with n1's id and session: refused.
  v1::HeartbeatRequest forged;
  forged.set_node_id(r1.node_id());
  forged.set_session(r1.session());
  v1::HeartbeatResponse hb;
  EXPECT_EQ(n2->Heartbeat(Ctx().get(), forged, &hb).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // n1 itself may.
  EXPECT_TRUE(n1->Heartbeat(Ctx().get(), forged, &hb).ok());
  // And its desired state is n1's alone to watch.
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
  v1::WatchDesiredStateRequest watch;
  watch.set_node_id(r1.node_id());
  watch.set_session(r1.session());
  auto reader = n2->WatchDesiredState(&watch_ctx, watch);
  v1::DesiredState desired;
  EXPECT_FALSE(reader->Read(&desired));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// "The agent log port served a task's log to anyone." Now the master alone.
TEST_F(SecurityTest, AgentLogServiceServesTheMasterAlone) {
  TestDir logs;
  auto server = AgentLogServer::Start(
      "127.0.0.1:0", logs.path().string(),
      pki_.Issue({IdentityKind::kAgent, "n1"}, true));
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  v1::ReadTaskLogRequest req;
  req.mutable_task()->set_job_id(1);
  req.mutable_task()->set_attempt(1);
  v1::ReadTaskLogResponse resp;
  security::DialOptions as_n1;
  as_n1.target_name_override = "n1";
  // A user, another agent: refused. The master: served (here: no such log).
  auto user = v1::AgentLogs::NewStub(security::Dial(
      address, pki_.Issue({IdentityKind::kUser, "alice"}, false), as_n1));
  EXPECT_EQ(user->ReadTaskLog(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  auto agent = v1::AgentLogs::NewStub(security::Dial(
      address, pki_.Issue({IdentityKind::kAgent, "n2"}, true), as_n1));
  EXPECT_EQ(agent->ReadTaskLog(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  auto anonymous = v1::AgentLogs::NewStub(
      security::Dial(address, pki_.ClientNoCert(), as_n1));
  EXPECT_FALSE(anonymous->ReadTaskLog(Ctx().get(), req, &resp).ok());
  auto master = v1::AgentLogs::NewStub(security::Dial(address, master_tls_, as_n1));
  EXPECT_EQ(master->ReadTaskLog(Ctx().get(), req, &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace tiresias::master_testing
