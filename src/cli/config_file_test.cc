// The daemons' configuration file: TOML read with its lines, and applied
// to a command's flags under the command line.
#include "cli/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Flags {
  std::string listen = "127.0.0.1:50051";
  int gpus = 0;
  bool insecure = false;
  bool keep = true;
  std::vector<std::string> features;
  double knob = 0;
};

// A command with flags of each kind the daemons have.
class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() {
    cmd_ = app_.add_subcommand("agent", "");
    cmd_->add_option("--listen", f_.listen, "");
    cmd_->add_option("--gpus", f_.gpus, "")->check(CLI::Range(0, 1024));
    cmd_->add_flag("--insecure", f_.insecure, "");
    cmd_->add_flag("--keep-tasks", f_.keep, "");
    cmd_->add_option("--feature", f_.features, "")->delimiter(',');
    cmd_->add_option("--promote-knob", f_.knob, "");
    cmd_->add_option("--config", config_, "");
  }

  // Parses `args` as the command line, then applies `text` as the file.
  absl::Status Run(std::vector<std::string> args, std::string_view text) {
    args.insert(args.begin(), "agent");
    std::reverse(args.begin(), args.end());
    app_.parse(args);
    absl::StatusOr<ConfigFile> file = ParseConfig(text, "t.toml");
    if (!file.ok()) return file.status();
    return ApplyConfig(*file, "agent", GivenOptions(*cmd_), cmd_);
  }

  CLI::App app_;
  CLI::App* cmd_;
  Flags f_;
  std::string config_;
};

TEST_F(ConfigTest, SetsEveryKindOfFlag) {
  ASSERT_TRUE(Run({}, R"(# a comment
[master]
listen = "0.0.0.0:1"   # not this command's section

[agent]
listen = "10.0.0.1:7000"
gpus = 1_0
insecure = true
keep_tasks = false
feature = [
  "ib",   # a comment inside the list
  'nvme\x',
]
promote-knob = 2.5e1
)")
                  .ok());
  EXPECT_EQ(f_.listen, "10.0.0.1:7000");
  EXPECT_EQ(f_.gpus, 10);
  EXPECT_TRUE(f_.insecure);
  EXPECT_FALSE(f_.keep);
  EXPECT_THAT(f_.features, ElementsAre("ib", "nvme\\x"));
  EXPECT_DOUBLE_EQ(f_.knob, 25);
}

TEST_F(ConfigTest, TheCommandLineWins) {
  ASSERT_TRUE(Run({"--gpus", "3", "--feature", "a,b"},
                  "[agent]\ngpus = 8\nfeature = [\"c\"]\nlisten = \"x:1\"\n")
                  .ok());
  EXPECT_EQ(f_.gpus, 3);
  EXPECT_THAT(f_.features, ElementsAre("a", "b"));
  EXPECT_EQ(f_.listen, "x:1");
}

TEST_F(ConfigTest, StringEscapes) {
  ASSERT_TRUE(Run({}, "[agent]\nlisten = \"a\\\"b\\\\c\\u00e9\\tZ\"\n").ok());
  EXPECT_EQ(f_.listen, "a\"b\\c\xc3\xa9\tZ");
}

TEST_F(ConfigTest, AFlagsCheckNamesTheLineAndKey) {
  absl::Status s = Run({}, "[agent]\n\ngpus = 5000\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("t.toml:3: [agent] gpus: 5000: "));
  s = Run({}, "[agent]\ngpus = \"four\"\n");
  EXPECT_THAT(s.message(), HasSubstr("t.toml:2: [agent] gpus: four: "));
}

TEST_F(ConfigTest, UnknownKeysAreRefusedWithTheNearestFlag) {
  absl::Status s = Run({}, "[agent]\nlisten = \"a:1\"\ngpu = 4\n");
  EXPECT_EQ(s.message(),
            "t.toml:3: [agent] gpu: not a flag of `tiresias agent` (did you "
            "mean gpus?); see `tiresias agent --help`");
  s = Run({}, "[agent]\nconfig = \"other.toml\"\n");
  EXPECT_THAT(s.message(), HasSubstr("t.toml:2: [agent] config: not a flag"));
}

TEST_F(ConfigTest, KindsMustFitTheFlag) {
  EXPECT_EQ(Run({}, "[agent]\ninsecure = \"yes\"\n").message(),
            "t.toml:2: [agent] insecure: expected true or false");
  EXPECT_EQ(Run({}, "[agent]\ngpus = [1, 2]\n").message(),
            "t.toml:2: [agent] gpus: expected one value, not a list (the "
            "flag is given once)");
}

struct BadFile {
  std::string text;
  std::string message;
};

class BadSyntaxTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadSyntaxTest, NamesTheLine) {
  absl::StatusOr<ConfigFile> f = ParseConfig(GetParam().text, "c.toml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadSyntaxTest,
    ::testing::Values(
        BadFile{"listen = \"a\"\n",
                "c.toml:1: listen is outside a section: put it under "
                "[master] or [agent]"},
        BadFile{"[master]\n[slurm]\n",
                "c.toml:2: unknown section [slurm]; expected [master] or "
                "[agent]"},
        BadFile{"[master]\nx = 1\n[master]\n",
                "c.toml:3: section [master] given twice"},
        BadFile{"[agent]\n\nstate-dir = /var/lib\n",
                "c.toml:3: expected a value: a \"string\", a number, true, "
                "false or a [list]; got '/var/lib' (a string needs quotes)"},
        BadFile{"[agent]\ngpus = 1\nGPUS = 2\ngpus = 3\n",
                "c.toml:4: [agent] gpus given twice (first on line 2)"},
        BadFile{"[agent]\nstate_dir = \"a\"\nstate-dir = \"b\"\n",
                "c.toml:3: [agent] state-dir given twice (first on line 2)"},
        BadFile{"[agent]\nlisten = \"a:1\n",
                "c.toml:2: unterminated string: expected its closing quote"},
        BadFile{"[agent]\nfeature = [\"a\",\n\"b\"\n",
                "c.toml:2: unterminated list of feature: expected ]"},
        BadFile{"[agent]\nfeature = [\"a\" \"b\"]\n",
                "c.toml:2: expected , or ] in the list of feature"},
        BadFile{"[agent]\nfeature = [\"a\", 1]\n",
                "c.toml:2: the list of feature mixes kinds of values"},
        BadFile{"[agent]\ngpus.x = 1\n",
                "c.toml:2: dotted keys (gpus.…) are not used here"},
        BadFile{"[agent]\ngpus 1\n", "c.toml:2: expected = after gpus"},
        BadFile{"[agent]\ngpus = 1 2\n",
                "c.toml:2: expected the end of the line after the value of "
                "gpus"},
        BadFile{"[[agent]]\n",
                "c.toml:1: arrays of tables ([[...]]) are not used here"},
        BadFile{"[agent]\n\"gpus\" = 1\n",
                "c.toml:2: quoted keys are not used here: write the flag's "
                "name"},
        BadFile{"[agent]\nx = \"\\q\"\n",
                "c.toml:2: unknown escape \\q in a string"},
        BadFile{"[agent]\nx = 1__0\n",
                "c.toml:2: expected a value: a \"string\", a number, true, "
                "false or a [list]; got '1__0' (a string needs quotes)"},
        BadFile{"[agent]\nx =\n", "c.toml:2: expected a value after ="},
        BadFile{"[agent]\ngpus = 010\n",
                "c.toml:2: expected a value: a \"string\", a number, true, "
                "false or a [list]; got '010' (a string needs quotes)"}));

TEST(ConfigFileTest, AnUnreadableFileIsNamed) {
  absl::StatusOr<ConfigFile> f = ReadConfigFile("/nonexistent/t.toml");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(f.status().message(),
              HasSubstr("/nonexistent/t.toml: cannot read the configuration "
                        "file: No such file"));
}

TEST(ConfigFileTest, PlaceInConfigPutsALaterErrorOnItsLine) {
  absl::StatusOr<ConfigFile> f =
      ParseConfig("[master]\n\npack_limit = 2\n", "m.toml");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(PlaceInConfig(*f, "master", {}, "--pack-limit 2: expected a skew"),
            "m.toml:3: [master] pack_limit: --pack-limit 2: expected a skew");
  // Given on the command line: the flag's, not the file's.
  EXPECT_EQ(PlaceInConfig(*f, "master", {"pack-limit"}, "--pack-limit 2: x"),
            "--pack-limit 2: x");
  EXPECT_EQ(PlaceInConfig(*f, "master", {}, "--listen a: x"), "--listen a: x");
  EXPECT_EQ(PlaceInConfig(*f, "master", {}, "no flag"), "no flag");
}

}  // namespace
}  // namespace tiresias::cli
