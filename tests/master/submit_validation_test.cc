// Validation at the door: every limit of a job spec (src/master/job_limits.h)
// and every kind of bad input is refused by MasterState::SubmitJob with
// INVALID_ARGUMENT and a one-line message naming the field, and nothing is
// stored. A spec exactly at a limit is accepted.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadSpec {
  std::string what;  // for the failure message
  JobRequest spec;
  std::string field;        // the message starts with this
  std::string detail = "";  // and contains this
};

JobRequest Valid() {
  JobRequest spec = Spec(1, {"/usr/bin/python3", "train.py"});
  spec.user = "alice";
  spec.env = {{"LR", "0.1"}};
  return spec;
}

template <typename F>
JobRequest With(F change) {
  JobRequest spec = Valid();
  change(spec);
  return spec;
}

std::vector<BadSpec> BadSpecs() {
  const std::string kInvalidUtf8 = "ok\xff";
  const std::string kNul("a\0b", 3);
  std::vector<BadSpec> cases = {
      {"no GPU, no CPU", With([](auto& s) { s.num_gpus = 0; }), "spec.cpus",
       "a job without GPUs (gpus 0) needs 1 to 1024 CPUs, got 0"},
      {"negative GPUs", With([](auto& s) { s.num_gpus = -2; }), "spec.gpus",
       "expected at least 1 GPU (0 with cpus: a CPU-only job), got -2"},
      {"CPUs beside GPUs", With([](auto& s) { s.cpus = 4; }), "spec.cpus",
       "is for a CPU-only job (gpus 0); a job with GPUs asks with "
       "cpus_per_gpu and mem_per_gpu_mib"},
      {"name too long", With([](auto& s) { s.name = std::string(257, 'n'); }),
       "spec.name", "expected at most 256 bytes, got 257"},
      {"user too long", With([](auto& s) { s.user = std::string(65, 'u'); }),
       "spec.user", "expected at most 64 bytes, got 65"},
      {"model too long", With([](auto& s) { s.model = std::string(65, 'm'); }),
       "spec.model", "expected at most 64 bytes, got 65"},
      {"checkpoint dir too long",
       With([](auto& s) { s.checkpoint_dir = std::string(4097, 'c'); }),
       "spec.checkpoint_dir", "expected at most 4096 bytes, got 4097"},
      {"no command", With([](auto& s) { s.command.clear(); }), "spec.command",
       "must not be empty"},
      {"empty argv[0]", With([](auto& s) {
         s.command = {"", "x"};
       }),
       "spec.command", "must not be empty"},
      {"too many arguments", With([](auto& s) { s.command.resize(4097, "a"); }),
       "spec.command", "expected at most 4096 arguments, got 4097"},
      {"command too big", With([](auto& s) {
         s.command = {"run", std::string(128 * 1024 - 2, 'x')};
       }),
       "spec.command", "expected at most 131072 bytes in total, got 131073"},
      {"too many variables", With([](auto& s) {
         s.env.clear();
         for (int i = 0; i < 1025; ++i) s.env[absl::StrCat("V", i)] = "";
       }),
       "spec.env", "expected at most 1024 variables, got 1025"},
      {"key with '='", With([](auto& s) {
         s.env = {{"A=B", "c"}};
       }),
       "spec.env key \"A=B\"", "matching [A-Za-z_][A-Za-z0-9_]*"},
      {"key starting with a digit", With([](auto& s) {
         s.env = {{"1A", "c"}};
       }),
       "spec.env key \"1A\"", "matching"},
      {"empty key", With([](auto& s) {
         s.env = {{"", "c"}};
       }),
       "spec.env key \"\"", "matching"},
      {"key not UTF-8", With([&](auto& s) {
         s.env = {{kInvalidUtf8, "c"}};
       }),
       "spec.env key \"ok\\xff\"", "matching"},
      {"key too long", With([](auto& s) {
         s.env = {{std::string(257, 'K'), "c"}};
       }),
       "spec.env key \"KKKK", "expected a name of at most 256 bytes, got 257"},
      {"value too long", With([](auto& s) {
         s.env = {{"K", std::string(32 * 1024 + 1, 'v')}};
       }),
       "spec.env[\"K\"]", "expected a value of at most 32768 bytes, got 32769"},
      {"environment too big", With([](auto& s) {
         s.env.clear();
         for (int i = 0; i < 5; ++i) {
           s.env[absl::StrCat("V", i)] = std::string(30 * 1024, 'v');
         }
       }),
       "spec.env", "expected at most 131072 bytes of names and values"},
  };
  // NUL bytes and invalid UTF-8, in each kind of string.
  struct Text {
    std::string field;
    void (*set)(JobRequest&, const std::string&);
  };
  const Text texts[] = {
      {"spec.name", [](JobRequest& s, const std::string& t) { s.name = t; }},
      {"spec.user", [](JobRequest& s, const std::string& t) { s.user = t; }},
      {"spec.model", [](JobRequest& s, const std::string& t) { s.model = t; }},
      {"spec.checkpoint_dir",
       [](JobRequest& s, const std::string& t) { s.checkpoint_dir = t; }},
      {"spec.command[0]",
       [](JobRequest& s, const std::string& t) { s.command[0] = t; }},
      {"spec.command[1]",
       [](JobRequest& s, const std::string& t) { s.command[1] = t; }},
      {"spec.env[\"LR\"]",
       [](JobRequest& s, const std::string& t) { s.env["LR"] = t; }},
  };
  for (const Text& text : texts) {
    JobRequest nul = Valid();
    text.set(nul, kNul);
    cases.push_back({text.field + " with NUL", nul, text.field,
                     "expected no NUL byte, got one at byte 1"});
    JobRequest bad = Valid();
    text.set(bad, kInvalidUtf8);
    cases.push_back({text.field + " not UTF-8", bad, text.field,
                     "expected valid UTF-8, got byte 0xff at byte 2"});
  }
  return cases;
}

class SubmitValidationTest : public MasterFixture {};

TEST_F(SubmitValidationTest,
       EveryBadSpecIsRefusedNamingItsFieldAndNothingIsStored) {
  Open();
  for (const BadSpec& bad : BadSpecs()) {
    SCOPED_TRACE(bad.what);
    absl::StatusOr<JobId> id = master_->SubmitJob(bad.spec);
    ASSERT_FALSE(id.ok()) << "accepted as job " << *id;
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(id.status().message());
    EXPECT_THAT(message, StartsWith(bad.field));
    EXPECT_THAT(message, HasSubstr(bad.detail));
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  auto jobs = master_->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->empty());
  // Still serving: a good spec gets the first id.
  EXPECT_EQ(Submit(Valid()), 1);
}

TEST_F(SubmitValidationTest, ASpecExactlyAtEveryLimitIsAccepted) {
  Open();
  JobRequest spec = Valid();
  spec.name = std::string(256, 'n');
  spec.user = std::string(64, 'u');
  spec.model = std::string(64, 'm');
  spec.checkpoint_dir = "/" + std::string(4095, 'c');
  spec.command.assign(4096, "a");
  spec.command[1] = std::string(128 * 1024 - 4095, 'x');
  spec.env.clear();
  spec.env[std::string(256, 'K')] = "";
  for (int i = 0; i < 1023; ++i) spec.env[absl::StrCat("V", i)] = "";
  for (int i = 0; i < 3; ++i) {
    spec.env[absl::StrCat("V", i)] = std::string(32 * 1024, 'v');
  }
  // Names and values add up to exactly 128 KiB.
  size_t total = 0;
  for (const auto& [key, value] : spec.env) total += key.size() + value.size();
  spec.env["V3"] = std::string(128 * 1024 - total, 'v');
  // Multi-byte UTF-8 is text like any other.
  spec.name.replace(0, 4, "\xe2\x82\xac\x21");
  const JobId id = Submit(spec);
  ASSERT_EQ(id, 1);
  EXPECT_EQ(Get(id).spec, spec);
}

TEST_F(SubmitValidationTest, MoreGpusThanTheClusterHasIsStillRefused) {
  Open();
  Register("n1", 4);
  auto id = master_->SubmitJob(Spec(5));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(id.status().message()),
              HasSubstr("spec.gpus: 5 GPUs requested but the cluster has 4"));
  EXPECT_EQ(Submit(Spec(4)), 1);
}

}  // namespace
}  // namespace tiresias::master_testing
