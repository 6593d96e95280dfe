#include "trace/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_files.h"

namespace tiresias {
namespace {

using trace_testing::DataPath;
using trace_testing::ScratchDir;

constexpr char kTiresiasHeader[] =
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
constexpr char kPhillyHeader[] =
    "timestamp,duration,num_gpus,gpu_time,cluster\n";

std::vector<JobId> Ids(const std::vector<JobSpec>& jobs) {
  std::vector<JobId> ids;
  for (const JobSpec& job : jobs) ids.push_back(job.id);
  return ids;
}

std::vector<double> SubmitTimes(const std::vector<JobSpec>& jobs) {
  std::vector<double> times;
  for (const JobSpec& job : jobs) times.push_back(job.submit_time.count());
  return times;
}

TEST(ParseTraceFormatTest, KnowsTheSixNames) {
  EXPECT_EQ(*ParseTraceFormat("auto"), TraceFormat::kAuto);
  EXPECT_EQ(*ParseTraceFormat("tiresias"), TraceFormat::kTiresias);
  EXPECT_EQ(*ParseTraceFormat("philly"), TraceFormat::kPhilly);
  EXPECT_EQ(*ParseTraceFormat("gavel"), TraceFormat::kGavel);
  EXPECT_EQ(*ParseTraceFormat("helios"), TraceFormat::kHelios);
  EXPECT_EQ(*ParseTraceFormat("pai"), TraceFormat::kPai);
  absl::StatusOr<TraceFormat> bad = ParseTraceFormat("Philly");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown trace format \"Philly\"; expected auto, tiresias, "
            "philly, gavel, helios or pai");
}

TEST(ReadTiresiasTest, ReadsEveryFieldAndSortsStably) {
  ScratchDir dir;
  std::string path =
      dir.Write("t.csv", absl::StrCat(kTiresiasHeader,
                                      "7,4,30,100,ResNet50,1200.5,10\n"
                                      "3,1,0,606,vgg19,164,30\n"
                                      "5,2,30,157,inception4,0,26\n"
                                      "9,8,12.25,1,VGG16,7,1\n"));
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 4u);
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(3, 9, 7, 5));
  EXPECT_THAT(SubmitTimes(*jobs), testing::ElementsAre(0, 12.25, 30, 30));
  const JobSpec& first = (*jobs)[0];
  EXPECT_EQ(first.num_gpus, 1);
  EXPECT_EQ(first.model, "vgg19");
  ASSERT_TRUE(first.duration.has_value());
  EXPECT_EQ(first.duration->count(), 164);
  EXPECT_EQ((*jobs)[1].model, "vgg16");
  EXPECT_EQ((*jobs)[1].num_gpus, 8);
  EXPECT_EQ((*jobs)[2].model, "resnet50");
  EXPECT_EQ((*jobs)[2].duration->count(), 1200.5);
  EXPECT_EQ((*jobs)[3].duration->count(), 0);  // ends at once: allowed
}

TEST(ReadTiresiasTest, FindsColumnsByNameAndModelIsOptional) {
  ScratchDir dir;
  std::string path = dir.Write("t.csv",
                               "duration, submit_time ,extra,num_gpu,job_id\n"
                               "50,2,whatever,16,1\n");
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].id, 1);
  EXPECT_EQ((*jobs)[0].num_gpus, 16);
  EXPECT_EQ((*jobs)[0].submit_time.count(), 2);
  EXPECT_EQ((*jobs)[0].duration->count(), 50);
  EXPECT_EQ((*jobs)[0].model, "");
}

TEST(ReadTiresiasTest, AcceptsCrlfBlankLinesAndNoFinalNewline) {
  ScratchDir dir;
  std::string path = dir.Write(
      "t.csv",
      "\r\njob_id,num_gpu,submit_time,iterations,model_name,duration,"
      "interval\r\n\r\n0,2,5,1,alexnet,10,1\r\n   \r\n1,1,6,1,vgg11,20,1");
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(0, 1));
  EXPECT_EQ((*jobs)[0].model, "alexnet");
  EXPECT_EQ((*jobs)[1].model, "vgg11");
  EXPECT_EQ((*jobs)[1].duration->count(), 20);
}

TEST(ReadPhillyTest, SubmitTimesAreSecondsSinceTheEarliest) {
  ScratchDir dir;
  // Across a leap day (2016-02-29) and a year end; file order is not time
  // order, and the two 2016-02-28 rows tie.
  std::string path = dir.Write(
      "p.csv", absl::StrCat(kPhillyHeader,
                            "2016-03-01 00:00:00,66.5,1,66.5,11cb48\n"
                            "2016-02-28 23:59:59,10.0,8,80.0,6214e9\n"
                            "2016-12-31 23:00:00,0.0,2,0.0,6c71a0\n"
                            "2016-02-28 23:59:59,1.0,4,4.0,6214e9\n"
                            "2017-01-01 01:00:00,3.0,128,384.0,7f04ca\n"));
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(1, 3, 0, 2, 4));
  // Mar 1 is 1 s + all of Feb 29 after Feb 28 23:59:59.
  const double dec31 = 1 + 86400.0 * (1 + 306) - 3600;
  EXPECT_THAT(SubmitTimes(*jobs),
              testing::ElementsAre(0, 0, 86401, dec31, dec31 + 7200));
  EXPECT_EQ((*jobs)[0].num_gpus, 8);
  EXPECT_EQ((*jobs)[1].num_gpus, 4);
  EXPECT_EQ((*jobs)[2].duration->count(), 66.5);
  EXPECT_EQ((*jobs)[3].duration->count(), 0);
  EXPECT_EQ((*jobs)[4].num_gpus, 128);
  for (const JobSpec& job : *jobs) EXPECT_EQ(job.model, "");
}

TEST(ReadPhillyTest, LeapDaysFollowTheGregorianRules) {
  ScratchDir dir;
  std::string path =
      dir.Write("p.csv", absl::StrCat(kPhillyHeader,
                                      "2016-02-29 12:00:00,1,1,1,c\n"
                                      "2016-02-28 00:00:00,1,1,1,c\n"
                                      "2000-02-29 00:00:00,1,1,1,c\n"));
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(2, 1, 0));
  // 2000-02-29 to 2016-02-28: 16 years, 4 of them leap (2000 is).
  const double feb28 = 86400.0 * (16 * 365 + 4 - 1);
  EXPECT_THAT(SubmitTimes(*jobs),
              testing::ElementsAre(0, feb28, feb28 + 86400 + 43200));
  for (const char* not_leap :
       {"1900-02-29 00:00:00", "2100-02-29 00:00:00", "2017-02-29 00:00:00"}) {
    std::string bad = dir.Write(
        "bad.csv", absl::StrCat(kPhillyHeader, not_leap, ",1,1,1,c\n"));
    jobs = ReadTrace(bad);
    ASSERT_FALSE(jobs.ok()) << not_leap;
    EXPECT_EQ(jobs.status().message(),
              absl::StrCat(bad,
                           ":2: column 'timestamp': expected a valid date and "
                           "time YYYY-MM-DD HH:MM:SS, got \"",
                           not_leap, "\""));
  }
}

TEST(ReadPhillyTest, ExplicitFormatsAgreeWithDetection) {
  ScratchDir dir;
  std::string philly =
      dir.Write("p.csv", absl::StrCat(kPhillyHeader,
                                      "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                                      "2017-10-09 06:13:03,5.0,2,10.0,b\n"));
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(philly, TraceFormat::kPhilly);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(1, 0));
  EXPECT_THAT(SubmitTimes(*jobs), testing::ElementsAre(0, 2932));

  std::string tiresias =
      dir.Write("t.csv", absl::StrCat(kTiresiasHeader, "4,1,9,1,vgg19,3,1\n"));
  jobs = ReadTrace(tiresias, TraceFormat::kTiresias);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(Ids(*jobs), testing::ElementsAre(4));

  jobs = ReadTrace(tiresias, TraceFormat::kPhilly);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(tiresias,
                         ":1: Philly trace header lacks column 'timestamp'"));
  jobs = ReadTrace(philly, TraceFormat::kTiresias);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(
      jobs.status().message(),
      absl::StrCat(philly, ":1: Tiresias trace header lacks column 'job_id'"));
}

struct BadLine {
  const char* header;
  const char* line;      // written as line 3, after one good line
  const char* expected;  // the message after "path:"
};

TEST(ReadTraceErrorsTest, BadLinesNameLineColumnAndText) {
  constexpr char kGoodTiresias[] = "0,1,0,10,vgg19,100,5\n";
  constexpr char kGoodPhilly[] = "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n";
  const BadLine kCases[] = {
      // Tiresias.
      {kTiresiasHeader, "1,-4,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got \"-4\""},
      {kTiresiasHeader, "1,0,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got \"0\""},
      {kTiresiasHeader, "1,four,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got \"four\""},
      {kTiresiasHeader, "1,1.5,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got \"1.5\""},
      {kTiresiasHeader, "1,99999999999,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got "
       "\"99999999999\""},
      {kTiresiasHeader, "1,,10,1,vgg19,100,5",
       "3: column 'num_gpu': expected a positive integer, got \"\""},
      {kTiresiasHeader, "1,1,-5,1,vgg19,100,5",
       "3: column 'submit_time': expected a non-negative number of seconds, "
       "got \"-5\""},
      {kTiresiasHeader, "1,1,soon,1,vgg19,100,5",
       "3: column 'submit_time': expected a non-negative number of seconds, "
       "got \"soon\""},
      {kTiresiasHeader, "1,1,10,1,vgg19,-1,5",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"-1\""},
      {kTiresiasHeader, "1,1,10,1,vgg19,long,5",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"long\""},
      {kTiresiasHeader, "1,1,10,1,vgg19,nan,5",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"nan\""},
      {kTiresiasHeader, "1,1,10,1,vgg19,inf,5",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"inf\""},
      {kTiresiasHeader, "1,1,10,1,vgg19,1e999,5",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"1e999\""},
      {kTiresiasHeader, "x1,1,10,1,vgg19,100,5",
       "3: column 'job_id': expected a non-negative integer, got \"x1\""},
      {kTiresiasHeader, "-1,1,10,1,vgg19,100,5",
       "3: column 'job_id': expected a non-negative integer, got \"-1\""},
      {kTiresiasHeader, "0,2,10,1,vgg16,100,5",
       "3: column 'job_id': duplicate job id 0, first on line 2"},
      {kTiresiasHeader, "1,1,10,1,vgg19,100", "3: expected 7 columns, got 6"},
      {kTiresiasHeader, "1,1,10,1,vgg19,100,5,6",
       "3: expected 7 columns, got 8"},
      // Philly.
      {kPhillyHeader, "2017/10/09 07:01:55,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017/10/09 07:01:55\""},
      {kPhillyHeader, "2017-13-01 00:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-13-01 00:00:00\""},
      {kPhillyHeader, "2017-00-01 00:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-00-01 00:00:00\""},
      {kPhillyHeader, "2017-02-29 00:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-02-29 00:00:00\""},
      {kPhillyHeader, "2017-04-31 00:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-04-31 00:00:00\""},
      {kPhillyHeader, "2017-10-00 00:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-10-00 00:00:00\""},
      {kPhillyHeader, "2017-10-09 24:00:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-10-09 24:00:00\""},
      {kPhillyHeader, "2017-10-09 07:60:00,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-10-09 07:60:00\""},
      {kPhillyHeader, "2017-10-09 7:01:55,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-10-09 7:01:55\""},
      {kPhillyHeader, "2017-10-09,66.0,1,66.0,c",
       "3: column 'timestamp': expected a valid date and time YYYY-MM-DD "
       "HH:MM:SS, got \"2017-10-09\""},
      {kPhillyHeader, "2017-10-09 07:01:55,-66.0,1,66.0,c",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"-66.0\""},
      {kPhillyHeader, "2017-10-09 07:01:55,NaN,1,66.0,c",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"NaN\""},
      {kPhillyHeader, "2017-10-09 07:01:55,-inf,1,66.0,c",
       "3: column 'duration': expected a non-negative number of seconds, "
       "got \"-inf\""},
      {kPhillyHeader, "2017-10-09 07:01:55,66.0,0,66.0,c",
       "3: column 'num_gpus': expected a positive integer, got \"0\""},
      {kPhillyHeader, "2017-10-09 07:01:55,66.0,-4,66.0,c",
       "3: column 'num_gpus': expected a positive integer, got \"-4\""},
      {kPhillyHeader, "2017-10-09 07:01:55,66.0,1,lots,c",
       "3: column 'gpu_time': expected a non-negative number of GPU-seconds, "
       "got \"lots\""},
      {kPhillyHeader, "2017-10-09 07:01:55,66.0,1,66.0, ",
       "3: column 'cluster': expected a non-empty name, got \"\""},
      {kPhillyHeader, "2017-10-09 07:01:55,66.0,1,66.0",
       "3: expected 5 columns, got 4"},
  };
  ScratchDir dir;
  int i = 0;
  for (const BadLine& c : kCases) {
    SCOPED_TRACE(c.line);
    const bool philly = c.header == std::string_view(kPhillyHeader);
    std::string path =
        dir.Write(absl::StrCat("bad", i++, ".csv"),
                  absl::StrCat(c.header, philly ? kGoodPhilly : kGoodTiresias,
                               c.line, "\n"));
    absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(path);
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(), absl::StrCat(path, ":", c.expected));
  }
}

TEST(ReadTraceErrorsTest, WholeFileProblems) {
  ScratchDir dir;
  std::string missing = dir.Missing("nope.csv");
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(missing);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(missing, ": cannot open: No such file or directory"));

  for (const char* text : {"", "\n", "\r\n  \n\n"}) {
    std::string empty = dir.Write("empty.csv", text);
    jobs = ReadTrace(empty);
    ASSERT_FALSE(jobs.ok());
    EXPECT_EQ(jobs.status().message(),
              absl::StrCat(empty, ": empty file, expected a header line"));
  }

  std::string header_only = dir.Write("h.csv", kPhillyHeader);
  jobs = ReadTrace(header_only);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(header_only, ": no jobs after the header"));

  std::string unknown = dir.Write("u.csv", "\nid,gpus,time\n1,2,3\n");
  jobs = ReadTrace(unknown);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(
                unknown,
                ":2: unknown trace header \"id,gpus,time\"; understood: "
                "Tiresias \"job_id,num_gpu,submit_time,iterations,model_name,"
                "duration,interval\", Philly \"timestamp,duration,num_gpus,"
                "gpu_time,cluster\", Helios \"job_id,user,vc,gpu_num,cpu_num,"
                "node_num,state,submit_time,start_time,end_time,duration,"
                "queue\", a PAI 2020 pai_job_table.csv or a tab-separated "
                "Gavel trace"));

  std::string lacking =
      dir.Write("l.csv", "job_id,num_gpu,submit_time\n0,1,0\n");
  jobs = ReadTrace(lacking);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(lacking,
                         ":1: Tiresias trace header lacks column 'duration'"));

  jobs = ReadTrace(dir.Missing(""));  // the directory itself
  ASSERT_FALSE(jobs.ok());
  EXPECT_THAT(jobs.status().message(), testing::HasSubstr(": cannot open: "));
}

TEST(ScaleArrivalsTest, ScalesGapsAndKeepsTheFirstArrival) {
  std::vector<JobSpec> jobs(4);
  const double times[] = {100, 110, 110, 150};
  for (int i = 0; i < 4; ++i) jobs[i].submit_time = Seconds(times[i]);
  ASSERT_TRUE(ScaleArrivals(&jobs, 0.5).ok());
  EXPECT_THAT(SubmitTimes(jobs), testing::ElementsAre(100, 105, 105, 125));
  ASSERT_TRUE(ScaleArrivals(&jobs, 4).ok());
  EXPECT_THAT(SubmitTimes(jobs), testing::ElementsAre(100, 120, 120, 200));

  std::vector<JobSpec> none;
  EXPECT_TRUE(ScaleArrivals(&none, 2).ok());
}

TEST(ScaleArrivalsTest, RejectsNonPositiveFactorsAndChangesNothing) {
  std::vector<JobSpec> jobs(2);
  jobs[1].submit_time = Seconds(10);
  for (double factor :
       {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(ValidateArrivalScale(factor).code(),
              absl::StatusCode::kInvalidArgument);
    absl::Status status = ScaleArrivals(&jobs, factor);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(SubmitTimes(jobs), testing::ElementsAre(0, 10));
  }
  EXPECT_EQ(ValidateArrivalScale(-2).message(),
            "arrival scale: expected a positive number, got -2");
  EXPECT_TRUE(ValidateArrivalScale(0.25).ok());
}

TEST(ShippedTracesTest, PhillyHas82247JobsOver109Days) {
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(DataPath("philly.csv"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 82247u);
  EXPECT_EQ(jobs->front().submit_time.count(), 0);
  // The earliest job is row 31566 (2017-09-04 10:30:41, 8 GPUs), the latest
  // 2017-12-22 08:02:11.
  EXPECT_EQ(jobs->front().id, 31566);
  EXPECT_EQ(jobs->front().num_gpus, 8);
  EXPECT_EQ(jobs->front().duration->count(), 2240194);
  EXPECT_EQ(jobs->back().submit_time.count(), 9408690);
  EXPECT_TRUE(std::is_sorted(jobs->begin(), jobs->end(),
                             [](const JobSpec& a, const JobSpec& b) {
                               return a.submit_time < b.submit_time;
                             }));
  int max_gpus = 0;
  int64_t total_gpus = 0;
  double total_duration = 0;
  std::vector<JobId> ids = Ids(*jobs);
  for (const JobSpec& job : *jobs) {
    max_gpus = std::max(max_gpus, job.num_gpus);
    total_gpus += job.num_gpus;
    total_duration += job.duration->count();
  }
  EXPECT_EQ(max_gpus, 128);
  EXPECT_EQ(total_gpus, 107235);
  EXPECT_EQ(total_duration, 1080390950.0);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], JobId(i));
}

TEST(ShippedTracesTest, SixtyJobTrace) {
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(DataPath("60_job.csv"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 60u);
  EXPECT_EQ((*jobs)[1].id, 1);
  EXPECT_EQ((*jobs)[1].num_gpus, 8);
  EXPECT_EQ((*jobs)[1].submit_time.count(), 30);
  EXPECT_EQ((*jobs)[1].duration->count(), 147);
  EXPECT_EQ((*jobs)[1].model, "vgg11");
  EXPECT_EQ(jobs->back().id, 59);
  EXPECT_EQ(jobs->back().submit_time.count(), 1779);
  EXPECT_EQ(jobs->back().model, "inception3");
  int total_gpus = 0;
  for (const JobSpec& job : *jobs) total_gpus += job.num_gpus;
  EXPECT_EQ(total_gpus, 170);
}

}  // namespace
}  // namespace tiresias
