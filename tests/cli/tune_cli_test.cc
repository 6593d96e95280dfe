// End-to-end tests of `tiresias tune --trace`: its JSON answer on a small
// trace, the table, and bad input (one clear line naming what is wrong, a
// non-zero exit, nothing on stdout).
#include <ostream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class TuneCliTest : public CliTest {};

// 60 jobs on 8 GPUs, a grid of 2 x 2 settings (the current one among
// them): 4 rows, 15 jobs held out (a quarter), every row a run of the
// search plus a held-out run for the current settings and each finalist.
// A bound of 100 GPU-seconds with PROMOTEKNOB 2 never lets an 8-GPU job
// get past its restore: that row failed, is not eligible, ranks last.
TEST_F(TuneCliTest, JsonOnASmallTrace) {
  const ProcessResult run = Tiresias(
      {"tune", "--trace", trace_60_, "--cluster", "2x4", "--window", "1d",
       "--search", "grid", "--search-thresholds", "100,3600", "--search-knobs",
       "inf,2", "--search-orders", "stable", "--threads", "1", "--json"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  const nlohmann::json out = nlohmann::json::parse(run.out);
  EXPECT_EQ(out["jobs"], 60);
  EXPECT_EQ(out["search_jobs"], 45);
  EXPECT_EQ(out["holdout_jobs"], 15);
  ASSERT_EQ(out["rows"].size(), 4u);
  int current = 0, chosen = 0, finalists = 0;
  const nlohmann::json& last = out["rows"].back();
  EXPECT_EQ(last["settings"]["flags"],
            "--thresholds 100 --promote-knob 2 --queue-order stable");
  EXPECT_THAT(last["failed"].get<std::string>(),
              HasSubstr("preemptions in a row came before the job's restore ended"));
  EXPECT_FALSE(last["eligible"].get<bool>());
  for (const nlohmann::json& row : out["rows"]) {
    current += row["current"].get<bool>();
    chosen += row["chosen"].get<bool>();
    finalists += !row["holdout"].is_null();
    if (row["current"].get<bool>()) {
      EXPECT_EQ(row["settings"]["flags"],
                "--thresholds 3600 --promote-knob inf --queue-order stable");
      EXPECT_TRUE(row["eligible"].get<bool>());
    }
  }
  EXPECT_EQ(current, 1);
  EXPECT_EQ(chosen, 1);
  EXPECT_GE(finalists, 1);  // the current settings at least
  EXPECT_EQ(out["runs"], 4 + finalists);
  EXPECT_FALSE(out["apply"].get<bool>());  // a trace: nothing to apply to
  EXPECT_GE(out["predicted_gain"].get<double>(), 0);
}

TEST_F(TuneCliTest, TableNamesTheChoiceAndItsPrediction) {
  const ProcessResult run =
      Tiresias({"tune", "--trace", trace_60_, "--cluster", "2x4", "--window",
                "1d", "--threads", "1", "--top", "3"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_THAT(run.out, HasSubstr("RANK  THRESHOLDS"));
  EXPECT_THAT(run.out, HasSubstr("Chosen: --thresholds "));
  EXPECT_THAT(run.out, HasSubstr("held-out jobs, against the current"));
  EXPECT_THAT(run.out, HasSubstr(" current"));
}

struct BadInput {
  std::string name;
  std::vector<std::string> args;  // after `tune --trace 60_job.csv`
  std::string message;            // what stderr must contain
};
void PrintTo(const BadInput& input, std::ostream* os) { *os << input.name; }

class TuneErrorsTest : public CliTest,
                       public ::testing::WithParamInterface<BadInput> {};

TEST_P(TuneErrorsTest, FailsWithOneClearLine) {
  std::vector<std::string> args = {"tune", "--trace", trace_60_};
  for (const std::string& a : GetParam().args) args.push_back(a);
  const ProcessResult run = Tiresias(args);
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.out, "") << Describe(run);
  EXPECT_THAT(run.err, StartsWith("tiresias: "));
  EXPECT_EQ(Lines(run.err).size(), 1u) << run.err;
  EXPECT_THAT(run.err, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, TuneErrorsTest,
    ::testing::ValuesIn(std::vector<BadInput>{
        {"NoCluster", {}, "needs --cluster"},
        {"ApplyToATrace", {"--cluster", "2x4", "--apply"}, "leave out --trace"},
        {"ZeroWindow", {"--cluster", "2x4", "--window", "0"}, "--window 0"},
        {"WordWindow",
         {"--cluster", "2x4", "--window", "fortnight"},
         "--window fortnight"},
        {"UnknownSearch",
         {"--cluster", "2x4", "--search", "random"},
         "--search random"},
        {"UnknownObjective",
         {"--cluster", "2x4", "--objective", "median"},
         "--objective median"},
        {"HoldOutEverything",
         {"--cluster", "2x4", "--holdout", "1"},
         "held-out fraction 1"},
        {"ZeroKnob",
         {"--cluster", "2x4", "--search-knobs", "inf,0"},
         "--search-knobs"},
        {"DescendingBounds",
         {"--cluster", "2x4", "--search-thresholds", "7200:3250"},
         "--search-thresholds"},
        {"NoQueues",
         {"--cluster", "2x4", "--policy", "srsf"},
         "no queues to tune"},
        {"NegativeGain",
         {"--cluster", "2x4", "--min-gain", "-1"},
         "--min-gain -1"},
    }),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace tiresias::cli_test
