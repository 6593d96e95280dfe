// End-to-end tests of `tiresias admin ca init` and `tiresias admin
// {master,agent,user}-cert issue`: the real binary writes real files, and
// the folders it writes load as the daemons will load them (LoadTlsDir).
#include <sys/stat.h>

#include <string>
#include <vector>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/tls.h"

namespace tiresias::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int ModeOf(const fs::path& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : -1;
}

class AdminCertTest : public CliTest {
 protected:
  // `tiresias admin ca init ca`, expected to succeed.
  void InitCa() {
    ProcessResult run = Tiresias({"admin", "ca", "init", "ca"});
    ASSERT_EQ(run.exit_code, 0) << Describe(run);
  }
};

TEST_F(AdminCertTest, CaInitWritesTheCaAndSaysWhatNext) {
  ProcessResult run =
      Tiresias({"admin", "ca", "init", "ca", "--name", "lab CA"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(ModeOf(dir_ / "ca/ca.pem"), 0644);
  EXPECT_EQ(ModeOf(dir_ / "ca/ca-key.pem"), 0600);
  EXPECT_EQ(ModeOf(dir_ / "ca"), 0700);
  std::vector<std::string> lines = Lines(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out;
  EXPECT_THAT(lines[0], HasSubstr("ca/ca.pem"));
  EXPECT_THAT(lines[0], HasSubstr("ca/ca-key.pem"));
  EXPECT_EQ(lines[1],
            "Next: tiresias admin master-cert issue --ca-dir ca --out DIR");
  EXPECT_EQ(run.err, "");
}

TEST_F(AdminCertTest, CaInitRefusesToReplaceACa) {
  InitCa();
  const std::string before = ReadFile(dir_ / "ca/ca.pem");
  ProcessResult run = Tiresias({"admin", "ca", "init", "ca"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.err,
            "tiresias: ca/ca.pem exists; a new CA would invalidate every "
            "certificate issued\n");
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(ReadFile(dir_ / "ca/ca.pem"), before);
}

TEST_F(AdminCertTest, IssuedFoldersLoadAsTheDaemonsLoadThem) {
  InitCa();
  ProcessResult master =
      Tiresias({"admin", "master-cert", "issue", "--ca-dir", "ca", "--out", "m",
                "--san", "master.example.org", "--san", "10.0.0.9"});
  ASSERT_EQ(master.exit_code, 0) << Describe(master);
  EXPECT_THAT(master.out, HasSubstr("m/master.pem and m/master-key.pem "
                                    "(tiresias-master; names: localhost"));
  EXPECT_THAT(master.out, HasSubstr("master.example.org"));
  EXPECT_THAT(master.out, HasSubstr("127.0.0.1, ::1, 10.0.0.9) and m/ca.pem"));
  EXPECT_EQ(Lines(master.out).size(), 2u) << master.out;

  // NODE after the repeated --san: one value per --san.
  ProcessResult agent =
      Tiresias({"admin", "agent-cert", "issue", "--san", "10.0.0.3", "node-3",
                "--ca-dir", "ca", "--out", "a"});
  ASSERT_EQ(agent.exit_code, 0) << Describe(agent);
  EXPECT_THAT(agent.out, HasSubstr("(tiresias-agent:node-3; names:"));

  ProcessResult user = Tiresias(
      {"admin", "user-cert", "issue", "alice", "--ca-dir", "ca", "--out", "u"});
  ASSERT_EQ(user.exit_code, 0) << Describe(user);
  EXPECT_THAT(user.out, HasSubstr("(tiresias-user:alice)"));

  for (const auto& [folder, base] :
       std::vector<std::pair<std::string, std::string>>{
           {"m", "master"}, {"a", "agent"}, {"u", "user"}}) {
    EXPECT_EQ(ModeOf(dir_ / folder / (base + "-key.pem")), 0600) << base;
    EXPECT_EQ(ModeOf(dir_ / folder / (base + ".pem")), 0644) << base;
    EXPECT_EQ(ReadFile(dir_ / folder / "ca.pem"), ReadFile(dir_ / "ca/ca.pem"));
    absl::StatusOr<security::TlsConfig> config =
        security::LoadTlsDir((dir_ / folder).string(), base);
    EXPECT_TRUE(config.ok()) << base << ": " << config.status();
  }
}

TEST_F(AdminCertTest, BadNodeNameIsRefusedAndWritesNothing) {
  InitCa();
  for (const std::string& node : {std::string(""), std::string(254, 'n'),
                                  std::string("bad\x1b[2Jname")}) {
    ProcessResult run = Tiresias(
        {"admin", "agent-cert", "issue", node, "--ca-dir", "ca", "--out", "a"});
    EXPECT_EQ(run.exit_code, 1) << Describe(run);
    EXPECT_THAT(run.err, StartsWith("tiresias: node name: expected 1 to 253 "
                                    "bytes of printable UTF-8"));
    EXPECT_EQ(Lines(run.err).size(), 1u) << run.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "a"));
}

// An option whose value was forgotten does not take the next flag as its
// value (`--out --ca-dir=ca` made a folder named "--ca-dir=ca"), in any
// command; a job's command after -- may still hold flags.
TEST_F(AdminCertTest, AFlagIsNeverTakenAsAValue) {
  InitCa();
  ProcessResult run = Tiresias(
      {"admin", "master-cert", "issue", "--out", "--ca-dir=ca"});
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, StartsWith("tiresias: --out: needs a value, and got "
                                  "the flag --ca-dir=ca instead\n"));
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(fs::exists(dir_ / "--ca-dir=ca"));
  ProcessResult master = Tiresias({"master", "--state-dir", "--insecure"});
  EXPECT_EQ(master.exit_code, 2) << Describe(master);
  EXPECT_THAT(master.err, HasSubstr("--state-dir: needs a value"));
  EXPECT_FALSE(fs::exists(dir_ / "--insecure"));
  // After --, flags belong to the job: submit gets as far as the master.
  ProcessResult submit =
      Tiresias({"submit", "--master", "127.0.0.1:1", "--retry-for", "0",
                "--gpus", "1", "--", "python3", "--version"});
  EXPECT_EQ(submit.exit_code, 1) << Describe(submit);
  EXPECT_THAT(submit.err, HasSubstr("cannot reach the master"));
}

TEST_F(AdminCertTest, ErrorsAreOneLine) {
  InitCa();
  ProcessResult no_ca = Tiresias({"admin", "user-cert", "issue", "bob",
                                  "--ca-dir", "nowhere", "--out", "u"});
  EXPECT_EQ(no_ca.exit_code, 1);
  EXPECT_EQ(no_ca.err,
            "tiresias: nowhere/ca.pem: unreadable: No such file or "
            "directory\n");
  ProcessResult bad_user = Tiresias(
      {"admin", "user-cert", "issue", "-x", "--ca-dir", "ca", "--out", "u"});
  EXPECT_NE(bad_user.exit_code, 0);
  ProcessResult bad_validity =
      Tiresias({"admin", "master-cert", "issue", "--ca-dir", "ca", "--out", "m",
                "--valid-for", "1y"});
  EXPECT_EQ(bad_validity.exit_code, 1);
  EXPECT_THAT(bad_validity.err, StartsWith("tiresias: --valid-for: expected"));
  ProcessResult bad_san = Tiresias({"admin", "master-cert", "issue", "--ca-dir",
                                    "ca", "--out", "m", "--san", "not a host"});
  EXPECT_EQ(bad_san.exit_code, 1);
  EXPECT_EQ(bad_san.err,
            "tiresias: --san: expected a host name or an IP address, got "
            "\"not a host\"\n");
  ProcessResult missing_flag =
      Tiresias({"admin", "master-cert", "issue", "--out", "m"});
  EXPECT_EQ(missing_flag.exit_code, 2);
  EXPECT_THAT(missing_flag.err, HasSubstr("--ca-dir"));
  EXPECT_FALSE(fs::exists(dir_ / "m"));
}

}  // namespace
}  // namespace tiresias::cli_test
