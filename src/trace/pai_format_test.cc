// Alibaba PAI 2020: a job table and a task table, headerless as released;
// GPUs from plan_gpu x inst_num, durations from the tasks' span, which jobs
// are kept, how the two files are found, and line-numbered errors.
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

constexpr char kJobHeader[] =
    "job_name,inst_id,user,status,start_time,end_time\n";
constexpr char kTaskHeader[] =
    "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,"
    "plan_mem,plan_gpu,gpu_type\n";

// Job table rows: job_name,inst_id,user,status,start_time,end_time.
constexpr char kJobs[] =
    "jA,i1,u1,Terminated,1000.0,2000.0\n"
    "jB,i2,u2,Failed,1100.0,1200.0\n"
    "jC,i3,u3,Terminated,1300.0,5000.0\n"
    "jD,i4,u4,Terminated,1600.0,1700.0\n"
    "jE,i5,u5,Running,1700.0,\n"
    "jF,i6,u6,Terminated,1900.0,2100.0\n";
// Task table rows: job_name,task_name,inst_num,status,start_time,end_time,
// plan_cpu,plan_mem,plan_gpu,gpu_type.
constexpr char kTasks[] =
    // jA: 2 x 100% + 1 x 25% = 2.25 GPUs -> 3; span 1010..1950 = 940 s.
    "jA,worker,2.0,Terminated,1010.0,1910.0,600.0,29.3,100.0,V100\n"
    "jA,evaluator,1.0,Terminated,1500.0,1950.0,400.0,10.0,25.0,V100\n"
    "jB,worker,1.0,Failed,1110.0,1190.0,600.0,29.3,100.0,T4\n"
    // jC: a ps without GPUs and 2 x 50% -> 1 GPU; span 1305..1500 = 195 s.
    "jC,ps,1.0,Terminated,1305.0,1500.0,600.0,29.3,,MISC\n"
    "jC,worker,2.0,Terminated,1310.0,1400.0,400.0,10.0,50.0,MISC\n"
    "jD,tensorflow,1.0,Terminated,1610.0,1690.0,600.0,29.3,0.0,\n"
    "jZ,tensorflow,1.0,Terminated,1.0,2.0,600.0,29.3,100.0,P100\n";

void ExpectTheTwoKeptJobs(const absl::StatusOr<std::vector<JobSpec>>& jobs) {
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const JobSpec& a = (*jobs)[0];
  const JobSpec& c = (*jobs)[1];
  EXPECT_EQ(a.id, 0);  // the row index in the job table
  EXPECT_EQ(c.id, 2);
  EXPECT_EQ(a.submit_time.count(), 0);
  EXPECT_EQ(c.submit_time.count(), 300);
  EXPECT_EQ(a.num_gpus, 3);
  EXPECT_EQ(c.num_gpus, 1);
  EXPECT_EQ(a.duration->count(), 940);
  EXPECT_EQ(c.duration->count(), 195);
}

TEST(ReadPaiTest, FolderOfBothTablesIsDetectedAndRead) {
  ScratchDir dir;
  dir.Write("pai/pai_job_table.csv", kJobs);
  dir.Write("pai/pai_task_table.csv", kTasks);
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(dir.File("pai"), TraceFormat::kAuto, &notes);
  ExpectTheTwoKeptJobs(jobs);
  EXPECT_THAT(
      notes,
      ElementsAre("PAI: skipped 1 Terminated jobs without GPUs (plan_gpu 0)",
                  "PAI: skipped 1 Terminated jobs without tasks in the task "
                  "table",
                  "PAI: skipped 1 jobs with status Failed",
                  "PAI: skipped 1 jobs with status Running",
                  "PAI: ignored 1 tasks of jobs not in the job table"));

  // The job table itself: detected from its first row's shape.
  ExpectTheTwoKeptJobs(ReadTrace(dir.File("pai/pai_job_table.csv")));
}

TEST(ReadPaiTest, JobTableFindsItsTaskTableAndSkipsHeaders) {
  ScratchDir dir;
  std::string job_path =
      dir.Write("mini_job.csv", absl::StrCat(kJobHeader, kJobs));
  dir.Write("mini_task.csv", absl::StrCat(kTaskHeader, kTasks));
  ExpectTheTwoKeptJobs(ReadTrace(job_path));
  ExpectTheTwoKeptJobs(ReadTrace(job_path, TraceFormat::kPai));

  // Given the task table by mistake: say so.
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(dir.File("mini_task.csv"));
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(dir.File("mini_task.csv"),
                         ":1: this looks like a PAI task table "
                         "(pai_task_table.csv); give the job table "
                         "(pai_job_table.csv) or the folder holding both"));

  std::string lonely = dir.Write("lonely_job.csv", kJobs);
  jobs = ReadTrace(lonely);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs.status().message(),
            absl::StrCat(dir.File("lonely_task.csv"),
                         ": cannot open: No such file or directory"));

  std::string nameless = dir.Write("trace.csv", kJobs);
  jobs = ReadTrace(nameless, TraceFormat::kPai);
  ASSERT_FALSE(jobs.ok());
  EXPECT_THAT(std::string(jobs.status().message()),
              testing::StartsWith(absl::StrCat(
                  nameless, ": cannot find the PAI task table")));
}

TEST(ReadPaiTest, BadLinesNameFileLineAndColumn) {
  ScratchDir dir;
  struct Case {
    std::string jobs;
    std::string tasks;
    std::string file;      // which table the error is in
    std::string expected;  // after "path:"
  };
  const std::string good_job = "j1,i,u,Terminated,10.0,20.0\n";
  const std::string good_task = "j1,w,1.0,Terminated,11.0,19.0,1,1,100.0,T4\n";
  const Case cases[] = {
      {good_job + "j2,i,u,Terminated,soon,20.0\n", good_task, "job",
       "2: column 'start_time': expected a non-negative number of seconds, "
       "got \"soon\""},
      {good_job + "j1,i,u,Failed,10.0,20.0\n", good_task, "job",
       "2: column 'job_name': duplicate job \"j1\", first on line 1"},
      {good_job, good_task + "j1,w,1.0,Terminated,11.0,9.0,1,1,100.0,T4\n",
       "task",
       "2: column 'end_time': expected a number of seconds no less than "
       "start_time, got \"9.0\""},
      {good_job, good_task + "j1,w,1.0,Terminated,11.0,19.0,1,1,half,T4\n",
       "task",
       "2: column 'plan_gpu': expected a non-negative percentage of a GPU, "
       "got \"half\""},
      {good_job, good_task + "j1,w,1.0,Terminated,11.0,19.0,1,1,100.0\n",
       "task", "2: expected 10 columns, got 9"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string job_path =
        dir.Write(absl::StrCat("bad", i, "_job.csv"), c.jobs);
    const std::string task_path =
        dir.Write(absl::StrCat("bad", i, "_task.csv"), c.tasks);
    ++i;
    absl::StatusOr<std::vector<JobSpec>> jobs =
        ReadTrace(job_path, TraceFormat::kPai);
    ASSERT_FALSE(jobs.ok()) << c.expected;
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(jobs.status().message(),
              absl::StrCat(c.file == "job" ? job_path : task_path, ":",
                           c.expected));
  }
}

TEST(ShippedTracesTest, PaiExample) {
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(DataPath("examples/pai"), TraceFormat::kAuto, &notes);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const auto [ids, submits, durations, gpus] = Columns(*jobs);
  EXPECT_THAT(ids, ElementsAre(0, 1, 3));  // job_a, job_b, job_d
  EXPECT_THAT(submits, ElementsAre(0, 60, 400));
  EXPECT_THAT(gpus, ElementsAre(1, 1, 8));  // 100%; 2 x 50%; 4 x 200%
  EXPECT_THAT(durations, ElementsAre(3600, 800, 7200));
  EXPECT_THAT(notes,
              ElementsAre("PAI: skipped 1 Terminated jobs without GPUs "
                          "(plan_gpu 0)",
                          "PAI: skipped 1 jobs with status Failed",
                          "PAI: skipped 1 jobs with status Running"));
}

}  // namespace
}  // namespace tiresias
