#include "cli/shell_help.h"

#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

namespace fs = std::filesystem;

// A small tree with what the generator must handle: nesting, a required
// option, a fixed set of values, a flag, a positional, a hidden command.
class ShellHelpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    app_.description("A test tool.\n\nIt has a second paragraph.");
    CLI::App* submit = app_.add_subcommand("submit", "Submit a job.");
    submit->add_option("-g,--gpus", gpus_, "GPUs it needs")->required();
    submit->add_option("--policy", policy_, "The policy")
        ->check(CLI::IsMember({"fifo", "las"}));
    submit->add_flag("--wait", wait_, "Wait for it");
    submit->add_option("command", command_, "The command");
    CLI::App* admin = app_.add_subcommand("admin", "Administer.");
    CLI::App* token = admin->add_subcommand("token", "Tokens.");
    token->add_subcommand("create", "Create one.");
    token->add_subcommand("list", "List them.");
    app_.add_subcommand("secret", "Hidden.")->group("");
    CLI::App* cancel = app_.add_subcommand("cancel", "Cancel jobs.");
    cancel->add_option("ids", ids_, "Job ids")->type_name(kJobType);
    cancel->add_option("--nodelist,-w", nodes_, "Nodes")->type_name(kNodeType);
    dir_ = fs::temp_directory_path() /
           absl::StrCat("shell_help_test_", ::getpid());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "completion.bash") << BashCompletion(app_);
    std::ofstream(dir_ / "file-one.txt") << "x";
    // Stands in for the binary the completion asks (`__complete KIND`).
    std::ofstream(dir_ / "tool")
        << "#!/bin/sh\n"
           "[ \"$1\" = __complete ] || exit 1\n"
           "case $2 in jobs) printf '12\\n13\\n7\\n' ;;\n"
           "nodes) printf 'gpu1\\ngpu2\\ngx<({touch,PWNED})\\n' ;; "
           "esac\n";
    fs::permissions(dir_ / "tool", fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // What real bash completes for `line`, the cursor at its end: the words
  // (split at blanks, and at '=' as bash's COMP_WORDBREAKS does), the last
  // one, possibly empty, under the cursor.
  std::vector<std::string> Complete(const std::string& line) {
    std::vector<std::string> words;
    std::string word;
    for (char c : line) {
      if (c == ' ') {
        if (!word.empty()) words.push_back(word);
        word.clear();
      } else if (c == '=') {
        words.push_back(word);
        words.push_back("=");
        word.clear();
      } else {
        word += c;
      }
    }
    if (!(word.empty() && !words.empty() && words.back() == "=")) {
      words.push_back(word);
    }
    std::string array;
    for (const std::string& w : words) absl::StrAppend(&array, " '", w, "'");
    const std::string script = absl::StrCat(
        "cd '", dir_.string(), "' && source completion.bash && COMP_WORDS=(",
        array, ") && COMP_CWORD=", words.size() - 1,
        " && _tiresias && printf '%s\\n' \"${COMPREPLY[@]}\"");
    const std::string command = absl::StrCat(
        "bash --norc --noprofile -c \"$(cat <<'EOF'\n", script, "\nEOF\n)\"");
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    EXPECT_EQ(pclose(pipe), 0) << line;
    std::vector<std::string> result =
        absl::StrSplit(out, '\n', absl::SkipEmpty());
    std::sort(result.begin(), result.end());
    return result;
  }

  CLI::App app_{"tool"};
  int gpus_ = 0;
  std::string policy_;
  bool wait_ = false;
  std::vector<std::string> command_;
  std::vector<std::string> ids_;
  std::vector<std::string> nodes_;
  fs::path dir_;
};

TEST_F(ShellHelpTest, CompletesCommandsAtEveryDepthButNotHiddenOnes) {
  EXPECT_THAT(Complete("tiresias "), ElementsAre("admin", "cancel", "submit"));
  EXPECT_THAT(Complete("tiresias su"), ElementsAre("submit"));
  EXPECT_THAT(Complete("tiresias admin token "),
              ElementsAre("create", "list"));
  EXPECT_THAT(Complete("tiresias admin token l"), ElementsAre("list"));
  EXPECT_THAT(Complete("tiresias sec"), ElementsAre());
}

TEST_F(ShellHelpTest, CompletesTheOptionsOfTheCommandReached) {
  EXPECT_THAT(Complete("tiresias submit --"),
              UnorderedElementsAre("--gpus", "--policy", "--wait", "--help"));
  EXPECT_THAT(Complete("tiresias submit --g"), ElementsAre("--gpus"));
  // The value of --gpus is skipped, so --w is an option of submit again.
  EXPECT_THAT(Complete("tiresias submit --gpus 2 --w"), ElementsAre("--wait"));
  EXPECT_THAT(Complete("tiresias admin --"), ElementsAre("--help"));
  // --help takes no value, so the next word is a command again.
  EXPECT_THAT(Complete("tiresias admin --help to"), ElementsAre("token"));
}

TEST_F(ShellHelpTest, CompletesAFixedSetOfValuesWithOrWithoutEquals) {
  EXPECT_THAT(Complete("tiresias submit --policy "), ElementsAre("fifo", "las"));
  EXPECT_THAT(Complete("tiresias submit --policy l"), ElementsAre("las"));
  EXPECT_THAT(Complete("tiresias submit --policy="), ElementsAre("fifo", "las"));
  EXPECT_THAT(Complete("tiresias submit --policy=f"), ElementsAre("fifo"));
  // A free value (--gpus) and a positional complete file names.
  EXPECT_THAT(Complete("tiresias submit --gpus fi"), ElementsAre("file-one.txt"));
  EXPECT_THAT(Complete("tiresias submit --wait fi"), ElementsAre("file-one.txt"));
}

// Job ids and node names come from the binary being completed, not files.
TEST_F(ShellHelpTest, CompletesJobIdsAndNodeNamesFromTheBinary) {
  EXPECT_THAT(Complete("./tool cancel "), ElementsAre("12", "13", "7"));
  EXPECT_THAT(Complete("./tool cancel 1"), ElementsAre("12", "13"));
  EXPECT_THAT(Complete("./tool cancel 12 "), ElementsAre("12", "13", "7"));
  // What the master says is offered as it is, never expanded: the node
  // named "gx<({touch,PWNED})" runs nothing.
  EXPECT_THAT(Complete("./tool cancel --nodelist g"),
              ElementsAre("gpu1", "gpu2", "gx<({touch,PWNED})"));
  EXPECT_FALSE(fs::exists(dir_ / "PWNED"));
  EXPECT_THAT(Complete("./tool cancel -w=gpu2"), ElementsAre("gpu2"));
  EXPECT_THAT(Complete("./tool cancel fi"), ElementsAre());
  // A binary that answers nothing (a master down) completes nothing.
  EXPECT_THAT(Complete("./file-one.txt cancel "), ElementsAre());
}

TEST_F(ShellHelpTest, AfterADoubleDashCompletesTheJobsCommandThenFiles) {
  const std::vector<std::string> commands =
      Complete("tiresias submit --gpus 1 -- bas");
  EXPECT_THAT(commands, testing::Contains("bash"));
  EXPECT_THAT(Complete("tiresias submit --gpus 1 -- cat fi"),
              ElementsAre("file-one.txt"));
  // A subcommand's name after "--" is an argument of the job, not ours.
  EXPECT_THAT(Complete("tiresias submit -- admin fi"),
              ElementsAre("file-one.txt"));
}

TEST_F(ShellHelpTest, ManPagesOnePerVisibleCommandWithEveryOption) {
  const std::vector<ManPage> pages = ManPages(app_, "9.9");
  std::vector<std::string> files;
  for (const ManPage& page : pages) files.push_back(page.file);
  EXPECT_THAT(
      files,
      ElementsAre("tiresias.1", "tiresias-submit.1", "tiresias-admin.1",
                  "tiresias-admin-token.1", "tiresias-admin-token-create.1",
                  "tiresias-admin-token-list.1", "tiresias-cancel.1"));
  const std::string& top = pages[0].text;
  EXPECT_THAT(top, HasSubstr(".TH TIRESIAS 1 \"\" \"tiresias 9.9\""));
  EXPECT_THAT(top, HasSubstr("It has a second paragraph."));
  EXPECT_THAT(top, HasSubstr(".SH EXIT STATUS"));
  EXPECT_THAT(top, HasSubstr("TIRESIAS_MASTER"));
  EXPECT_THAT(top, Not(HasSubstr("secret")));
  const std::string& submit = pages[1].text;
  EXPECT_THAT(submit, HasSubstr("\\fB\\-g\\fR, \\fB\\-\\-gpus\\fR \\fIINT\\fR"));
  EXPECT_THAT(submit, HasSubstr("GPUs it needs Required."));
  EXPECT_THAT(submit, HasSubstr("TEXT:{fifo,las}"));
  EXPECT_THAT(submit, HasSubstr("\\fB\\-\\-wait\\fR\nWait for it"));
  EXPECT_THAT(submit, HasSubstr("[\\fIcommand\\fR...]"));
  EXPECT_THAT(pages[3].text, HasSubstr("\\fBtiresias\\-admin\\fR(1)"));
}

TEST_F(ShellHelpTest, ManPagesRenderWithoutGroffWarnings) {
  if (std::system("command -v groff >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no groff here";
  }
  for (const ManPage& page : ManPages(app_, "1.0")) {
    std::ofstream(dir_ / page.file) << page.text;
    const std::string command =
        absl::StrCat("groff -man -Tutf8 -ww -z '", (dir_ / page.file).string(),
                     "' 2>&1");
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    EXPECT_EQ(pclose(pipe), 0) << page.file;
    EXPECT_EQ(out, "") << page.file;
  }
}

TEST_F(ShellHelpTest, RoffSpecialsInDescriptionsAreEscaped) {
  CLI::App app{"Tool."};
  std::string value;
  app.add_option("--pattern", value, "A backslash \\d and\n.a leading dot");
  const std::string text = ManPages(app, "1")[0].text;
  EXPECT_THAT(text, HasSubstr("A backslash \\ed and\n\\&.a leading dot"));
}

}  // namespace
}  // namespace tiresias::cli
