#include "agent/exit_file.h"

#include <unistd.h>

#include <fstream>

#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using ::testing::HasSubstr;

TEST(ExitFileTest, ParsesExitAndSignal) {
  absl::StatusOr<RecordedExit> exit =
      ParseExitFile("exit 3 1500000000250000000\n");
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->signal.has_value());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(
                exit->end_time.time_since_epoch())
                .count(),
            1500000000250);

  exit = ParseExitFile("signal 9 7\n");
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, 9);
  EXPECT_FALSE(exit->exit_code.has_value());
}

TEST(ExitFileTest, RejectsAnythingElse) {
  for (const char* bad : {"", "exit", "exit 3", "exit x 5", "quit 3 5",
                          "exit -1 5", "exit 3 5 6", "signal 9 -4"}) {
    EXPECT_EQ(ParseExitFile(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ExitFileTest, MissingFileIsNoExitAndCorruptOneNamesTheFile) {
  agent_testing::TestDir dir;
  absl::StatusOr<std::optional<RecordedExit>> none =
      ReadExitFile(dir.File("absent.exit"));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());

  std::ofstream(dir.File("bad.exit")) << "garbage\n";
  absl::StatusOr<std::optional<RecordedExit>> bad =
      ReadExitFile(dir.File("bad.exit"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr(dir.File("bad.exit")));
}

// Issue 21: whatever a task can write that the root agent reads is read
// with a bound. The shim writes one short line; a file of 200 MB (sparse,
// so the test costs nothing) is refused without being read.
TEST(ExitFileTest, OversizedFileIsRefusedUnread) {
  agent_testing::TestDir dir;
  const std::string path = dir.File("big.exit");
  agent_testing::MakeSparseFile(path, 200 << 20);
  agent_testing::ResetPeakRss();
  const long before_kib = agent_testing::PeakRssKiB();
  absl::StatusOr<std::optional<RecordedExit>> read = ReadExitFile(path);
  const long grown_kib = agent_testing::PeakRssKiB() - before_kib;
  EXPECT_FALSE(read.ok());
  EXPECT_THAT(agent_testing::MessageOf(read.status()), HasSubstr(path));
  EXPECT_THAT(agent_testing::MessageOf(read.status()),
              HasSubstr("209715200 bytes"));
  EXPECT_LT(grown_kib, 4 * 1024) << "the read allocated the file";
}

// A symbolic link in place of the exit file is not followed: the exit it
// points to is not taken for the task's.
TEST(ExitFileTest, SymlinkInPlaceOfTheFileIsRefused) {
  agent_testing::TestDir dir;
  std::ofstream(dir.File("elsewhere")) << "exit 0 1500000000000000000\n";
  const std::string path = dir.File("task.exit");
  ASSERT_EQ(symlink(dir.File("elsewhere").c_str(), path.c_str()), 0);
  absl::StatusOr<std::optional<RecordedExit>> read = ReadExitFile(path);
  EXPECT_FALSE(read.ok()) << "followed the link";
  EXPECT_THAT(agent_testing::MessageOf(read.status()), HasSubstr(path));
  EXPECT_THAT(agent_testing::MessageOf(read.status()),
              HasSubstr("symbolic link"));
}

}  // namespace
}  // namespace tiresias
