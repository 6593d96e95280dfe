#include "trace/samples_reader.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace/test_files.h"

namespace tiresias {
namespace {

using trace_testing::DataPath;
using trace_testing::ScratchDir;

TEST(ReadGpuTimeSamplesTest, ReturnsSamplesSortedAscending) {
  ScratchDir dir;
  std::string path =
      dir.Write("g.csv", "duration\r\n300\r\n0\r\n\r\n12.5\r\n121\r\n7e3");
  absl::StatusOr<std::vector<double>> samples = ReadGpuTimeSamples(path);
  ASSERT_TRUE(samples.ok()) << samples.status();
  EXPECT_THAT(*samples, testing::ElementsAre(0, 12.5, 121, 300, 7000));
}

TEST(ReadGpuTimeSamplesTest, OtherColumnsAreIgnored) {
  ScratchDir dir;
  std::string path = dir.Write("g.csv", "job,duration\na,5\nb,3\n");
  absl::StatusOr<std::vector<double>> samples = ReadGpuTimeSamples(path);
  ASSERT_TRUE(samples.ok()) << samples.status();
  EXPECT_THAT(*samples, testing::ElementsAre(3, 5));
}

TEST(ReadGpuTimeSamplesTest, BadInputNamesThePlace) {
  ScratchDir dir;
  struct Case {
    const char* contents;
    const char* expected;  // after "path"
  };
  const Case kCases[] = {
      {"", ": empty file, expected a header line"},
      {"duration\n\n", ": no samples after the header"},
      {"gpu_time\n5\n", ":1: GPU-time samples header lacks column 'duration'"},
      {"duration\n5\n-3\n",
       ":3: column 'duration': expected a non-negative number of GPU-seconds, "
       "got \"-3\""},
      {"duration\n5\n\nabc\n",
       ":4: column 'duration': expected a non-negative number of GPU-seconds, "
       "got \"abc\""},
      {"duration\nnan\n",
       ":2: column 'duration': expected a non-negative number of GPU-seconds, "
       "got \"nan\""},
      {"duration\n5,6\n", ":2: expected 1 columns, got 2"},
  };
  int i = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.contents);
    std::string path = dir.Write(absl::StrCat("bad", i++, ".csv"), c.contents);
    absl::StatusOr<std::vector<double>> samples = ReadGpuTimeSamples(path);
    ASSERT_FALSE(samples.ok());
    EXPECT_EQ(samples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(samples.status().message(), absl::StrCat(path, c.expected));
  }
  std::string missing = dir.Missing("none.csv");
  absl::StatusOr<std::vector<double>> samples = ReadGpuTimeSamples(missing);
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(samples.status().message(),
            absl::StrCat(missing, ": cannot open: No such file or directory"));
}

TEST(ReadGpuTimeSamplesTest, ShippedYarnSamples) {
  absl::StatusOr<std::vector<double>> samples =
      ReadGpuTimeSamples(DataPath("yarn-gput1000.csv"));
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 1001u);
  EXPECT_TRUE(std::is_sorted(samples->begin(), samples->end()));
  EXPECT_EQ(samples->front(), 121);
  EXPECT_EQ(samples->back(), 53294624);
  EXPECT_EQ(std::accumulate(samples->begin(), samples->end(), 0.0),
            150989997.0);
}

}  // namespace
}  // namespace tiresias
