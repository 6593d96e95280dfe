#include "cli_fixture.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>

namespace tiresias::cli_test {

std::string DataFile(const std::string& name) {
  return (fs::current_path() / "data" / name).string();
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::string Tail(const std::string& text, size_t n) {
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

std::string Describe(const ProcessResult& run) {
  std::ostringstream s;
  s << "exit code " << run.exit_code;
  if (run.signal != 0) s << ", killed by signal " << run.signal;
  if (run.timed_out) s << ", timed out";
  s << "\n--- stdout ---\n"
    << Tail(run.out) << "\n--- stderr ---\n"
    << Tail(run.err);
  return s.str();
}

void CliTest::SetUp() {
  trace_60_ = DataFile("60_job.csv");
  ASSERT_TRUE(fs::exists(trace_60_))
      << trace_60_ << " is missing; run the tests from the repository root";
  std::string pattern =
      (fs::path(::testing::TempDir()) / "tiresias_cli_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  dir_ = fs::canonical(pattern);
}

void CliTest::TearDown() {
  if (!dir_.empty()) fs::remove_all(dir_);
}

ProcessResult CliTest::Tiresias(const std::vector<std::string>& args,
                                const fs::path& cwd) {
  std::vector<std::string> argv = {TIRESIAS_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {.cwd = cwd.empty() ? dir_ : cwd});
}

nlohmann::json CliTest::SimulateJson(std::vector<std::string> args) {
  args.insert(args.begin(), "simulate");
  args.push_back("--json");
  const ProcessResult run = Tiresias(args);
  EXPECT_EQ(run.exit_code, 0) << Describe(run);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr,
                                             /*allow_exceptions=*/false);
  EXPECT_TRUE(doc.is_object()) << "stdout is not a JSON object\n"
                               << Describe(run);
  return doc.is_object() ? doc : nlohmann::json::object();
}

fs::path CliTest::MakeDir(const std::string& name) {
  const fs::path path = dir_ / name;
  fs::create_directories(path);
  return path;
}

}  // namespace tiresias::cli_test
