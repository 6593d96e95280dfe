// `tiresias master` started the way an operator starts it, secure (TLS,
// tokens), as a child process, driven by the real `tiresias` binary and
// raw HTTP (issue 21): /metrics wants a token unless the operator opens it
// (--metrics-open), and `tiresias admin audit` reads a log that a user
// tried to poison with invalid UTF-8 and terminal escapes.
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/testing/test_dir.h"
#include "core/utf8.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

using cli_test::ProcessResult;
using cli_test::RunProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class MasterSecurityCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"TIRESIAS_MASTER", "TIRESIAS_CA", "TIRESIAS_TOKEN",
                             "TIRESIAS_TOKEN_FILE", "TIRESIAS_CERT",
                             "TIRESIAS_KEY", "TIRESIAS_MASTER_NAME"}) {
      unsetenv(name);
    }
  }

  // `tiresias master --init-ca DIR --http-listen 127.0.0.1:0 extra...`.
  void StartMaster(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--init-ca",
                                     (dir_.path() / "tls").string(),
                                     "--http-listen", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    master_ = std::make_unique<MasterProcess>(
        TIRESIAS_BINARY, (dir_.path() / "state").string(), args,
        (dir_.path() / "master.log").string());
    ASSERT_FALSE(master_->address().empty())
        << master_->output() << ReadFile(dir_.path() / "master.log");
    std::ifstream token_file(dir_.path() / "state" / "admin-token");
    std::getline(token_file, admin_token_);
    ASSERT_FALSE(admin_token_.empty());
    metrics_port_ = MetricsPort(*master_);
    ASSERT_GT(metrics_port_, 0) << master_->output();
  }

  // `tiresias args...` against the master with `token`.
  ProcessResult Cli(const std::string& token,
                    const std::vector<std::string>& args) {
    setenv("TIRESIAS_MASTER", master_->address().c_str(), 1);
    setenv("TIRESIAS_CA", (dir_.path() / "tls" / "ca.pem").c_str(), 1);
    setenv("TIRESIAS_TOKEN", token.c_str(), 1);
    std::vector<std::string> argv = {TIRESIAS_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv);
    unsetenv("TIRESIAS_TOKEN");
    return r;
  }

  // GET /metrics, with "Authorization: Bearer <token>" if a token is given.
  int MetricsStatus(const std::string& token) {
    httplib::Client client("127.0.0.1", metrics_port_);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    auto res = client.Get("/metrics", headers);
    EXPECT_TRUE(res) << httplib::to_string(res.error());
    return res ? res->status : -1;
  }

  test_support::TestDir dir_{"tiresias-master-security"};
  std::unique_ptr<MasterProcess> master_;
  std::string admin_token_;
  int metrics_port_ = 0;
};

// "/metrics is open on a standalone master unless --metrics-token-required."
// Now a secure master wants a token by default.
TEST_F(MasterSecurityCliTest, MetricsWantATokenByDefault) {
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  EXPECT_THAT(master_->output(),
              HasSubstr("(send \"Authorization: Bearer <token>\")"));
  EXPECT_EQ(MetricsStatus(""), 401);
  EXPECT_EQ(MetricsStatus(admin_token_), 200);
}

// The old flag still starts a master (scripts keep working): now the
// default, the same answers.
TEST_F(MasterSecurityCliTest, MetricsTokenRequiredIsStillAccepted) {
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--metrics-token-required"}));
  EXPECT_EQ(MetricsStatus(""), 401);
  EXPECT_EQ(MetricsStatus(admin_token_), 200);
}

// The operator's explicit opt-out.
TEST_F(MasterSecurityCliTest, MetricsOpenServesWithoutAToken) {
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--metrics-open"}));
  EXPECT_THAT(master_->output(), Not(HasSubstr("Authorization")));
  EXPECT_EQ(MetricsStatus(""), 200);
}

TEST_F(MasterSecurityCliTest, MetricsOpenAndTokenRequiredConflict) {
  ProcessResult r =
      RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_.path() / "state").string(), "--init-ca",
                  (dir_.path() / "tls").string(), "--metrics-open",
                  "--metrics-token-required"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--metrics-open"));
  EXPECT_THAT(ReadFile(dir_.path() / "state" / "admin-token"), "");
}

// "One refused UpdateJobs whose user field held invalid UTF-8 made
// `tiresias admin audit` fail with a protobuf parse error, hiding every
// later entry." Now the refusal is listed, escaped, and so is what followed.
TEST_F(MasterSecurityCliTest, AdminAuditReadsALogAUserTriedToPoison) {
  ASSERT_NO_FATAL_FAILURE(StartMaster());
  ProcessResult created = Cli(admin_token_, {"admin", "token", "create",
                                             "--user", "mallory", "--json"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string mallory =
      json::parse(created.out, nullptr, false).value("token", "");
  ASSERT_FALSE(mallory.empty()) << created.out;

  ProcessResult refused =
      Cli(mallory, {"cancel", "--user", "alice\xff\n\x1b[2J"});
  EXPECT_NE(refused.exit_code, 0);
  // Later entries: another token issued.
  ASSERT_EQ(Cli(admin_token_, {"admin", "token", "create", "--user", "carol"})
                .exit_code,
            0);

  ProcessResult audit = Cli(admin_token_, {"admin", "audit"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_THAT(audit.out, HasSubstr("alice\\xff\\n\\x1b[2J"));
  EXPECT_THAT(audit.out, HasSubstr("for carol"));
  EXPECT_EQ(FirstInvalidUtf8(audit.out), std::string_view::npos);
  ProcessResult as_json = Cli(admin_token_, {"admin", "audit", "--json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json entries = json::parse(as_json.out, nullptr, false);
  ASSERT_FALSE(entries.is_discarded()) << as_json.out;
  EXPECT_THAT(as_json.out, HasSubstr("mallory"));
  EXPECT_THAT(as_json.out, HasSubstr("for carol"));
}

}  // namespace
}  // namespace tiresias::cluster_test

namespace tiresias::cluster_test {
namespace {

// `admin notify-key --user NAME` reads the key a secure master made in its
// state dir at first start and prints the user's webhook key: the hex
// HMAC-SHA256 of "tiresias-notify-user:NAME" under it (what `openssl dgst
// -sha256 -hmac KEY` gives), one per user; a missing key is an error that
// makes nothing.
TEST_F(MasterSecurityCliTest, AdminNotifyKeyPrintsEachUsersOwnKey) {
  StartMaster();
  const std::string state = (dir_.path() / "state").string();
  const std::string cluster_key =
      ReadFile(dir_.path() / "state" / "notify-key");
  ASSERT_EQ(cluster_key.size(), 65u);  // 64 hex digits and a newline
  auto key_of = [&](const std::string& user) {
    return RunProcess({TIRESIAS_BINARY, "admin", "notify-key", "--user", user,
                       "--state-dir", state});
  };
  const ProcessResult alice = key_of("alice");
  ASSERT_EQ(alice.exit_code, 0) << alice.err;
  const ProcessResult openssl = RunProcess(
      {"/bin/sh", "-c",
       "printf %s tiresias-notify-user:alice | openssl dgst -sha256 -hmac "
       "\"$0\" | sed 's/.*= //'",
       cluster_key.substr(0, 64)});
  ASSERT_EQ(openssl.exit_code, 0) << openssl.err;
  EXPECT_EQ(alice.out, openssl.out);
  const ProcessResult bob = key_of("bob");
  ASSERT_EQ(bob.exit_code, 0) << bob.err;
  EXPECT_NE(bob.out, alice.out);
  EXPECT_EQ(bob.out.size(), 65u);
  const std::string missing = (dir_.path() / "nowhere").string();
  const ProcessResult none =
      RunProcess({TIRESIAS_BINARY, "admin", "notify-key", "--user", "alice",
                  "--state-dir", missing});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("cannot read the master's notify key"));
  EXPECT_FALSE(std::filesystem::exists(missing));
}

}  // namespace
}  // namespace tiresias::cluster_test
