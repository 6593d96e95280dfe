// End-to-end tests of the daemons' configuration file: `tiresias config
// example` sets every flag, `config check` names the line and key of what
// is wrong, and `tiresias master` / `agent` read --config under their
// command line.
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class ConfigCliTest : public CliTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
};

// Every flag of both daemons, uncommented at its default (and insecure,
// so that the master's one TLS choice is made), is a valid file: every
// flag can be written in it.
TEST_F(ConfigCliTest, TheExampleSetsEveryFlagAndChecks) {
  const ProcessResult example = Tiresias({"config", "example"});
  ASSERT_EQ(example.exit_code, 0) << Describe(example);
  int set = 0;
  std::string text;
  const std::regex commented("^# ([a-z0-9-]+) = (.*)$");
  for (const std::string& line : Lines(example.out)) {
    std::smatch m;
    if (std::regex_match(line, m, commented)) {
      ++set;
      text += m[1].str() + " = " +
              (m[1] == "insecure" ? std::string("true") : m[2].str()) + "\n";
    } else {
      text += line + "\n";
    }
  }
  // Each flag of `master --help` and `agent --help` but --help and
  // --config is in the example.
  std::vector<std::string> flags, in_example;
  for (const char* daemon : {"master", "agent"}) {
    const ProcessResult help = Tiresias({daemon, "--help"});
    const std::regex flag("^  (?:-[a-z], ?)?--([a-z0-9-]+)");
    for (const std::string& line : Lines(help.out)) {
      std::smatch m;
      if (std::regex_search(line, m, flag) && m[1] != "help" &&
          m[1] != "config") {
        flags.push_back(m[1]);
      }
    }
  }
  for (const std::string& line : Lines(example.out)) {
    std::smatch m;
    if (std::regex_match(line, m, commented)) in_example.push_back(m[1]);
  }
  EXPECT_GT(flags.size(), 40u);
  EXPECT_EQ(in_example, flags);
  EXPECT_EQ(set, static_cast<int>(flags.size()));
  const std::string path = Write("all.toml", text);
  const ProcessResult check = Tiresias({"config", "check", path});
  ASSERT_EQ(check.exit_code, 0) << Describe(check);
  EXPECT_THAT(check.out, StartsWith(path + ": ok ([master] "));
}

struct BadConfig {
  std::string name;
  std::string text;
  std::string message;  // after "tiresias config: PATH:"
};

class BadConfigTest : public ConfigCliTest,
                      public ::testing::WithParamInterface<BadConfig> {};

TEST_P(BadConfigTest, CheckNamesTheLineAndKey) {
  const std::string path = Write("bad.toml", GetParam().text);
  const ProcessResult check = Tiresias({"config", "check", path});
  EXPECT_EQ(check.exit_code, 2) << Describe(check);
  EXPECT_EQ(check.out, "");
  EXPECT_EQ(check.err,
            "tiresias config: " + path + ":" + GetParam().message + "\n");
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadConfigTest,
    ::testing::Values(
        BadConfig{"UnknownKey",
                  "[master]\ninsecure = true\n\n[agent]\nname = \"n1\"\n"
                  "gpu = 4\n",
                  "6: [agent] gpu: not a flag of `tiresias agent` (did you "
                  "mean gpus?); see `tiresias agent --help`"},
        BadConfig{
            "CheckedByTheFlag", "[agent]\ninsecure = true\ngpus = -1\n",
            "3: [agent] gpus: -1: --gpus: Value -1 not in range 0 to 1024"},
        BadConfig{"CheckedByTheDaemon",
                  "[master]\ninsecure = true\npolicy = \"tiresias-l\"\n"
                  "pack_limit = 2\n",
                  "4: [master] pack_limit: --pack-limit 2: expected a skew "
                  "between 0 and 1"},
        BadConfig{"AgentMemory",
                  "[agent]\ninsecure = true\nmemory = \"lots\"\n",
                  "3: [agent] memory: --memory: expected a size such as 16G, "
                  "512M or 2048 (MiB), got \"lots\""},
        BadConfig{"Syntax", "[master]\nstate-dir = /var/lib/tiresias\n",
                  "2: expected a value: a \"string\", a number, true, false "
                  "or a [list]; got '/var/lib/tiresias' (a string needs "
                  "quotes)"}),
    [](const auto& info) { return info.param.name; });

// The daemons read the file through --config, and their command line wins:
// the master fails on the file's bad policy with its line, unless the
// command line gives one; the agent's message names the file's line.
TEST_F(ConfigCliTest, TheDaemonsReadItUnderTheirCommandLine) {
  const std::string path = Write(
      "c.toml", "[master]\ninsecure = true\nstate-dir = \"" +
                    (dir_ / "st").string() +
                    "\"\npolicy = \"gandiva\"\n\n[agent]\ninsecure = true\n"
                    "grace = -3\n");
  ProcessResult master = Tiresias({"master", "--config", path});
  EXPECT_EQ(master.exit_code, 1) << Describe(master);
  EXPECT_THAT(master.err,
              StartsWith("tiresias: " + path +
                         ":4: [master] policy: --policy gandiva: "));
  master = Tiresias({"master", "--config", path, "--policy", "nope"});
  EXPECT_THAT(master.err, StartsWith("tiresias: --policy nope: "));
  const ProcessResult agent = Tiresias({"agent", "--config", path});
  EXPECT_EQ(agent.exit_code, 2) << Describe(agent);
  EXPECT_EQ(agent.err, "tiresias agent: " + path +
                           ":8: [agent] grace: --grace: expected >= 0 "
                           "seconds, got -3\n");
  const ProcessResult missing =
      Tiresias({"agent", "--config", (dir_ / "none.toml").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("none.toml: cannot read the "
                                     "configuration file: No such file"));
}

}  // namespace
}  // namespace tiresias::cli_test
