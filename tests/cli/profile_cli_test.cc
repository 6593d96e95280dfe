// End-to-end tests of `tiresias profile`: the real binary runs the
// profiler's test job (src/profiler/test_job.cc) under the real preloaded
// library. The models' skews are tested on examples/ps_train.py by
// tests/profiler/ps_train_test.py.
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class ProfileCliTest : public CliTest {
 protected:
  // `tiresias profile args...`, with TMPDIR in the test's folder so that
  // the temporary records can be seen to go.
  ProcessResult Profile(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "TMPDIR=" + (dir_ / "tmp").string(),
                                     TIRESIAS_BINARY, "profile"};
    argv.insert(argv.end(), args.begin(), args.end());
    fs::create_directories(dir_ / "tmp");
    return RunProcess(argv, {.cwd = dir_});
  }

  nlohmann::json Json(const ProcessResult& run) {
    nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
    EXPECT_TRUE(doc.is_object()) << "stdout is not JSON\n" << Describe(run);
    return doc.is_object() ? doc : nlohmann::json::object();
  }

  std::vector<std::string> TempFiles() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ / "tmp")) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }
};

// 4000, 1000, 500 and 500 bytes every 20 ms: skew 4000 / 6000. The job's
// own output goes to stderr, so stdout is JSON alone.
TEST_F(ProfileCliTest, JsonOfAPeriodicJob) {
  const ProcessResult run =
      Profile({"--json", "--", PROFILER_TEST_JOB, "periodic", "10"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("received 60000 bytes"));
  const nlohmann::json j = Json(run);
  EXPECT_EQ(j["periodic"], true);
  EXPECT_THAT(j["tensor_skew"].get<double>(), DoubleNear(4000.0 / 6000, 1e-9));
  EXPECT_THAT(j["bytes_per_iteration"].get<double>(), DoubleNear(6000, 1e-9));
  EXPECT_THAT(j["messages_per_iteration"].get<double>(), DoubleNear(4, 1e-9));
  // 20 ms of sleep and the sends: longer on a busy machine.
  EXPECT_GE(j["iteration_s"].get<double>(), 0.019);
  EXPECT_LE(j["iteration_s"].get<double>(), 0.1);
  ASSERT_EQ(j["peer_byte_shares"].size(), 1u);
  EXPECT_EQ(j["peer_byte_shares"][0]["share"], 1.0);
  ASSERT_EQ(j["message_sizes"].size(), 3u);
  EXPECT_EQ(j["message_sizes"][0]["bytes"], 4000);
  EXPECT_EQ(j["command"]["exit_code"], 0);
  EXPECT_EQ(j["command"]["signal"], nullptr);
  EXPECT_EQ(j["command"]["stopped"], nullptr);
  EXPECT_EQ(j["command"]["argv"][1], "periodic");
  EXPECT_EQ(j["recorded"]["messages"], 40);
  EXPECT_THAT(TempFiles(), IsEmpty());  // the records are gone
}

TEST_F(ProfileCliTest, TableOfAPeriodicJob) {
  const ProcessResult run = Profile({"--", PROFILER_TEST_JOB, "periodic", "8"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.out, HasSubstr("received 48000 bytes"));  // the job's
  EXPECT_THAT(run.out, HasSubstr("exited with code 0"));
  EXPECT_THAT(run.out, HasSubstr("periodic             yes"));
  EXPECT_THAT(run.out, HasSubstr("tensor skew          0.667"));
  EXPECT_THAT(run.out, HasSubstr("messages/iteration   4\n"));
}

TEST_F(ProfileCliTest, ANonPeriodicJobSaysSo) {
  const ProcessResult run =
      Profile({"--json", "--", PROFILER_TEST_JOB, "random", "150"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  const nlohmann::json j = Json(run);
  EXPECT_EQ(j["periodic"], false);
  EXPECT_EQ(j["tensor_skew"], nullptr);
  EXPECT_EQ(j["iteration_s"], nullptr);
  EXPECT_EQ(j["bytes_per_iteration"], nullptr);
  EXPECT_EQ(j["messages_per_iteration"], nullptr);
  EXPECT_THAT(j["not_periodic_reason"].get<std::string>(),
              HasSubstr("repeats"));
  EXPECT_EQ(j["recorded"]["messages"], 150);
  const ProcessResult table =
      Profile({"--", PROFILER_TEST_JOB, "random", "150"});
  EXPECT_THAT(table.out, HasSubstr("periodic             no: "));
  EXPECT_THAT(table.out, HasSubstr("tensor skew          - "));
}

TEST_F(ProfileCliTest, AMissingCommandIsAUsageError) {
  const ProcessResult run = Profile({"--json"});
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, StartsWith("tiresias: profile: no command to run"));
  EXPECT_THAT(run.out, IsEmpty());
}

TEST_F(ProfileCliTest, ACommandThatCannotRun) {
  ProcessResult run = Profile({"--", "/nonexistent/job", "x"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.err,
            "tiresias: profile: cannot run '/nonexistent/job': No such file "
            "or directory\n");
  EXPECT_THAT(run.out, IsEmpty());
  run = Profile({"--", "no-such-command-on-path"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("cannot run 'no-such-command-on-path'"));
  run = Profile({"--", trace_60_});  // a data file
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("Permission denied"));
  EXPECT_THAT(TempFiles(), IsEmpty());
}

TEST_F(ProfileCliTest, ACommandThatSendsNothing) {
  const ProcessResult run = Profile({"--", PROFILER_TEST_JOB, "quiet"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("sent nothing to profile"));
  EXPECT_THAT(run.err, HasSubstr("exited with code 0"));
  EXPECT_THAT(TempFiles(), IsEmpty());
}

// The command's own failure is reported; the profile is still printed.
TEST_F(ProfileCliTest, TheCommandsExitCodeIsReported) {
  const ProcessResult run =
      Profile({"--json", "--", "/bin/sh", "-c",
               std::string(PROFILER_TEST_JOB) + " periodic 5; exit 3"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  const nlohmann::json j = Json(run);
  EXPECT_EQ(j["command"]["exit_code"], 3);
  EXPECT_EQ(j["recorded"]["messages"], 20);
  EXPECT_THAT(run.err, HasSubstr("the command exited with code 3"));
}

// --seconds: the command is stopped (SIGTERM to its process group) and the
// profile of what it sent is printed; that is success.
TEST_F(ProfileCliTest, StopsTheCommandAtSeconds) {
  const ProcessResult run = Profile({"--json", "--seconds", "1", "--grace", "2",
                                     "--", PROFILER_TEST_JOB, "hang"});
  EXPECT_EQ(run.exit_code, 0) << Describe(run);
  const nlohmann::json j = Json(run);
  EXPECT_EQ(j["command"]["stopped"], "seconds");
  EXPECT_EQ(j["command"]["signal"], "SIGTERM");
  EXPECT_EQ(j["command"]["exit_code"], nullptr);
  EXPECT_EQ(j["recorded"]["messages"], 6);
  EXPECT_LT(j["command"]["seconds"].get<double>(), 3);
}

TEST_F(ProfileCliTest, RecordsAreKeptWhenAsked) {
  ProcessResult run = Profile(
      {"--records", "rec.txt", "--", PROFILER_TEST_JOB, "periodic", "4"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.out, HasSubstr("records in " + (dir_ / "rec.txt").string()));
  EXPECT_THAT(ReadFile(dir_ / "rec.txt"), HasSubstr("\nM "));
  run = Profile({"--records", "rec.txt", "--", PROFILER_TEST_JOB, "quiet"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("already exists"));
}

TEST_F(ProfileCliTest, BadFlags) {
  ProcessResult run =
      Profile({"--seconds", "0", "--", PROFILER_TEST_JOB, "quiet"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("--seconds"));
  run = Profile({"--seconds", "x", "--", PROFILER_TEST_JOB, "quiet"});
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
}

}  // namespace
}  // namespace tiresias::cli_test
