// Shared fixture for end-to-end tests of the `tiresias` command: each test
// gets a fresh temporary folder, and the command runs as a child process
// with that folder as its working directory, so whatever it writes lands
// there and nowhere else.
#ifndef TIRESIAS_TESTS_CLI_CLI_FIXTURE_H_
#define TIRESIAS_TESTS_CLI_CLI_FIXTURE_H_

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cli_test {

namespace fs = std::filesystem;

// The data file `name` (e.g. "60_job.csv") under the repository's data/,
// as an absolute path. Tests run with the repository root as the working
// directory.
std::string DataFile(const std::string& name);

// The whole contents of a file, or "" if it cannot be read.
std::string ReadFile(const fs::path& path);

// `text` split at '\n', without the line ends; a trailing newline does not
// make an empty last line.
std::vector<std::string> Lines(const std::string& text);

// `line` split at runs of blanks.
std::vector<std::string> Words(const std::string& line);

// The last `n` characters, for failure messages.
std::string Tail(const std::string& text, size_t n = 2000);

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Runs `tiresias args...` in `cwd` (default: the test's folder).
  ProcessResult Tiresias(const std::vector<std::string>& args,
                         const fs::path& cwd = {});

  // `tiresias simulate args... --json`; expects success and returns the
  // parsed stdout (an empty object, with a test failure, otherwise).
  nlohmann::json SimulateJson(std::vector<std::string> args);

  // A fresh subfolder of the test's folder.
  fs::path MakeDir(const std::string& name);

  fs::path dir_;          // removed after the test
  std::string trace_60_;  // data/60_job.csv, absolute
};

// For EXPECT/ASSERT messages: what the process printed and how it ended.
std::string Describe(const ProcessResult& run);

}  // namespace tiresias::cli_test

#endif  // TIRESIAS_TESTS_CLI_CLI_FIXTURE_H_
