// End-to-end tests of `tiresias completion` and `tiresias man` on the real
// command tree: the completion script, loaded in real bash, completes what
// the binary accepts, and the pages, rendered by groff, document every
// option each command's --help lists.
#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli_test {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The entries of one section of CLI11's --help ("Options:",
// "Subcommands:"): the names at the start of its lines indented by two
// spaces (deeper lines continue a description), "-h,--help" split at ','.
std::vector<std::string> HelpEntries(const std::string& help,
                                     const std::string& section) {
  std::vector<std::string> entries;
  bool inside = false;
  for (const std::string& line : Lines(help)) {
    if (!line.empty() && line[0] != ' ') inside = line == section;
    if (!inside || line.size() < 3 || line.rfind("  ", 0) != 0 ||
        line[2] == ' ') {
      continue;
    }
    const std::string first = Words(line)[0];
    for (absl::string_view name : absl::StrSplit(first, ',')) {
      entries.emplace_back(name);
    }
  }
  return entries;
}

class ShellHelpCliTest : public CliTest {
 protected:
  // What bash completes after `words` (the last one under the cursor),
  // with the script `tiresias completion bash` printed.
  std::vector<std::string> Complete(const std::vector<std::string>& words) {
    if (script_.empty()) {
      ProcessResult run = Tiresias({"completion", "bash"});
      EXPECT_EQ(run.exit_code, 0) << Describe(run);
      std::ofstream(dir_ / "tiresias.bash") << run.out;
      script_ = (dir_ / "tiresias.bash").string();
    }
    std::string array;
    for (const std::string& w : words) absl::StrAppend(&array, " '", w, "'");
    ProcessResult run = RunProcess(
        {"/bin/bash", "--norc", "--noprofile", "-c",
         absl::StrCat("source '", script_, "' && COMP_WORDS=(", array,
                      ") && COMP_CWORD=", words.size() - 1,
                      " && _tiresias && printf '%s\\n' \"${COMPREPLY[@]}\"")},
        {.cwd = dir_});
    EXPECT_EQ(run.exit_code, 0) << Describe(run);
    std::vector<std::string> lines = Lines(run.out);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  std::string script_;
};

TEST_F(ShellHelpCliTest, CompletionKnowsTheRealCommands) {
  EXPECT_THAT(Complete({"tiresias", "sim"}), ElementsAre("simulate"));
  EXPECT_THAT(Complete({"tiresias", "admin", "token", ""}),
              ElementsAre("create", "list", "revoke"));
  EXPECT_THAT(Complete({"tiresias", "simulate", "--policy", "tiresias-"}),
              ElementsAre("tiresias-g", "tiresias-l"));
  EXPECT_THAT(Complete({"tiresias", "master", "--placement", "pro"}),
              ElementsAre("profiled"));
  EXPECT_THAT(Complete({"tiresias", "submit", "--gp"}),
              ElementsAre("--gpu-type", "--gpus", "--gpus-per-node"));
  EXPECT_THAT(Complete({"tiresias", "submit", "--gpus", "1", "--", "bas"}),
              Contains("bash"));
  ProcessResult zsh = Tiresias({"completion", "zsh"});
  EXPECT_EQ(zsh.exit_code, 0) << Describe(zsh);
  EXPECT_THAT(zsh.out, HasSubstr("bashcompinit"));
  EXPECT_THAT(zsh.out, HasSubstr("complete -o filenames -F _tiresias tiresias"));
}

TEST_F(ShellHelpCliTest, EveryPageListsEveryOptionOfItsCommandsHelp) {
  ProcessResult run = Tiresias({"man", "--dir", "pages"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir_ / "pages/man1")) {
    files.insert(entry.path().filename().string());
  }
  // Every command `tiresias --help` lists has its page.
  for (const std::string& name : HelpEntries(Tiresias({"--help"}).out,
                                             "Subcommands:")) {
    EXPECT_TRUE(files.count("tiresias-" + name + ".1")) << name;
  }
  ASSERT_GE(files.size(), 30u);
  for (const std::string& file : files) {
    const std::string page = ReadFile(dir_ / "pages/man1" / file);
    // "tiresias-admin-token-create.1" -> admin token create --help
    std::vector<std::string> args;
    std::string name = file.substr(0, file.size() - 2);
    for (const std::string& word : std::vector<std::string>(
             absl::StrSplit(name, '-'))) {
      args.push_back(word);
    }
    // Command names with a dash inside ("agent-cert", "port-forward")
    // split too: rejoin them.
    const std::set<std::pair<std::string, std::string>> dashed = {
        {"agent", "cert"},
        {"master", "cert"},
        {"user", "cert"},
        {"port", "forward"}};
    std::vector<std::string> command;
    for (size_t i = 1; i < args.size(); ++i) {
      if (!command.empty() && dashed.contains({command.back(), args[i]})) {
        command.back() += "-" + args[i];
      } else {
        command.push_back(args[i]);
      }
    }
    command.push_back("--help");
    ProcessResult command_help = Tiresias(command);
    ASSERT_EQ(command_help.exit_code, 0) << file << Describe(command_help);
    for (const std::string& option :
         HelpEntries(command_help.out, "Options:")) {
      if (option.rfind("--", 0) != 0) continue;
      EXPECT_THAT(page, HasSubstr("\\fB" + absl::StrReplaceAll(
                                               option, {{"-", "\\-"}}) +
                                  "\\fR"))
          << file << " lacks " << option;
    }
    ProcessResult groff = RunProcess(
        {"/bin/sh", "-c",
         "command -v groff >/dev/null || exit 0; groff -man -Tutf8 -ww -z '" +
             (dir_ / "pages/man1" / file).string() + "' 2>&1"});
    EXPECT_EQ(groff.exit_code, 0) << file;
    EXPECT_EQ(groff.out, "") << file;
  }
}

// The build wrote the completions and pages into build/share (for
// `cmake --install`): they are what the binary prints now.
TEST_F(ShellHelpCliTest, TheBuildWroteTheCompletionsAndPages) {
  const fs::path share = fs::path(TIRESIAS_SHARE_DIR);
  for (const std::string shell : {"bash", "zsh"}) {
    ProcessResult run = Tiresias({"completion", shell});
    ASSERT_EQ(run.exit_code, 0) << Describe(run);
    const fs::path file =
        shell == "bash" ? share / "bash-completion/completions/tiresias"
                        : share / "zsh/site-functions/_tiresias";
    EXPECT_EQ(ReadFile(file), run.out) << file;
  }
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{}, {"submit"}, {"node", "drain"}}) {
    std::vector<std::string> args = {"man"};
    args.insert(args.end(), words.begin(), words.end());
    ProcessResult run = Tiresias(args);
    ASSERT_EQ(run.exit_code, 0) << Describe(run);
    std::string name = "tiresias";
    for (const std::string& w : words) absl::StrAppend(&name, "-", w);
    EXPECT_EQ(ReadFile(share / "man/man1" / (name + ".1")), run.out) << name;
  }
}

TEST_F(ShellHelpCliTest, MistakesGetOneLineAndExitCode2) {
  ProcessResult one = Tiresias({"man", "submti"});
  EXPECT_EQ(one.exit_code, 2) << Describe(one);
  EXPECT_THAT(one.err, HasSubstr("no command \"submti\""));
  ProcessResult both = Tiresias({"man", "submit", "--dir", "x"});
  EXPECT_EQ(both.exit_code, 2) << Describe(both);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  ProcessResult fish = Tiresias({"completion", "fish"});
  EXPECT_EQ(fish.exit_code, 2) << Describe(fish);
  ProcessResult page = Tiresias({"man", "admin", "token"});
  EXPECT_EQ(page.exit_code, 0) << Describe(page);
  EXPECT_THAT(page.out, HasSubstr(".TH TIRESIAS-ADMIN-TOKEN 1"));
}

}  // namespace
}  // namespace tiresias::cli_test
