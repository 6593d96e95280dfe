#include "cli/job_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/warn_signal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(JobFile, ParsesEveryFieldAndKeepsLineNumbersAcrossBlankLines) {
  const std::string text =
      "{\"gpus\": 2, \"command\": [\"/usr/bin/python3\", \"train.py\"], "
      "\"env\": {\"SEED\": \"1\"}, \"checkpoint_dir\": \"/ckpt/a\"}\n"
      "\n"
      "   \n"
      "{\"gpus\": 1.0, \"command\": [\"sleep\", \"1\"], \"name\": \"nap\"}\r\n";
  auto entries = ParseJobFile(text, "jobs.jsonl", "alice");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  const JobRequest& first = (*entries)[0].spec;
  EXPECT_EQ((*entries)[0].line, 1);
  EXPECT_EQ(first.num_gpus, 2);
  EXPECT_EQ(first.command,
            (std::vector<std::string>{"/usr/bin/python3", "train.py"}));
  EXPECT_EQ(first.name, "python3");  // the command's base name, as `submit`
  EXPECT_EQ(first.env.at("SEED"), "1");
  EXPECT_EQ(first.checkpoint_dir, "/ckpt/a");
  EXPECT_EQ(first.user, "alice");
  EXPECT_EQ((*entries)[1].line, 4);
  EXPECT_EQ((*entries)[1].spec.name, "nap");
  EXPECT_EQ((*entries)[1].spec.num_gpus, 1);
}

// Every job starts in the caller's directory unless its line says where
// ("chdir", or "workdir" as JobSpec names it; relative to the caller's);
// output and error patterns are checked as the master checks them.
TEST(JobFile, WorkdirDefaultsToTheCallersAndOutputPatternsAreChecked) {
  const std::string text =
      "{\"gpus\": 1, \"command\": [\"true\"]}\n"
      "{\"gpus\": 1, \"command\": [\"true\"], \"chdir\": \"runs/a/\", "
      "\"output\": \"out-%j-%r.txt\", \"error\": \"err-%j.txt\"}\n"
      "{\"gpus\": 1, \"command\": [\"true\"], \"workdir\": \"/data/../x\"}\n";
  auto entries = ParseJobFile(text, "jobs.jsonl", "alice", "/home/alice");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].spec.workdir, "/home/alice");
  EXPECT_EQ((*entries)[1].spec.workdir, "/home/alice/runs/a");
  EXPECT_EQ((*entries)[1].spec.output, "out-%j-%r.txt");
  EXPECT_EQ((*entries)[1].spec.error, "err-%j.txt");
  EXPECT_EQ((*entries)[2].spec.workdir, "/x");
  // Without a caller's directory (a bare parse), only absolute ones.
  EXPECT_EQ(Message(ParseJobFile("{\"gpus\": 1, \"command\": [\"true\"], "
                                 "\"chdir\": \"rel\"}",
                                 "j", "")
                        .status()),
            "j:1: chdir: expected an absolute path, got \"rel\"");
  EXPECT_EQ(Message(ParseJobFile("{\"gpus\": 1, \"command\": [\"true\"], "
                                 "\"output\": \"o-%x\"}",
                                 "j", "", "/h")
                        .status()),
            "j:1: output: unknown placeholder \"%x\" at byte 2; expected %j, "
            "%A, %a, %t, %r, %R or %% (%% for a '%')");
  EXPECT_EQ(Message(ParseJobFile("{\"gpus\": 1, \"command\": [\"true\"], "
                                 "\"chdir\": \"/a\", \"workdir\": \"/b\"}",
                                 "j", "", "/h")
                        .status()),
            "j:1: workdir: given with chdir, its other name; give one");
  EXPECT_EQ(AbsoluteWorkdir("", "/home/a"), "/home/a");
  EXPECT_EQ(AbsoluteWorkdir("../b/./c/", "/home/a"), "/home/b/c");
  EXPECT_EQ(AbsoluteWorkdir("/", "/home/a"), "/");
}

TEST(JobFile, ParsesJobControlFields) {
  auto entries = ParseJobFile(
      "{\"gpus\": 1, \"command\": [\"true\"], \"time\": \"1-0:30\", "
      "\"no_preempt\": true, \"hold\": true, \"signal\": \"USR2@30\"}\n"
      "{\"gpus\": 1, \"command\": [\"true\"]}\n",
      "jobs.jsonl", "");
  ASSERT_TRUE(entries.ok()) << entries.status();
  const JobRequest& first = (*entries)[0].spec;
  EXPECT_EQ(first.time_limit, Seconds{86400 + 30 * 60});
  EXPECT_TRUE(first.no_preempt);
  EXPECT_TRUE(first.hold);
  EXPECT_EQ(FormatWarnSignal(first.warn), "USR2@30");
  const JobRequest& second = (*entries)[1].spec;
  EXPECT_EQ(second.time_limit, Seconds{0});
  EXPECT_FALSE(second.no_preempt);
  EXPECT_FALSE(second.hold);
  for (const auto& [line, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"gpus\": 1, \"command\": [\"true\"], \"time\": \"1:60\"}",
            "jobs.jsonl:1: time \"1:60\": seconds must be below 60"},
           {"{\"gpus\": 1, \"command\": [\"true\"], \"time\": 30}",
            "jobs.jsonl:1: time: expected a string"},
           {"{\"gpus\": 1, \"command\": [\"true\"], \"hold\": 1}",
            "jobs.jsonl:1: hold: expected true or false, got 1"},
           {"{\"gpus\": 1, \"command\": [\"true\"], \"signal\": "
            "\"KILL@5\", \"time\": \"10\"}",
            "jobs.jsonl:1: signal: \"KILL@5\": expected SIG[@SECONDS]"},
           {"{\"gpus\": 1, \"command\": [\"true\"], \"signal\": "
            "\"USR1\"}",
            "jobs.jsonl:1: signal: a signal before the time limit needs a "
            "time limit"}}) {
    auto bad = ParseJobFile(line + "\n", "jobs.jsonl", "");
    ASSERT_FALSE(bad.ok()) << line;
    EXPECT_THAT(Message(bad.status()), HasSubstr(expected));
  }
}

TEST(JobFile, ParsesAnImageAndRefusesOnePodmanWouldMisread) {
  auto entries = ParseJobFile(
      "{\"gpus\": 1, \"command\": [\"python3\"], \"image\": "
      "\"localhost/lab/torch:2.1\"}\n"
      "{\"gpus\": 1, \"command\": [\"true\"]}\n",
      "jobs.jsonl", "");
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ((*entries)[0].spec.image, "localhost/lab/torch:2.1");
  EXPECT_EQ((*entries)[1].spec.image, "");
  auto bad =
      ParseJobFile("{\"gpus\": 1, \"command\": [\"true\"], \"image\": 3}\n",
                   "jobs.jsonl", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("jobs.jsonl:1: image"));
  bad = ParseJobFile(
      "{\"gpus\": 1, \"command\": [\"true\"], \"image\": "
      "\"--privileged\"}\n",
      "jobs.jsonl", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()),
              HasSubstr("jobs.jsonl:1: image: expected a name starting "
                        "with a letter or digit"));
}

// A shape: nodes and gpus_per_node give the GPU count, or must match it.
TEST(JobFile, ParsesShapes) {
  auto entries = ParseJobFile(
      "{\"nodes\": 2, \"gpus_per_node\": 4, \"command\": [\"t\"]}\n"
      "{\"gpus\": 2, \"tasks_per_node\": 1, \"command\": [\"t\"]}\n",
      "jobs.jsonl", "");
  ASSERT_TRUE(entries.ok()) << entries.status();
  const JobRequest& first = (*entries)[0].spec;
  EXPECT_EQ(first.num_gpus, 8);
  EXPECT_EQ(first.nodes, 2);
  EXPECT_EQ(first.gpus_per_node, 4);
  EXPECT_EQ(first.tasks_per_node, 0);
  EXPECT_EQ((*entries)[1].spec.tasks_per_node, 1);
  for (const auto& [line, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"gpus\": 3, \"nodes\": 2, \"gpus_per_node\": 2, "
            "\"command\": [\"t\"]}",
            "jobs.jsonl:1: gpus: expected nodes x gpus_per_node = 4 "
            "GPUs, got 3"},
           {"{\"nodes\": 2, \"command\": [\"t\"]}",
            "jobs.jsonl:1: gpus: required"},
           {"{\"gpus\": 1, \"nodes\": 1.5, \"command\": [\"t\"]}",
            "jobs.jsonl:1: nodes: expected a whole number, got 1.5"},
           {"{\"nodes\": 100000, \"gpus_per_node\": 100000, "
            "\"command\": [\"t\"]}",
            "jobs.jsonl:1: nodes: expected 0 (any) to 1024"}}) {
    auto bad = ParseJobFile(line + "\n", "jobs.jsonl", "");
    ASSERT_FALSE(bad.ok()) << line;
    EXPECT_THAT(Message(bad.status()), HasSubstr(expected));
  }
}

// "dependency" takes the text of `submit --dependency`.
TEST(JobFile, ParsesDependencies) {
  auto entries = ParseJobFile(
      "{\"gpus\": 1, \"command\": [\"true\"], "
      "\"dependency\": \"afterok:3:4,afternotok:5\"}\n",
      "jobs.jsonl", "");
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ((*entries)[0].spec.dependencies,
            (std::vector<JobDependency>{{DependencyKind::kAfterOk, 3},
                                        {DependencyKind::kAfterOk, 4},
                                        {DependencyKind::kAfterNotOk, 5}}));
  for (const auto& [line, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"gpus\": 1, \"command\": [\"true\"], "
            "\"dependency\": \"afterok:x\"}",
            "jobs.jsonl:1: dependency: \"afterok:x\": job id \"x\" is not "
            "a positive integer"},
           {"{\"gpus\": 1, \"command\": [\"true\"], \"dependency\": 3}",
            "jobs.jsonl:1: dependency: expected a string"}}) {
    auto bad = ParseJobFile(line + "\n", "jobs.jsonl", "");
    ASSERT_FALSE(bad.ok()) << line;
    EXPECT_THAT(Message(bad.status()), HasSubstr(expected));
  }
}

TEST(JobFile, NamesTheLineAndFieldOfTheFirstBadLine) {
  const std::string good = "{\"gpus\": 1, \"command\": [\"true\"]}\n";
  struct Case {
    std::string line;
    std::string expected;
  } cases[] = {
      {"{\"gpus\": 0, \"command\": [\"true\"]}",
       "jobs.jsonl:3: cpus: required for a job without GPUs (a CPU-only "
       "job)"},
      {"{\"gpus\": -1, \"command\": [\"true\"]}",
       "jobs.jsonl:3: gpus: expected at least 1 GPU (0 with cpus: a CPU-only "
       "job), got -1"},
      {"{\"gpus\": 1, \"cpus\": 4, \"cpus_per_gpu\": 2, \"command\": "
       "[\"true\"]}",
       "jobs.jsonl:3: cpus and cpus_per_gpu: give one (cpus is the job's in "
       "all)"},
      {"{\"gpus\": \"two\", \"command\": [\"true\"]}",
       "jobs.jsonl:3: gpus: expected a whole number of GPUs, got \"two\""},
      {"{\"gpus\": 2.5, \"command\": [\"true\"]}",
       "jobs.jsonl:3: gpus: expected a whole number of GPUs, got 2.5"},
      {"{\"command\": [\"true\"]}",
       "jobs.jsonl:3: gpus: required (a number of GPUs, or nodes with "
       "gpus_per_node)"},
      {"{\"gpus\": 1}",
       "jobs.jsonl:3: command: required (an array of strings, argv)"},
      {"{\"gpus\": 1, \"command\": \"true\"}",
       "jobs.jsonl:3: command: expected an array of strings (argv), got "
       "\"true\""},
      {"{\"gpus\": 1, \"command\": [\"true\", 7]}",
       "jobs.jsonl:3: command[1]: expected a string, got 7"},
      {"{\"gpus\": 1, \"command\": []}",
       "jobs.jsonl:3: command: must not be empty (argv[0] first)"},
      {"{\"gpus\": 1, \"command\": [\"true\"], \"env\": {\"A=B\": \"x\"}}",
       "jobs.jsonl:3: env key \"A=B\": expected a variable name"},
      {"{\"gpus\": 1, \"command\": [\"true\"], \"env\": [\"A=1\"]}",
       "jobs.jsonl:3: env: expected an object"},
      {"{\"gpus\": 1, \"command\": [\"true\"], \"gpu\": 2}",
       "jobs.jsonl:3: gpu: unknown field; expected one of gpus, command, "
       "nodes, gpus_per_node, tasks_per_node, name, env, checkpoint_dir"},
      {"{\"gpus\": 1, \"command\": [\"true\"]",
       "jobs.jsonl:3: not valid JSON at byte"},
      {"[1, 2]", "jobs.jsonl:3: expected a JSON object"},
      {"{\"gpus\": 1, \"command\": [\"true\"], \"array\": \"0-9\"}",
       "jobs.jsonl:3: array: job arrays are not taken in a --file; submit "
       "each with `tiresias submit --array`"},
  };
  for (const Case& c : cases) {
    auto entries =
        ParseJobFile(good + good + c.line + "\n" + good, "jobs.jsonl", "");
    ASSERT_FALSE(entries.ok()) << c.line;
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(entries.status()), HasSubstr(c.expected)) << c.line;
  }
}

TEST(JobFile, RefusesAFileWithoutJobs) {
  for (const std::string text : {"", "\n\n  \n"}) {
    auto entries = ParseJobFile(text, "empty.jsonl", "");
    ASSERT_FALSE(entries.ok());
    EXPECT_THAT(Message(entries.status()),
                HasSubstr("empty.jsonl: no jobs in the file"));
  }
}

TEST(JobFile, RefusesMoreJobsThanOneSubmissionCarries) {
  std::string text;
  for (size_t i = 0; i <= kMaxJobsPerFile; ++i) {
    text += "{\"gpus\":1,\"command\":[\"true\"]}\n";
  }
  auto entries = ParseJobFile(text, "huge.jsonl", "");
  ASSERT_FALSE(entries.ok());
  EXPECT_THAT(Message(entries.status()),
              HasSubstr(absl::StrCat("huge.jsonl: more than ",
                                     kMaxJobsPerFile, " jobs (line ",
                                     kMaxJobsPerFile + 1)));
  // Exactly the limit is fine.
  text.resize(text.size() - std::string("{\"gpus\":1,\"command\":[\"true\"]}\n")
                                .size());
  auto all = ParseJobFile(text, "huge.jsonl", "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), kMaxJobsPerFile);
}

TEST(JobFile, ReadNamesAFileItCannotRead) {
  auto missing = ReadJobFile("/nonexistent/jobs.jsonl", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(Message(missing.status()),
            "/nonexistent/jobs.jsonl: cannot read it: No such file or "
            "directory");
  auto dir = ReadJobFile("/tmp", "");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(Message(dir.status()), "/tmp: cannot read it: it is a directory");
  if (geteuid() != 0) {  // root reads a mode-000 file anyway
    const std::string path =
        absl::StrCat(testing::TempDir(), "/unreadable-", getpid(), ".jsonl");
    std::ofstream(path) << "{\"gpus\":1,\"command\":[\"true\"]}\n";
    chmod(path.c_str(), 0);
    auto denied = ReadJobFile(path, "");
    ASSERT_FALSE(denied.ok());
    EXPECT_EQ(Message(denied.status()),
              absl::StrCat(path, ": cannot read it: Permission denied"));
    std::filesystem::remove(path);
  }
}

TEST(JobFile, LocatesAMastersRefusalOnItsLine) {
  auto entries = ParseJobFile(
      "{\"gpus\":1,\"command\":[\"true\"]}\n\n{\"gpus\":9,\"command\":[\"x\"]}",
      "jobs.jsonl", "");
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(LocateJobError("jobs[1].gpus: 9 GPUs requested but the cluster "
                           "has 8",
                           "jobs.jsonl", *entries),
            "jobs.jsonl:3: gpus: 9 GPUs requested but the cluster has 8");
  EXPECT_EQ(LocateJobError("jobs[0]: request_id \"r#0\": already used",
                           "jobs.jsonl", *entries),
            "jobs.jsonl:1: request_id \"r#0\": already used");
  // Out of range or not about one job: unchanged.
  EXPECT_EQ(LocateJobError("jobs[2].gpus: x", "jobs.jsonl", *entries),
            "jobs[2].gpus: x");
  EXPECT_EQ(LocateJobError("store: disk full", "jobs.jsonl", *entries),
            "store: disk full");
}

}  // namespace
}  // namespace tiresias::cli
