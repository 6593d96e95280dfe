// The pure checks shared by the master and the CLI. Every limit of a job
// spec is exercised through MasterState::SubmitJob in
// tests/master/submit_validation_test.cc; here, request ids and the quoting
// of bad input in messages.
#include "master/job_validation.h"

#include <signal.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TEST(JobValidationTest, RequestIdsArePrintableAsciiOfBoundedLength) {
  EXPECT_TRUE(ValidateRequestId("").ok());  // none given
  EXPECT_TRUE(ValidateRequestId("3f2a9c-retry 1").ok());
  EXPECT_TRUE(ValidateRequestId(std::string(128, 'a')).ok());
  absl::Status status = ValidateRequestId(std::string(129, 'a'));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "request_id: expected at most 128 bytes, got 129");
  status = ValidateRequestId("abc\n");
  EXPECT_EQ(status.message(),
            "request_id: expected printable ASCII, got byte 0x0a at byte 3");
  EXPECT_FALSE(ValidateRequestId("caf\xc3\xa9").ok());
}

// What the agent sets for every task, over the job's value, is refused
// rather than silently replaced; what a job may override is not.
TEST(JobValidationTest, VariablesTheAgentSetsForEveryTaskAreRefused) {
  JobRequest spec;
  spec.command = {"true"};
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "RANK", "MASTER_PORT", "PWD",
                           "TIRESIAS_TOKEN"}) {
    spec.env = {{name, "0"}};
    absl::Status status = ValidateJobRequest(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(
        std::string(status.message()),
        ::testing::StartsWith(absl::StrCat("spec.env key \"", name, "\": ")));
    EXPECT_THAT(std::string(status.message()),
                ::testing::HasSubstr("a job cannot set it"));
  }
  for (const char* name : {"HOME", "CUDA_DEVICE_ORDER", "NCCL_DEBUG"}) {
    spec.env = {{name, "x"}};
    EXPECT_TRUE(ValidateJobRequest(spec).ok()) << name;
  }
}

TEST(JobValidationTest, NotifyTakesAWebhookOrOneMailAddress) {
  JobRequest spec;
  spec.command = {"true"};
  for (const char* ok :
       {"http://hooks.example/x", "https://h:8443/a?b=c", "http://h?x",
        "http://[::1]:8080/x", "mailto:alice@example.org"}) {
    spec.notify = ok;
    EXPECT_TRUE(ValidateJobRequest(spec).ok()) << ok;
  }
  // A port past 65535 would throw in the master's HTTP client; user@
  // would be taken for the host; a newline would add a mail header.
  for (const char* bad :
       {"http://h:99999999999/", "http://h:0/", "http://h:80x/",
        "http://u:p@h/", "ftp://h/", "http:///x", "mailto:nobody",
        "mailto:a@b,c@d", "http://h/\nBcc: x", "http://h/ x"}) {
    spec.notify = bad;
    absl::Status status = ValidateJobRequest(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()),
                ::testing::StartsWith("spec.notify: "))
        << bad;
  }
  spec.notify = "mailto:a@b";
  spec.notify_on = {"end", "sometimes"};
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              ::testing::HasSubstr("spec.notify_on: \"sometimes\": expected "
                                   "begin, end, fail, requeue or time_limit"));
  spec.notify.clear();
  spec.notify_on = {"end"};
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              ::testing::StartsWith("spec.notify_on: events to notify of, "
                                    "but no spec.notify"));
}

TEST(JobValidationTest, BadInputIsQuotedEscapedAndCutInMessages) {
  EXPECT_EQ(QuoteForError("A=B"), "\"A=B\"");
  EXPECT_EQ(QuoteForError("a\nb\x1b\xff"), "\"a\\nb\\x1b\\xff\"");
  EXPECT_EQ(QuoteForError(std::string(100, 'k')),
            "\"" + std::string(64, 'k') + "...\"");
  JobRequest spec;
  spec.command = {"true"};
  spec.env = {{"BAD\nKEY", "v"}};
  absl::Status status = ValidateJobRequest(spec);
  EXPECT_EQ(status.message(),
            "spec.env key \"BAD\\nKEY\": expected a variable name matching "
            "[A-Za-z_][A-Za-z0-9_]*");
  // Messages stay on one line whatever the input.
  spec.env = {};
  spec.command = {"true", "x\xc0\x80"};
  status = ValidateJobRequest(spec);
  EXPECT_EQ(status.message(),
            "spec.command[1]: expected valid UTF-8, got byte 0xc0 at byte 1");
  spec.command = {"true"};
  spec.name = "a\xed\xa0\x80";  // a surrogate: not UTF-8
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.name: expected valid UTF-8"));
}

TEST(JobValidationTest, ACpuOnlyJobAsksForCpusAndNoGpuForm) {
  JobRequest spec;
  spec.command = {"true"};
  spec.num_gpus = 0;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.cpus: a job without GPUs (gpus 0) needs 1 to 1024 CPUs, "
            "got 0");
  spec.cpus = 2;
  spec.mem_mib = 512;
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.mem_mib = -1;
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.mem_mib: expected 0 (a per-CPU share)"));
  spec.mem_mib = 0;
  spec.gpu_type = "a100";
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.gpu_type: is for jobs with GPUs; a CPU-only job (gpus 0) "
            "runs on one node's spare CPUs (cpus, mem_mib)");
  spec.gpu_type.clear();
  spec.exclusive = true;
  EXPECT_THAT(std::string(ValidateJobRequest(spec).message()),
              HasSubstr("spec.exclusive: is for jobs with GPUs"));
  spec.exclusive = false;
  spec.nodelist = {"n1"};  // node filters by name and feature do apply
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.num_gpus = 1;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.cpus: is for a CPU-only job (gpus 0); a job with GPUs asks "
            "with cpus_per_gpu and mem_per_gpu_mib");
  spec.num_gpus = -1;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.gpus: expected at least 1 GPU (0 with cpus: a CPU-only "
            "job), got -1");
}

TEST(JobValidationTest, AShapeIsNodesTimesGpusPerNodeOrNone) {
  JobRequest spec;
  spec.command = {"true"};
  spec.num_gpus = 4;
  EXPECT_TRUE(ValidateJobRequest(spec).ok());  // any spread
  spec.nodes = 2;
  spec.gpus_per_node = 2;
  spec.tasks_per_node = 4;
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.gpus_per_node = 3;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.gpus: expected nodes x gpus_per_node = 6 GPUs, got 4");
  spec.gpus_per_node = 0;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.gpus_per_node: expected nodes and gpus_per_node both set or "
            "both 0, got 2 and 0");
  spec.nodes = 0;
  spec.gpus_per_node = 65;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.gpus_per_node: expected 0 (any) to 64, got 65");
  spec.gpus_per_node = 0;
  spec.tasks_per_node = -1;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.tasks_per_node: expected 0 (one per GPU) to 64, got -1");
}

TEST(JobValidationTest, ASignalBeforeTheLimitNeedsALimitAndAStopSignal) {
  JobRequest spec;
  spec.command = {"true"};
  spec.warn = {.signal = SIGUSR1, .seconds = 60};
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.signal: a signal before the time limit needs a time limit "
            "(--time)");
  spec.time_limit = Seconds{600};
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.warn.seconds = 0;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.signal_seconds: expected 1 to 65535, got 0");
  spec.warn = {.signal = SIGKILL, .seconds = 60};
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.signal: expected USR1, USR2, TERM, INT, HUP, QUIT or ALRM "
            "(their numbers), got 9");
}

TEST(JobValidationTest, AnInteractiveJobHasAModeAGraceAndNoOutputFiles) {
  JobRequest spec;
  spec.command = {"bash"};
  spec.io = kIoPty;
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.io_grace_seconds = 86400;
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
  spec.io_grace_seconds = 86401;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.io_grace_seconds: expected 0 (the default, 60) to 86400 "
            "seconds, got 86401");
  spec.io_grace_seconds = -1;
  EXPECT_FALSE(ValidateJobRequest(spec).ok());
  spec.io_grace_seconds = 0;
  spec.io = 3;
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.io: expected 0 (none), 1 (pipes) or 2 (a pty), got 3");
  spec.io = kIoPipes;
  spec.output = "out-%j.txt";
  EXPECT_THAT(ValidateJobRequest(spec).message(),
              HasSubstr("an interactive job's output goes to whoever "
                        "attaches"));
  spec.output.clear();
  spec.array.indices = "0-3";
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.io: a job array cannot be interactive");
  // A batch job has nobody to wait for.
  spec = JobRequest{.command = {"true"}, .io_grace_seconds = 5};
  EXPECT_THAT(ValidateJobRequest(spec).message(),
              HasSubstr("a grace for a job nobody attaches to"));
}

TEST(JobValidationTest, AnImageIsANameOrANormalAbsolutePath) {
  JobRequest spec{.command = {"python3", "train.py"}};
  for (const char* good :
       {"torch:2.1", "localhost/lab/torch:2.1", "/srv/images/torch"}) {
    spec.image = good;
    EXPECT_TRUE(ValidateJobRequest(spec).ok()) << good;
  }
  spec.image = "--privileged";
  EXPECT_EQ(ValidateJobRequest(spec).message(),
            "spec.image: expected a name starting with a letter or digit, or "
            "an absolute path to a root file system folder");
  spec.image = "/srv/../etc";
  EXPECT_THAT(ValidateJobRequest(spec).message(),
              HasSubstr("spec.image: expected a normal absolute path"));
  // Arrays and interactive jobs take an image like any job.
  spec.image = "torch:2.1";
  spec.array.indices = "0-3";
  EXPECT_TRUE(ValidateJobRequest(spec).ok());
}

}  // namespace
}  // namespace tiresias
