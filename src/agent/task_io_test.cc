// An interactive task's session (task_io.h) with the real launcher: real
// pipes and a real pseudo-terminal, /bin/sh tasks, real signals.
#include "agent/task_io.h"

#include <signal.h>

#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/agent_testing.h"
#include "agent/launcher.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// What an attachment received until its end.
struct Received {
  std::string output;
  std::string error_output;
  std::string notices;
  std::optional<v1::IoEnd> end;
};

class TaskIoTest : public ::testing::Test {
 protected:
  // Starts `script` under a session (pty or pipes) and returns it.
  std::shared_ptr<TaskIoSession> Start(const std::string& script, bool pty,
                                       milliseconds grace = milliseconds(0)) {
    auto session = TaskIoSession::Create(pty, std::nullopt, std::nullopt, grace,
                                         "job 1 attempt 1 rank 0");
    EXPECT_TRUE(session.ok()) << session.status();
    TaskSpec spec = agent_testing::SampleTaskSpec();
    spec.argv = {"/bin/sh", "-c", script};
    spec.checkpoint_dir = dir_.File("ckpt");
    spec.log_path = dir_.File("task.log");
    spec.working_dir = dir_.path().string();
    for (int i = 0; i < 3; ++i) spec.stdio_fds[i] = (*session)->child_fds()[i];
    spec.controlling_tty = pty;
    absl::StatusOr<TaskHandle> handle = launcher_.Start(spec);
    EXPECT_TRUE(handle.ok()) << handle.status();
    handle_ = *handle;
    (*session)->Started(handle_.pid, spec.log_path);
    return *session;
  }

  // Reads `a` until `until` is in the output (or the end), at most 10 s.
  static void ReadUntil(TaskIoSession::Attachment& a, Received* got,
                        const std::string& until = "") {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!until.empty() && got->output.find(until) != std::string::npos) {
        return;
      }
      v1::IoResponse r;
      const auto next = a.Pop(&r, milliseconds(100));
      if (next == TaskIoSession::Attachment::Next::kDone) return;
      if (next == TaskIoSession::Attachment::Next::kTimeout) continue;
      got->output += r.output();
      got->error_output += r.error_output();
      got->notices += r.notice();
      if (r.has_end()) {
        got->end = r.end();
        return;
      }
    }
  }

  // Waits for the task's exit and tells the session, as the agent does.
  TaskExit End(TaskIoSession& session) {
    TaskExit e = agent_testing::WaitExit(launcher_, handle_);
    session.Ended(e.exit_code, e.signal);
    return e;
  }

  TestDir dir_;
  PosixLauncher launcher_{agent_testing::RootTasksAllowed()};
  TaskHandle handle_;
};

TEST_F(TaskIoTest, PipesCarryInputOutputErrorsAndTheEnd) {
  auto session =
      Start("read line; echo got:$line; echo oops >&2; exit 3", false);
  auto a = session->Attach(/*replay=*/true);
  ASSERT_TRUE(session->Input("hello\n").ok());
  Received got;
  ReadUntil(*a, &got, "got:hello");
  const TaskExit e = End(*session);
  EXPECT_EQ(e.exit_code, 3);
  ReadUntil(*a, &got);
  EXPECT_THAT(got.output, HasSubstr("got:hello\n"));
  EXPECT_EQ(got.error_output, "oops\n");
  ASSERT_TRUE(got.end.has_value());
  EXPECT_TRUE(got.end->task_ended());
  EXPECT_EQ(got.end->exit_code(), 3);
  // The log has both, for `tiresias logs`.
  EXPECT_THAT(ReadFile(dir_.File("task.log")), HasSubstr("got:hello"));
  EXPECT_THAT(ReadFile(dir_.File("task.log")), HasSubstr("oops"));
  // A terminal's size needs a terminal.
  EXPECT_FALSE(session->Resize(40, 100).ok());
  a->Detach();
}

TEST_F(TaskIoTest, EndOfInputReachesAPipedTask) {
  auto session = Start("cat; echo done", false);
  auto a = session->Attach(true);
  ASSERT_TRUE(session->Input("one\ntwo\n").ok());
  ASSERT_TRUE(session->CloseInput().ok());
  Received got;
  ReadUntil(*a, &got, "done");
  EXPECT_EQ(got.output, "one\ntwo\ndone\n");
  EXPECT_EQ(End(*session).exit_code, 0);
  a->Detach();
}

TEST_F(TaskIoTest, ATerminalEchoesFollowsItsSizeAndTakesCtrlC) {
  auto session = Start(
      "trap 'echo int' INT; tty >/dev/null && echo is-a-tty; read size; "
      "stty size; sleep 30; echo after-sleep; read x; exit 7",
      true);
  auto a = session->Attach(true);
  Received got;
  ReadUntil(*a, &got, "is-a-tty");
  ASSERT_TRUE(session->Resize(50, 132).ok());
  ASSERT_TRUE(session->Input("go\n").ok());
  ReadUntil(*a, &got, "50 132");
  EXPECT_THAT(got.output, HasSubstr("go\r\n"));  // the terminal's echo
  // Ctrl-C stops the foreground sleep, not the shell (the terminal's
  // foreground group is the task's: the shim ignores SIGINT).
  // Once the sleep runs (else the ^C could reach the shell first).
  ASSERT_TRUE(agent_testing::WaitUntil([&] {
    return system(absl::StrCat("pgrep -x -s ", handle_.pid, " sleep >/dev/null")
                      .c_str()) == 0;
  }));
  ASSERT_TRUE(session->Input("\x03").ok());
  ReadUntil(*a, &got, "after-sleep");
  EXPECT_THAT(got.output, HasSubstr("after-sleep"));
  ASSERT_TRUE(session->Input("bye\n").ok());
  const TaskExit e = End(*session);
  ReadUntil(*a, &got);
  ASSERT_TRUE(got.end.has_value());
  EXPECT_EQ(e.exit_code, 7);
  EXPECT_EQ(got.end->exit_code(), 7);
  a->Detach();
}

TEST_F(TaskIoTest, ALateAttachmentReplaysTheOutputSoFar) {
  auto session = Start("echo early; read x; echo late", false);
  agent_testing::WaitUntil([&] {
    return ReadFile(dir_.File("task.log")).find("early") != std::string::npos;
  });
  auto replayed = session->Attach(/*replay=*/true);
  auto fresh = session->Attach(/*replay=*/false);
  ASSERT_TRUE(session->Input("\n").ok());
  Received a, b;
  ReadUntil(*replayed, &a, "late");
  ReadUntil(*fresh, &b, "late");
  EXPECT_EQ(a.output, "early\nlate\n");
  EXPECT_EQ(b.output, "late\n");
  End(*session);
  // After the end, an attachment gets what there was and the end at once.
  auto after = session->Attach(true);
  Received c;
  ReadUntil(*after, &c);
  EXPECT_EQ(c.output, "early\nlate\n");
  EXPECT_TRUE(c.end.has_value());
  replayed->Detach();
  fresh->Detach();
}

TEST_F(TaskIoTest, NobodyAttachedForTheGraceHangsTheTaskUp) {
  auto session = Start("trap 'echo hup >&2; exit 9' HUP; sleep 30 & wait",
                       false, milliseconds(300));
  auto a = session->Attach(true);
  std::this_thread::sleep_for(milliseconds(600));  // attached: not hung up
  EXPECT_FALSE(launcher_.Poll(handle_).value().has_value());
  a->Detach();
  const TaskExit e = End(*session);
  EXPECT_EQ(e.exit_code, 9);
  EXPECT_THAT(ReadFile(dir_.File("task.log")),
              HasSubstr("nobody attached for 0.3 s: hanging up"));
}

TEST_F(TaskIoTest, InputATaskDoesNotReadIsDroppedOnceTheCallerLeaves) {
  auto session = Start("sleep 30", false);
  const auto left = std::chrono::steady_clock::now() + milliseconds(300);
  // 1 MiB: far more than a pipe holds.
  const absl::Status s = session->Input(std::string(1 << 20, 'x'), [&] {
    return std::chrono::steady_clock::now() >= left;
  });
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(std::chrono::steady_clock::now() - left, milliseconds(1000));
  ASSERT_TRUE(session->Signal(SIGTERM).ok());
  End(*session);
}

TEST_F(TaskIoTest, NoticesReachAttachmentsOnly) {
  auto session = Start("read x", false);
  auto a = session->Attach(false);
  session->Notice("job 1 is being stopped (preempt)");
  ASSERT_TRUE(session->CloseInput().ok());
  End(*session);
  Received got;
  ReadUntil(*a, &got);
  EXPECT_EQ(got.notices, "job 1 is being stopped (preempt)");
  EXPECT_THAT(ReadFile(dir_.File("task.log")),
              ::testing::Not(HasSubstr("preempt")));
  EXPECT_FALSE(session->Signal(SIGKILL).ok());  // not one of IoRequest's
}

}  // namespace
}  // namespace tiresias
