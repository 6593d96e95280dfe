// The audit log against a caller who wants to blind it (issue 21, finding
// 5), over real gRPC with TLS and tokens and real SQLite: a refused call
// whose fields hold invalid UTF-8 or control characters must not make the
// log unreadable, and a flood of refusals must leave a count of every one,
// by cause, in the log and on /metrics.
#include <httplib.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/utf8.h"
#include "gmock/gmock.h"
#include "master/http_server.h"
#include "secure_master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;

class AuditGrpcTest : public SecureMasterTest {
 protected:
  // UpdateJobs (cancel) by `token` on the jobs of `user`.
  grpc::Status CancelAllOf(const std::string& token, const std::string& user) {
    v1::UpdateJobsRequest req;
    req.set_action(v1::JOB_ACTION_CANCEL);
    req.set_user(user);
    v1::UpdateJobsResponse resp;
    return Client()->UpdateJobs(Ctx(token).get(), req, &resp);
  }
  // The whole audit log through the Admin API, as the admin.
  std::vector<v1::AuditEntry> ReadAudit() {
    v1::ListAuditRequest req;
    v1::ListAuditResponse resp;
    grpc::Status s = AdminClient()->ListAudit(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return {resp.entries().begin(), resp.entries().end()};
  }
  static bool Clean(const std::string& text) {
    return text == PrintableText(text) &&
           FirstInvalidUtf8(text) == std::string_view::npos;
  }
};

// "One refused UpdateJobs whose user held invalid UTF-8 made `tiresias
// admin audit` fail with a parse error, hiding every later entry." Now the
// refusal is there, escaped, and so is what came after.
TEST_F(AuditGrpcTest, InvalidUtf8InACallerFieldIsEscapedNotPoisonous) {
  const grpc::Status refused = CancelAllOf(mallory_, "alice\xff\n\x1b[2J");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A later entry: a token issued by the admin.
  v1::CreateTokenRequest create;
  create.set_user("carol");
  v1::CreateTokenResponse created;
  ASSERT_TRUE(
      AdminClient()->CreateToken(Ctx(admin_).get(), create, &created).ok());

  const std::vector<v1::AuditEntry> log = ReadAudit();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].principal(), "mallory");
  EXPECT_EQ(log[0].outcome(), "denied");
  EXPECT_THAT(log[0].action(), HasSubstr("UpdateJobs"));
  EXPECT_THAT(log[0].detail(), HasSubstr("(alice\\xff\\n\\x1b[2J)"));
  EXPECT_THAT(log[1].action(), HasSubstr("CreateToken"));
  EXPECT_THAT(log[1].detail(), HasSubstr("carol"));
  for (const v1::AuditEntry& e : log) {
    for (const std::string* field :
         {&e.principal(), &e.peer(), &e.action(), &e.outcome(), &e.detail()}) {
      EXPECT_TRUE(Clean(*field)) << *field;
    }
  }
}

// A caller's field is kept bounded: a megabyte of user name does not make
// a megabyte entry.
TEST_F(AuditGrpcTest, CallerTextIsBoundedInTheLog) {
  const std::string huge(1 << 20, 'x');
  // Refused (the refusal's message, which names the user, is too large a
  // trailer for gRPC: RESOURCE_EXHAUSTED reaches the client).
  EXPECT_FALSE(CancelAllOf(mallory_, huge).ok());
  const std::vector<v1::AuditEntry> log = ReadAudit();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_LT(log[0].detail().size(), 4096u);
  EXPECT_THAT(log[0].detail(), HasSubstr("bytes cut"));
}

// The sum of the counters of one family on a /metrics page whose labels
// contain `labels`.
int64_t Sum(const std::string& page, const std::string& family,
            const std::string& labels) {
  int64_t sum = 0;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (!absl::StartsWith(line, family + "{")) continue;
    if (!absl::StrContains(line, labels)) continue;
    int64_t value = 0;
    EXPECT_TRUE(absl::SimpleAtoi(line.substr(line.rfind(' ') + 1), &value))
        << line;
    sum += value;
  }
  return sum;
}

// "The audit rate limit dropped the details of 129 of about 150
// refusals." Now every refusal is counted by cause: the ones written in
// detail and the summary entry add up to 150, and so do the counters on
// /metrics.
TEST_F(AuditGrpcTest, RefusalsOverTheLimitAreCountedByCause) {
  // 150 refusals in one second of the master's clock: 120 by mallory, 30
  // by someone with no token at all.
  for (int i = 0; i < 120; ++i) {
    ASSERT_EQ(CancelAllOf(mallory_, "alice").error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  for (int i = 0; i < 30; ++i) {
    v1::ListJobsResponse jobs;
    ASSERT_EQ(Client()->ListJobs(Ctx().get(), {}, &jobs).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // A second later, anything the log records (here a token issued) finds
  // the window open again.
  clock_.Advance(Seconds{1.5});
  v1::CreateTokenRequest create;
  create.set_user("carol");
  v1::CreateTokenResponse created;
  ASSERT_TRUE(
      AdminClient()->CreateToken(Ctx(admin_).get(), create, &created).ok());

  const std::vector<v1::AuditEntry> log = ReadAudit();
  int detailed = 0;
  const v1::AuditEntry* summary = nullptr;
  for (const v1::AuditEntry& e : log) {
    if (e.outcome() == "denied" || e.outcome() == "unauthenticated") {
      ++detailed;
    } else if (e.outcome() == "unrecorded") {
      summary = &e;
    }
  }
  EXPECT_EQ(detailed, MasterState::kAuditRefusalsPerSecond);
  ASSERT_NE(summary, nullptr) << "no summary of the refusals not recorded";
  const int unrecorded = 150 - MasterState::kAuditRefusalsPerSecond;
  EXPECT_THAT(summary->detail(),
              HasSubstr(absl::StrCat("dropped ", unrecorded, " refusals: ")));
  EXPECT_THAT(summary->detail(),
              HasSubstr(absl::StrCat(120 - MasterState::kAuditRefusalsPerSecond,
                                     " UpdateJobs by mallory: denied")));
  EXPECT_THAT(summary->detail(),
              HasSubstr("30 ListJobs by -: unauthenticated"));

  auto http = MasterHttpServer::Start(master_.get(), "127.0.0.1:0",
                                      {.metrics_token_required = true});
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client client("127.0.0.1", (*http)->port());
  auto res = client.Get("/metrics", {{"Authorization", "Bearer " + admin_}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const std::string& page = res->body;
  EXPECT_THAT(page, HasSubstr("# TYPE tiresias_audit_refusals_total counter"));
  EXPECT_EQ(Sum(page, "tiresias_audit_refusals_total", ""), 150) << page;
  EXPECT_EQ(Sum(page, "tiresias_audit_refusals_total",
                "action=\"UpdateJobs\",outcome=\"denied\",user=\"mallory\""),
            120);
  EXPECT_EQ(Sum(page, "tiresias_audit_refusals_total",
                "action=\"ListJobs\",outcome=\"unauthenticated\",user=\"-\""),
            30);
  EXPECT_EQ(Sum(page, "tiresias_audit_refusals_unrecorded_total", ""),
            unrecorded);
  (*http)->Shutdown();
}

}  // namespace
}  // namespace tiresias::master_testing
