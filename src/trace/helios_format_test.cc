// Helios cluster_log.csv: which jobs are kept, submit times, detection ahead
// of the Tiresias format (both have job_id), and line-numbered errors.
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
using trace_testing::Columns;
using trace_testing::DataPath;
using trace_testing::ScratchDir;

constexpr char kHeader[] =
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
    "end_time,duration,queue\n";

TEST(ReadHeliosTest, KeepsCompletedGpuJobsWithSubmitTimesFromTheFirst) {
  ScratchDir dir;
  std::string path = dir.Write(
      "cluster_log.csv",
      absl::StrCat(
          kHeader,
          "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,"
          "2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0\n"
          "1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,"
          "2020-06-09 18:41:27,2020-06-09 18:45:36,249,0\n"
          "1425513,uzqls,vcpDC,1,1,1,CANCELLED,2020-06-09 18:41:28,,,,\n"
          "1425514,u1,vc1,0,8,1,COMPLETED,2020-06-09 18:42:00,"
          "2020-06-09 18:42:00,2020-06-09 18:43:40,100,0\n"
          "1425515,u2,vc2,16,64,2,COMPLETED,2020-06-09 18:40:01,"
          "2020-06-09 18:50:01,2020-06-09 19:50:01,3600,600\n"
          "1425516,u3,vc2,2,4,1,COMPLETED,2020-06-10 18:40:01,"
          "2020-06-10 18:40:01,2020-06-10 18:40:31,30.5,0\n"));
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(path, TraceFormat::kAuto, &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  const auto [ids, submits, durations, gpus] = Columns(*jobs);
  for (const JobSpec& job : *jobs) {
    EXPECT_EQ(job.model, "");
  }
  EXPECT_THAT(ids, ElementsAre(1425515, 1425511, 1425516));
  EXPECT_THAT(submits, ElementsAre(0, 60, 86400));
  EXPECT_THAT(durations, ElementsAre(3600, 36848, 30.5));
  EXPECT_THAT(gpus, ElementsAre(16, 1, 2));
  EXPECT_THAT(notes,
              ElementsAre("Helios: skipped 1 completed jobs without GPUs "
                          "(gpu_num 0)",
                          "Helios: skipped 1 jobs in state CANCELLED",
                          "Helios: skipped 1 jobs in state FAILED"));

  absl::StatusOr<std::vector<JobSpec>> explicit_format =
      ReadTrace(path, TraceFormat::kHelios);
  ASSERT_TRUE(explicit_format.ok()) << explicit_format.status();
  EXPECT_EQ(explicit_format->size(), 3u);
}

TEST(ReadHeliosTest, BadLinesNameLineAndColumn) {
  ScratchDir dir;
  const std::string good =
      "7,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,,,10,0\n";
  struct Case {
    std::string line;
    std::string expected;  // after "path:"
  };
  const Case cases[] = {
      {"8,u,vc,-1,1,1,COMPLETED,2020-06-09 18:41:01,,,10,0",
       "3: column 'gpu_num': expected a non-negative integer, got \"-1\""},
      {"8,u,vc,1,1,1,COMPLETED,2020-13-09 18:41:01,,,10,0",
       "3: column 'submit_time': expected a valid date and time "
       "YYYY-MM-DD HH:MM:SS, got \"2020-13-09 18:41:01\""},
      {"8,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,,,ten,0",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"ten\""},
      {"7,u,vc,1,1,1,FAILED,2020-06-09 18:41:01,,,10,0",
       "3: column 'job_id': duplicate job id 7, first on line 2"},
      {"8,u,vc,1,1,1,,2020-06-09 18:41:01,,,10,0",
       "3: column 'state': expected a non-empty name, got \"\""},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::string path = dir.Write(absl::StrCat("bad", i++, ".csv"),
                                 absl::StrCat(kHeader, good, c.line, "\n"));
    absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
    ASSERT_FALSE(jobs.ok()) << c.expected;
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), absl::StrCat(path, ":", c.expected));
  }

  std::string none_kept = dir.Write(
      "f.csv", absl::StrCat(kHeader,
                            "1,u,vc,1,1,1,FAILED,2020-06-09 18:41:01,,,1,0\n"));
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(none_kept);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(none_kept,
                         ": no jobs kept: no COMPLETED job with GPUs"));
}

TEST(ShippedTracesTest, HeliosExample) {
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(DataPath("examples/helios_cluster_log.csv"), TraceFormat::kAuto,
                &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const auto [ids, submits, durations, gpus] = Columns(*jobs);
  EXPECT_THAT(ids, ElementsAre(100001, 100002, 100005, 100006, 100008));
  EXPECT_THAT(submits, ElementsAre(0, 300, 1800, 3600, 5400));
  EXPECT_THAT(gpus, ElementsAre(1, 8, 2, 16, 4));
  EXPECT_THAT(durations, ElementsAre(3600, 21600, 1200, 86400, 7200));
  EXPECT_EQ(notes.size(), 3u);
}

}  // namespace
}  // namespace tiresias
