#include "profiler/profile_records.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::profiler {
namespace {

using ::testing::ElementsAre;

TEST(ParseRecordsTest, ReadsEveryKindOfLine) {
  const Records r = ParseRecords(
      "P 42 1 1000 /usr/bin/python3 train%20me.py -\n"
      "C 42 1 tcp 127.0.0.1:5000 127.0.0.1:6000\n"
      "M 42 1 1500 4096\n"
      "C 42 2 unix - @abstract%00name\n"
      "M 42 2 1600 8\n"
      "E 42 2000 messages\n");
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].pid, 42);
  EXPECT_EQ(r.processes[0].ppid, 1);
  EXPECT_EQ(r.processes[0].start_ns, 1000u);
  // "-" is an empty field.
  EXPECT_THAT(r.processes[0].argv,
              ElementsAre("/usr/bin/python3", "train me.py", ""));
  EXPECT_EQ(r.processes[0].stop_reason, "messages");
  ASSERT_EQ(r.connections.size(), 2u);
  EXPECT_EQ(r.connections[0].kind, "tcp");
  EXPECT_EQ(r.connections[0].local, "127.0.0.1:5000");
  EXPECT_EQ(r.connections[0].peer, "127.0.0.1:6000");
  EXPECT_EQ(r.connections[1].local, "");
  EXPECT_EQ(r.connections[1].peer, std::string("@abstract\0name", 14));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].process, 0u);
  EXPECT_EQ(r.messages[0].conn, 1u);
  EXPECT_EQ(r.messages[0].t_ns, 1500u);
  EXPECT_EQ(r.messages[0].bytes, 4096u);
  EXPECT_EQ(r.malformed_lines, 0);
}

TEST(ParseRecordsTest, CountsLinesThatDoNotParse) {
  const Records r = ParseRecords(
      "P 1 0 5 a\n"
      "M 1 1 10 x\n"  // bytes not a number
      "garbage\n"
      "M 1 1 10\n"  // a line cut short by a kill
      "M 1 1 10 20\n"
      "M 1 1 1");  // the last line, cut short, without its newline
  EXPECT_EQ(r.malformed_lines, 4);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].bytes, 20u);
}

// A pid that execs another program writes a new P line; its connection
// numbers start again, and must not be mixed with the old image's.
TEST(ParseRecordsTest, AnExecStartsANewProcessImage) {
  const Records r = ParseRecords(
      "P 7 1 100 ./old\n"
      "C 7 1 unix - -\n"
      "M 7 1 110 99\n"
      "P 8 7 120 ./child\n"
      "M 8 1 125 5\n"
      "P 7 1 130 ./new unix 2\n"
      "C 7 1 unix - -\n"
      "M 7 1 140 100\n");
  ASSERT_EQ(r.processes.size(), 3u);
  EXPECT_THAT(r.processes[2].argv, ElementsAre("./new", "unix", "2"));
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].process, 0u);
  EXPECT_EQ(r.messages[1].process, 1u);
  EXPECT_EQ(r.messages[2].process, 2u);
  EXPECT_EQ(r.connections[1].process, 2u);
}

TEST(ParseRecordsTest, LinesWithoutAProcessLineGetOne) {
  const Records r = ParseRecords("M 9 3 10 20\nE 9 30 seconds\n");
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].pid, 9);
  EXPECT_TRUE(r.processes[0].argv.empty());
  EXPECT_EQ(r.processes[0].stop_reason, "seconds");
}

TEST(UnescapeTest, UndoesPercentEscapes) {
  EXPECT_EQ(Unescape("a%20b%25c"), "a b%c");
  EXPECT_EQ(Unescape("%2D"), "-");
  EXPECT_EQ(Unescape("-"), "");
  EXPECT_EQ(Unescape("50%"), "50%");  // not an escape: kept
}

TEST(ReadRecordsFileTest, AMissingFileIsNotFound) {
  const auto r = ReadRecordsFile("/nonexistent/tiresias-profile");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tiresias::profiler
