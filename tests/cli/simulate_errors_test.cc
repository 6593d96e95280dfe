// End-to-end tests of how `tiresias simulate` meets bad input: one clear
// line on stderr that starts with "tiresias: " and names what is wrong, a
// non-zero exit, nothing on stdout, and no --out folder left behind.
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadInput {
  std::string name;  // the test's name
  // Flags after `simulate`; "{trace}" is data/60_job.csv and "{bad}" a
  // trace whose line 2 asks for -4 GPUs.
  std::vector<std::string> args;
  // What the error message must contain, with the same substitutions.
  std::vector<std::string> message;
};

// So that gtest names a failing case instead of dumping its bytes.
void PrintTo(const BadInput& input, std::ostream* os) { *os << input.name; }

const std::vector<BadInput>& BadInputs() {
  static const auto* const kCases = new std::vector<BadInput>{
      {"BadTraceLine",
       {"--trace", "{bad}", "--cluster", "4x4"},
       {"{bad}:2:", "num_gpu", "-4"}},
      {"MissingTrace",
       {"--trace", "{missing}", "--cluster", "4x4"},
       {"{missing}"}},
      {"BadCluster", {"--trace", "{trace}", "--cluster", "64y8"}, {"64y8"}},
      {"UnknownPolicy",
       {"--trace", "{trace}", "--cluster", "4x4", "--policy",
        "tiresias-l,tiresias-x"},
       {"tiresias-x"}},
      {"UnknownBaseline",
       {"--trace", "{trace}", "--cluster", "4x4", "--baseline", "nope"},
       {"nope"}},
      {"DescendingThresholds",
       {"--trace", "{trace}", "--cluster", "4x4", "--thresholds", "7200:3250"},
       {"7200", "3250"}},
      {"NegativePromoteKnob",
       {"--trace", "{trace}", "--cluster", "4x4", "--promote-knob", "-1"},
       {"\"-1\""}},
      {"UnknownSweepKey",
       {"--trace", "{trace}", "--cluster", "4x4", "--sweep", "color=red"},
       {"color"}},
      {"BadSweepValue",
       {"--trace", "{trace}", "--cluster", "4x4", "--sweep", "knob=inf,x"},
       {"\"x\""}},
      {"ZeroArrivalScale",
       {"--trace", "{trace}", "--cluster", "4x4", "--arrival-scale", "0"},
       {"arrival scale"}},
      {"UnknownQueueOrder",
       {"--trace", "{trace}", "--cluster", "4x4", "--queue-order", "lifo"},
       {"--queue-order", "\"lifo\"", "stable or start-time"}},
      {"UnknownQueueOrderInSweep",
       {"--trace", "{trace}", "--cluster", "4x4", "--sweep",
        "queue-order=stable,fifo"},
       {"\"fifo\""}},
      {"PackLimitAboveOne",
       {"--trace", "{trace}", "--cluster", "4x4", "--pack-limit", "2"},
       {"--pack-limit"}},
      {"PackLimitRefreshZero",
       {"--trace", "{trace}", "--cluster", "4x4", "--learn-pack-limit",
        "--pack-limit-refresh", "0"},
       {"--pack-limit-refresh 0", "positive"}},
      {"PackLimitCostAboveOne",
       {"--trace", "{trace}", "--cluster", "4x4", "--learn-pack-limit",
        "--pack-limit-cost", "1.5"},
       {"--pack-limit-cost 1.5"}},
      {"MissingVcFile",
       {"--trace", "{trace}", "--cluster", "4x4", "--vcs", "{missing}"},
       {"{missing}"}},
      {"BadVcCells",
       {"--trace", "{trace}", "--cluster", "4x4", "--vcs", "{badvc}"},
       {"{badvc}:3:", "field quota", "\"2x3\"", "power of two"}},
      {"VcQuotasDoNotFit",
       {"--trace", "{trace}", "--cluster", "4x4", "--vcs", "{bigvc}"},
       {"do not fit the cluster", "5x4"}},
      {"VcsWithSweep",
       {"--trace", "{trace}", "--cluster", "4x4", "--vcs", "from-trace",
        "--sweep", "seed=1,2"},
       {"--vcs", "--sweep"}},
  };
  return *kCases;
}

class SimulateErrorsTest : public CliTest,
                           public ::testing::WithParamInterface<BadInput> {
 protected:
  std::string Substitute(const std::string& text) const {
    return absl::StrReplaceAll(text, {{"{trace}", trace_60_},
                                      {"{bad}", bad_trace_.string()},
                                      {"{badvc}", bad_vcs_.string()},
                                      {"{bigvc}", big_vcs_.string()},
                                      {"{missing}", missing_.string()}});
  }

  void SetUp() override {
    CliTest::SetUp();
    bad_trace_ = MakeDir("inputs") / "bad.csv";
    std::ofstream(bad_trace_)
        << "job_id,num_gpu,submit_time,iterations,model_name,duration,"
           "interval\n"
        << "0,-4,0,606,vgg19,164,30\n";
    missing_ = dir_ / "inputs" / "no_such_trace.csv";
    bad_vcs_ = dir_ / "inputs" / "bad_vcs.txt";
    std::ofstream(bad_vcs_) << "# teams\n"
                            << "vision quota=1x4\n"
                            << "speech quota=2x3 weight=2\n";
    big_vcs_ = dir_ / "inputs" / "big_vcs.txt";
    std::ofstream(big_vcs_) << "all quota=5x4\n";
  }

  fs::path bad_vcs_, big_vcs_;
  fs::path bad_trace_;
  fs::path missing_;
};

TEST_P(SimulateErrorsTest, FailsWithOneClearLineAndWritesNothing) {
  const BadInput& input = GetParam();
  std::vector<std::string> args = {"simulate"};
  for (const std::string& arg : input.args) args.push_back(Substitute(arg));
  args.insert(args.end(), {"--out", "out"});
  const fs::path cwd = MakeDir("cwd");
  const ProcessResult run = Tiresias(args, cwd);

  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.out, "") << Describe(run);
  EXPECT_THAT(run.err, StartsWith("tiresias: "));
  EXPECT_THAT(run.err, EndsWith("\n"));
  EXPECT_EQ(Lines(run.err).size(), 1u) << "one line, got:\n" << run.err;
  for (const std::string& part : input.message) {
    EXPECT_THAT(run.err, HasSubstr(Substitute(part)));
  }
  EXPECT_FALSE(fs::exists(cwd / "out")) << "--out folder created";
  EXPECT_TRUE(fs::is_empty(cwd)) << "the command left files behind";
}

INSTANTIATE_TEST_SUITE_P(BadInputs, SimulateErrorsTest,
                         ::testing::ValuesIn(BadInputs()),
                         [](const ::testing::TestParamInfo<BadInput>& info) {
                           return info.param.name;
                         });

class SimulateOutFolderErrorsTest : public CliTest {
 protected:
  // A regular file, so that no folder can be made under it.
  fs::path Blocker() {
    const fs::path path = dir_ / "a_file";
    std::ofstream(path) << "not a folder\n";
    return path;
  }
};

TEST_F(SimulateOutFolderErrorsTest, UnwritableOutFolderIsAnError) {
  const fs::path out = Blocker() / "out";
  const ProcessResult run =
      Tiresias({"simulate", "--trace", trace_60_, "--cluster", "4x4", "--out",
                out.string()});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, StartsWith("tiresias: " + out.string()));
  EXPECT_EQ(Lines(run.err).size(), 1u) << run.err;
}

// The same with --sweep, which writes sweep.json by another path.
TEST_F(SimulateOutFolderErrorsTest, UnwritableOutFolderIsAnErrorInASweep) {
  const fs::path out = Blocker() / "out";
  const ProcessResult run =
      Tiresias({"simulate", "--trace", trace_60_, "--cluster", "4x4", "--sweep",
                "knob=inf,2", "--out", out.string()});
  EXPECT_EQ(run.signal, 0) << "the command crashed\n" << Describe(run);
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, StartsWith("tiresias: "));
  EXPECT_THAT(run.err, HasSubstr(out.string()));
  EXPECT_EQ(Lines(run.err).size(), 1u) << run.err;
}

// A mistyped command names the word and the command it looks like; exit 2
// (a usage error), nothing on stdout.
TEST_F(CliTest, MistypedCommandSuggestsTheNearestOne) {
  const fs::path cwd = MakeDir("typo");
  ProcessResult run = Tiresias({"simualte", "--trace", "x.csv"}, cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("unknown command \"simualte\"; did you mean "
                                 "\"simulate\"?"));
  run = Tiresias({"jbos"}, cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("did you mean \"jobs\"?"));
  run = Tiresias({"frobnicate"}, cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("unknown command \"frobnicate\"\n"));
}

// A mistyped flag is named with its command and the flag it looks like,
// whatever the command (the simulator's, a client's, a nested one), before
// anything runs; words after a bare "--" are the job's and are left alone.
TEST_F(CliTest, MistypedFlagNamesItAndSuggestsTheNearestOne) {
  const fs::path cwd = MakeDir("flag-typo");
  ProcessResult run = Tiresias(
      {"simulate", "--trace", "x.csv", "--cluster", "2x2", "--polcy", "fifo"},
      cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("unknown option \"--polcy\" for `tiresias "
                                 "simulate`; did you mean \"--policy\"?"));
  run = Tiresias({"submit", "--gpus", "1", "--nmae", "foo", "--", "sleep",
                  "1"},
                 cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("unknown option \"--nmae\" for `tiresias "
                                 "submit`; did you mean \"--name\"?"));
  run = Tiresias({"admin", "token", "create", "--usr=bob"}, cwd);
  EXPECT_EQ(run.exit_code, 2) << Describe(run);
  EXPECT_THAT(run.err, HasSubstr("unknown option \"--usr\" for `tiresias "
                                 "admin token create`; did you mean "
                                 "\"--user\"?"));
  // After "--": the job's own flags, not checked (the master is
  // unreachable, which is the error then).
  run = Tiresias({"submit", "--gpus", "1", "--master", "127.0.0.1:1",
                  "--retry-for", "0", "--", "sleep", "--whatever"},
                 cwd);
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("unknown option")));
  EXPECT_THAT(run.err, HasSubstr("cannot reach the master"));
}


}  // namespace
}  // namespace tiresias::cli_test
