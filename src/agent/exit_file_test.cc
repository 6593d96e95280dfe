#include "agent/exit_file.h"

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

}  // namespace
}  // namespace tiresias
