// The --output / --error patterns: hand-expanded cases, and what the master
// refuses at submission (through ValidateJobRequest, as the CLI does before
// sending).
#include "master/output_pattern.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/job_validation.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

// As Slurm's sbatch: %A the array's id, %a the index, %t the task (rank);
// %R (ours) the attempt.
TEST(OutputPatternTest, PlaceholdersExpandToTheTasksValues) {
  const OutputPatternValues v{.job_id = 42, .attempt = 3, .rank = 1};
  EXPECT_EQ(ExpandOutputPattern("out-%j-%r.txt", v), "out-42-1.txt");
  EXPECT_EQ(ExpandOutputPattern("/logs/%j/%R/rank%t.err", v),
            "/logs/42/3/rank1.err");
  // Outside an array: index 0, and %A is the job's own id.
  EXPECT_EQ(ExpandOutputPattern("arr-%A_%a", v), "arr-42_0");
  EXPECT_EQ(ExpandOutputPattern(
                "sweep-%A_%a-%j.out",
                {.job_id = 14, .attempt = 1, .array_index = 3, .array_id = 11}),
            "sweep-11_3-14.out");
  EXPECT_EQ(ExpandOutputPattern("100%%-%j", v), "100%-42");
  EXPECT_EQ(ExpandOutputPattern("%%j", v), "%j");  // escaped, not job id
  EXPECT_EQ(ExpandOutputPattern("%j%j", v), "4242");
  EXPECT_EQ(ExpandOutputPattern("plain.txt", v), "plain.txt");
  EXPECT_EQ(ExpandOutputPattern("", v), "");
  // What only a hand-edited state file holds is kept as written.
  EXPECT_EQ(ExpandOutputPattern("a%xb%", v), "a%xb%");
}

TEST(OutputPatternTest, UnknownPlaceholdersAreRefusedWithTheirPlace) {
  EXPECT_TRUE(
      ValidateOutputPattern("spec.output", "o-%j-%A-%a-%r-%t-%R-%%").ok());
  EXPECT_TRUE(ValidateOutputPattern("spec.output", "").ok());
  absl::Status status = ValidateOutputPattern("spec.output", "out-%x.txt");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "spec.output: unknown placeholder \"%x\" at byte 4; expected %j, "
            "%A, %a, %t, %r, %R or %% (%% for a '%')");
  EXPECT_THAT(std::string(ValidateOutputPattern("spec.error", "%5j").message()),
              HasSubstr("spec.error: unknown placeholder \"%5\" at byte 0"));
  EXPECT_THAT(std::string(ValidateOutputPattern("spec.error", "50%").message()),
              HasSubstr("spec.error: a lone '%' at the end (byte 2)"));
  EXPECT_THAT(
      std::string(ValidateOutputPattern("spec.output", "a%\n").message()),
      HasSubstr("unknown placeholder \"%\\n\""));
}

TEST(OutputPatternTest, SubmissionChecksWorkdirAndPatterns) {
  JobRequest spec;
  spec.command = {"true"};
  spec.workdir = "/home/alice/run";
  spec.output = "out-%j.txt";
  spec.error = "err-%j-%r.txt";
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.workdir = "relative/dir";
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.workdir: expected an absolute path, got \"relative/dir\"");
  spec.workdir = std::string("/a\0b", 4);
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.workdir: expected no NUL byte, got one at byte 2");
  spec.workdir = "/" + std::string(4096, 'd');
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.workdir: expected at most 4096 bytes, got 4097");
  spec.workdir = "";  // the agent's folder (an older client)
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.output = "out-%q";
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.output: unknown placeholder \"%q\""));
  spec.output = "";
  spec.error = std::string(4097, 'e');
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.error: expected at most 4096 bytes, got 4097");
  spec.error = "err\xff";
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.error: expected valid UTF-8"));
}

}  // namespace
}  // namespace tiresias
