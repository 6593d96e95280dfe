#include "cli/job_ref.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias::cli {
namespace {

TEST(ParseJobRefTest, AnIdOrArrayIdUnderscoreIndex) {
  absl::StatusOr<JobRef> ref = ParseJobRef("15");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->id, 15);
  EXPECT_EQ(ref->array_id, 0);
  ref = ParseJobRef("12_3");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->id, 0);
  EXPECT_EQ(ref->array_id, 12);
  EXPECT_EQ(ref->index, 3);
  ref = ParseJobRef("7_0");  // index 0 is an index
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->index, 0);
}

TEST(ParseJobRefTest, AnythingElseIsNamedWithTheFormsExpected) {
  for (const char* bad : {"", "0", "-3", "+5", " 5", "x", "12_", "_3",
                          "0_3", "12_x", "12_3_4", "12_-1", "1e3",
                          "99999999999999999999"}) {
    absl::StatusOr<JobRef> ref = ParseJobRef(bad);
    ASSERT_FALSE(ref.ok()) << '"' << bad << '"';
    EXPECT_EQ(ref.status().message(),
              std::string("JOB ") + bad +
                  ": expected a job id (e.g. 15) or ARRAYID_INDEX, a job of "
                  "an array as `tiresias jobs` shows it (e.g. 12_3)");
  }
}

}  // namespace
}  // namespace tiresias::cli
