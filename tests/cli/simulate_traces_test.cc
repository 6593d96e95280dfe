// End-to-end tests of `tiresias simulate` on each trace format: detection
// from the file, --trace-format, the notes on rows a reader left out, and a
// wrong format named on the command line.
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

class SimulateTracesTest : public CliTest {
 protected:
  // Runs simulate --json on `trace` with 8 GPUs; returns the jobs each
  // policy ran (all equal) and leaves stderr in `err`.
  int JobsRun(const std::string& trace, const std::string& format,
              std::string* err) {
    std::vector<std::string> args = {"simulate", "--trace",   trace,
                                     "--cluster", "2x4",      "--json",
                                     "--policy",  "tiresias-l"};
    if (!format.empty()) args.insert(args.end(), {"--trace-format", format});
    const ProcessResult run = Tiresias(args);
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    *err = run.err;
    json doc = json::parse(run.out, nullptr, false);
    if (!doc.is_object() || doc["policies"].empty()) {
      ADD_FAILURE() << Describe(run);
      return -1;
    }
    return doc["policies"][0]["jobs"];
  }
};

TEST_F(SimulateTracesTest, EachFormatIsDetectedOrNamed) {
  std::string err;
  const std::string gavel = DataFile("gavel_artifact_evaluation.trace");
  EXPECT_EQ(JobsRun(gavel, "", &err), 15);
  EXPECT_EQ(err, "");
  EXPECT_EQ(JobsRun(gavel, "gavel", &err), 15);

  // 5 of 8 Helios jobs are COMPLETED with GPUs; one wants 16 of 8 GPUs.
  const std::string helios = DataFile("examples/helios_cluster_log.csv");
  EXPECT_EQ(JobsRun(helios, "", &err), 4);
  EXPECT_THAT(Lines(err),
              ElementsAre("tiresias: Helios: skipped 1 completed jobs without "
                          "GPUs (gpu_num 0)",
                          "tiresias: Helios: skipped 1 jobs in state CANCELLED",
                          "tiresias: Helios: skipped 1 jobs in state FAILED",
                          "tiresias: 1 jobs need more GPUs than the cluster's "
                          "8 and are excluded"));
  EXPECT_EQ(JobsRun(helios, "helios", &err), 4);

  // PAI: the folder, or the headerless job table, which --format names too.
  EXPECT_EQ(JobsRun(DataFile("examples/pai"), "", &err), 3);
  EXPECT_THAT(err, HasSubstr("tiresias: PAI: skipped 1 jobs with status "
                             "Failed\n"));
  EXPECT_EQ(JobsRun(DataFile("examples/pai/pai_job_table.csv"), "pai", &err),
            3);
}

TEST_F(SimulateTracesTest, WrongOrUnknownFormatIsOneClearLine) {
  const std::string helios = DataFile("examples/helios_cluster_log.csv");
  ProcessResult run = Tiresias({"simulate", "--trace", helios, "--cluster",
                                "2x4", "--trace-format", "gavel"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "tiresias: " + helios +
                         ":1: expected a Gavel trace line of 10, 9 or 7 "
                         "tab-separated fields, got 1\n");

  run = Tiresias({"simulate", "--trace", helios, "--cluster", "2x4",
                  "--trace-format", "alibaba"});
  EXPECT_EQ(run.exit_code, 1) << Describe(run);
  EXPECT_EQ(run.err,
            "tiresias: unknown trace format \"alibaba\"; expected auto, "
            "tiresias, philly, gavel, helios or pai\n");
}

}  // namespace
}  // namespace tiresias::cli_test
