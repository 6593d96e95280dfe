// Gavel traces: the three layouts, durations from Gavel's throughput table,
// detection, and line-numbered errors.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_files.h"
#include "trace/trace_reader.h"

namespace tiresias {
namespace {

using testing::ElementsAre;
using trace_testing::DataPath;
using trace_testing::ScratchDir;

// A 10-field line (Gavel today): job_type, command, working_directory,
// num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight,
// SLO, arrival_time.
std::string Line10(const std::string& type, const std::string& steps,
                   const std::string& scale, const std::string& arrival) {
  return absl::StrCat(type, "\tpython3 main.py --data_dir=%s/x\tdir\t",
                      "--num_steps\t1\t", steps, "\t", scale,
                      "\t1\t-1.000000\t", arrival, "\n");
}

TEST(ReadGavelTest, DurationIsStepsOverTheV100Throughput) {
  ScratchDir dir;
  // Steps made as Gavel makes them: duration x steps/s on a V100 (V100
  // throughputs 4.39477 for ResNet-50 bs 64 on 1 GPU, 10.06924 for
  // Transformer bs 128 on 2; A3C was only measured on 1 GPU, 7.17577).
  std::string path = dir.Write(
      "g.trace",
      absl::StrCat(Line10("ResNet-50 (batch size 64)", "15821", "1", "120"),
                   Line10("Transformer (batch size 128)", "10069", "2",
                          "60.000000"),
                   Line10("A3C", "28703", "4", "60.5")));
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(path, TraceFormat::kAuto, &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  const JobSpec& transformer = (*jobs)[0];
  const JobSpec& a3c = (*jobs)[1];
  const JobSpec& resnet = (*jobs)[2];
  EXPECT_EQ(transformer.id, 1);
  EXPECT_EQ(a3c.id, 2);
  EXPECT_EQ(resnet.id, 0);
  EXPECT_EQ(transformer.submit_time.count(), 0);  // from the earliest
  EXPECT_EQ(a3c.submit_time.count(), 0.5);
  EXPECT_EQ(resnet.submit_time.count(), 60);
  EXPECT_EQ(resnet.num_gpus, 1);
  EXPECT_EQ(transformer.num_gpus, 2);
  EXPECT_EQ(a3c.num_gpus, 4);
  // An hour and 1,000 s, to within one step of rounding.
  EXPECT_NEAR(resnet.duration->count(), 3600, 1 / 4.39);
  EXPECT_NEAR(transformer.duration->count(), 1000, 1 / 10.06);
  // 4 GPUs: 4 x the 1-GPU throughput, extrapolated and noted.
  EXPECT_NEAR(a3c.duration->count(), 1000, 1 / 28.7);
  EXPECT_EQ(resnet.model, "resnet50");
  EXPECT_EQ(transformer.model, "transformer");
  EXPECT_EQ(a3c.model, "a3c");
  EXPECT_THAT(notes,
              ElementsAre("Gavel: 1 jobs at a scale factor Gavel did not "
                          "measure: throughput extrapolated linearly from "
                          "the largest smaller one"));

  absl::StatusOr<std::vector<JobSpec>> explicit_format =
      ReadTrace(path, TraceFormat::kGavel);
  ASSERT_TRUE(explicit_format.ok()) << explicit_format.status();
  EXPECT_EQ(explicit_format->size(), 3u);
}

TEST(ReadGavelTest, OlderLayoutsAndSkippedScaleZero) {
  ScratchDir dir;
  // 2019 (traces/msr/): job_type, command, num_steps_arg, needs_data_dir,
  // total_steps, arrival_time, scale_factor. LM bs 20: 64.742 steps/s.
  std::string path = dir.Write(
      "msr.trace",
      "LM (batch size 20)\tcd %s && python3 main.py\t--steps\t1\t64742\t"
      "30.000000\t1\n"
      "LM (batch size 20)\tcd %s && python3 main.py\t--steps\t1\t5\t"
      "10.000000\t0\n");
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(path, TraceFormat::kAuto, &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, 0);
  EXPECT_EQ((*jobs)[0].submit_time.count(), 0);
  EXPECT_NEAR((*jobs)[0].duration->count(), 1000, 1 / 64.7);
  EXPECT_EQ((*jobs)[0].model, "lm");
  EXPECT_THAT(notes, ElementsAre("Gavel: skipped 1 jobs with scale_factor 0"));

  // 2020: the 10-field layout without working_directory.
  std::string nine = dir.Write(
      "nine.trace",
      "ResNet-50 (batch size 64)\tpython3 main.py\t--num_steps\t1\t15844\t2\t"
      "1\t-1\t5\n");
  jobs = ReadTrace(nine);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].num_gpus, 2);
  EXPECT_NEAR((*jobs)[0].duration->count(), 2000, 1 / 7.9);  // 7.92205/s
}

TEST(ReadGavelTest, BadLinesNameLineAndField) {
  ScratchDir dir;
  const std::string good = Line10("A3C", "100", "1", "0");
  struct Case {
    std::string second_line;
    std::string expected;  // after "path:"
  };
  const Case cases[] = {
      {Line10("ResNet-51 (batch size 64)", "100", "1", "0"),
       "2: column 'job_type': expected a job type of Gavel's throughput "
       "table, such as \"ResNet-50 (batch size 64)\", got \"ResNet-51 "
       "(batch size 64)\""},
      {Line10("A3C", "-5", "1", "0"),
       "2: column 'total_steps': expected a positive integer number of "
       "steps, got \"-5\""},
      {Line10("A3C", "100", "0", "0"),
       "2: column 'scale_factor': expected a positive integer number of "
       "GPUs, got \"0\""},
      {Line10("A3C", "100", "1", "soon"),
       "2: column 'arrival_time': expected a non-negative number of "
       "seconds, got \"soon\""},
      {"A3C\tcmd\t--n\t1\t100\t1\t1\t-1\t0\n", "2: expected 10 columns, got 9"},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::string path =
        dir.Write(absl::StrCat("bad", i++, ".trace"), good + c.second_line);
    absl::StatusOr<std::vector<JobSpec>> jobs =
        ReadTrace(path, TraceFormat::kGavel);
    ASSERT_FALSE(jobs.ok()) << c.expected;
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), absl::StrCat(path, ":", c.expected));
  }

  std::string wrong_shape = dir.Write("w.trace", "a\tb\tc\n");
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(wrong_shape, TraceFormat::kGavel);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(wrong_shape,
                         ":1: expected a Gavel trace line of 10, 9 or 7 "
                         "tab-separated fields, got 3"));
}

TEST(ShippedTracesTest, GavelArtifactTrace) {
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(
      DataPath("gavel_artifact_evaluation.trace"), TraceFormat::kAuto, &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 15u);
  int gpus = 0;
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*jobs)[i].id, static_cast<JobId>(i));  // all arrive at 0
    EXPECT_EQ((*jobs)[i].submit_time.count(), 0);
    gpus += (*jobs)[i].num_gpus;
  }
  EXPECT_EQ(gpus, 18);  // three jobs of 2 GPUs, twelve of 1
  // Line 1: ResNet-50 (batch size 64), 2,931 steps at 4.39477 steps/s.
  EXPECT_NEAR((*jobs)[0].duration->count(), 666.9, 0.1);
  EXPECT_EQ((*jobs)[0].model, "resnet50");
  EXPECT_TRUE(notes.empty());  // every pair measured, no line skipped
}

}  // namespace
}  // namespace tiresias
