// `tiresias submit --file JOBS.jsonl` end to end: the real `tiresias` binary
// against a real master child process (gRPC on loopback, SQLite in its state
// dir). A good file is submitted whole, in order; a bad line, an empty file,
// an unreadable file or one past the limit submits nothing and says where.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_fixture.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

namespace fs = std::filesystem;
using cli_test::Lines;
using cli_test::ProcessResult;
using ::testing::HasSubstr;

constexpr const char* kGoodLine = "{\"gpus\": 1, \"command\": [\"/bin/true\"]}";

class SubmitFileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TIRESIAS_MASTER");
    master_ = std::make_unique<MasterProcess>(TIRESIAS_BINARY,
                                              (dir_ / "state").string());
    ASSERT_FALSE(master_->address().empty())
        << "master printed: " << master_->output();
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  ProcessResult Client(const std::string& command,
                       const std::vector<std::string>& args = {}) {
    return RunClient(TIRESIAS_BINARY, *master_, command, args);
  }
  // The jobs the master has, as `tiresias jobs --json` prints them.
  nlohmann::json Jobs() {
    ProcessResult r = Client("jobs", {"--all", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false)["jobs"];
  }
  // A submission that must fail: exit 1, nothing on stdout, one line on
  // stderr (returned), and still no job on the master.
  std::string MustFail(const std::string& path) {
    ProcessResult r = Client("submit", {"--file", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_EQ(Jobs().size(), 0u);
    return r.err;
  }

  test_support::TestDir tmp_{"tiresias-submit-file"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
};

TEST_F(SubmitFileCliTest, AGoodFileSubmitsEveryJobInOrderAndPrintsTheIds) {
  const std::string path = WriteFile(
      "jobs.jsonl",
      absl::StrCat(
          "{\"gpus\": 2, \"command\": [\"/usr/bin/python3\", \"train.py\"], "
          "\"name\": \"resnet\", \"env\": {\"SEED\": \"7\"}, "
          "\"checkpoint_dir\": \"/tmp/ckpt-resnet\"}\n",
          "\n", kGoodLine, "\n", kGoodLine, "\n"));
  ProcessResult r = Client("submit", {"--file", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n2\n3\n");
  nlohmann::json jobs = Jobs();
  ASSERT_EQ(jobs.size(), 3u);
  const nlohmann::json& spec = jobs[0];  // the spec's fields are the job's
  EXPECT_EQ(spec["name"], "resnet");
  EXPECT_EQ(spec["gpus"], 2);
  EXPECT_EQ(spec["command"], nlohmann::json({"/usr/bin/python3", "train.py"}));
  EXPECT_EQ(spec["checkpoint_dir"], "/tmp/ckpt-resnet");
  // Listings leave the environment out; the job itself shows it.
  ProcessResult one = Client("job", {"1", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out, nullptr, false)["env"],
            nlohmann::json({{"SEED", "7"}}));
  EXPECT_EQ(jobs[1]["name"], "true");  // the command's base name

  ProcessResult json = Client("submit", {"--file", path, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json answer = nlohmann::json::parse(json.out, nullptr, false);
  EXPECT_EQ(answer["job_ids"], nlohmann::json({4, 5, 6}));
  EXPECT_EQ(answer["existing"], false);
}

TEST_F(SubmitFileCliTest, ABadLineInTheMiddleSubmitsNothingAndNamesIt) {
  const std::string path = WriteFile(
      "bad.jsonl", absl::StrCat(kGoodLine, "\n", kGoodLine, "\n",
                                "{\"gpus\": 0, \"command\": [\"/bin/true\"]}\n",
                                kGoodLine, "\n"));
  EXPECT_EQ(MustFail(path),
            absl::StrCat("tiresias: ", path,
                         ":3: cpus: required for a job without GPUs (a "
                         "CPU-only job)\n"));
  const std::string typo = WriteFile(
      "typo.jsonl",
      absl::StrCat(kGoodLine, "\n{\"gpus\": 1, \"comand\": [\"x\"]}\n"));
  EXPECT_THAT(MustFail(typo),
              HasSubstr(":2: comand: unknown field; expected one of gpus, "
                        "command, nodes, gpus_per_node, tasks_per_node, name, "
                        "env, checkpoint_dir"));
  const std::string broken =
      WriteFile("broken.jsonl", absl::StrCat(kGoodLine, "\n{\"gpus\": 1,\n"));
  EXPECT_THAT(MustFail(broken), HasSubstr(":2: not valid JSON at byte"));
}

TEST_F(SubmitFileCliTest, AnEmptyOrUnreadableFileSubmitsNothing) {
  const std::string empty = WriteFile("empty.jsonl", "\n\n");
  EXPECT_EQ(MustFail(empty),
            absl::StrCat("tiresias: ", empty,
                         ": no jobs in the file; expected one JSON object "
                         "per line, e.g. {\"gpus\": 1, \"command\": "
                         "[\"python3\", \"train.py\"]}\n"));
  const std::string missing = (dir_ / "missing.jsonl").string();
  EXPECT_EQ(MustFail(missing),
            absl::StrCat("tiresias: ", missing,
                         ": cannot read it: No such file or directory\n"));
  EXPECT_EQ(MustFail(dir_.string()),
            absl::StrCat("tiresias: ", dir_.string(),
                         ": cannot read it: it is a directory\n"));
  // The flags of one job do not mix with a file of them.
  ProcessResult r = Client("submit", {"--file", empty, "--gpus", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--file takes every job from the file"));
}

// 10,000 jobs in one request, with consecutive ids; one line past the
// limit of a request, and nothing is sent.
TEST_F(SubmitFileCliTest, AHugeFileIsOneRequestAndOnePastTheLimitIsRefused) {
  std::string text;
  for (int i = 0; i < 10000; ++i) {
    absl::StrAppend(&text, "{\"gpus\":1,\"command\":[\"/bin/true\"],\"name\":\"n",
                    i, "\"}\n");
  }
  ProcessResult r = Client("submit", {"--file", WriteFile("10k.jsonl", text)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> ids = Lines(r.out);
  ASSERT_EQ(ids.size(), 10000u);
  EXPECT_EQ(ids.front(), "1");
  EXPECT_EQ(ids.back(), "10000");

  std::string over;
  for (int i = 0; i <= 100000; ++i) absl::StrAppend(&over, kGoodLine, "\n");
  const std::string path = WriteFile("over.jsonl", over);
  r = Client("submit", {"--file", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, absl::StrCat("tiresias: ", path,
                                ": more than 100000 jobs (line 100001 is one "
                                "too many); one submission carries at most "
                                "100000: split the file\n"));
  ProcessResult page = Client("jobs", {"--all", "--json"});
  ASSERT_EQ(page.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(page.out)["jobs"].size(), 10000u);
}

}  // namespace
}  // namespace tiresias::cluster_test
