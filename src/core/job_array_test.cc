#include "core/job_array.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

std::vector<int> Expand(const char* text) {
  absl::StatusOr<std::vector<int>> out = ExpandArrayIndices(text);
  EXPECT_TRUE(out.ok()) << text << ": " << out.status();
  return out.ok() ? *out : std::vector<int>{};
}

TEST(ExpandArrayIndices, SlurmForms) {
  EXPECT_EQ(Expand("0-5"), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Expand("7"), (std::vector<int>{7}));
  EXPECT_EQ(Expand("1,3,5"), (std::vector<int>{1, 3, 5}));
  // A step: 0, 4, 8, 12 (16 is past the end); the end need not be hit.
  EXPECT_EQ(Expand("0-15:4"), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(Expand("0-16:4"), (std::vector<int>{0, 4, 8, 12, 16}));
  // Mixed, and given out of order: ascending.
  EXPECT_EQ(Expand("7,1-3"), (std::vector<int>{1, 2, 3, 7}));
  EXPECT_EQ(Expand("4-4"), (std::vector<int>{4}));
  EXPECT_EQ(Expand("007"), (std::vector<int>{7}));
}

TEST(ExpandArrayIndices, TheCapsHoldExactly) {
  EXPECT_EQ(Expand("0-9999").size(), 10000u);  // kMaxArrayJobs
  EXPECT_EQ(Expand("4000000"), (std::vector<int>{4000000}));
  EXPECT_EQ(Expand("0-3999999:400000").size(), 10u);
}

TEST(ParseJobArray, LimitAfterPercent) {
  absl::StatusOr<JobArraySpec> spec = ParseJobArray("0-99%8");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->indices, "0-99");
  EXPECT_EQ(spec->max_running, 8);
  EXPECT_EQ(FormatJobArray(*spec), "0-99%8");
  spec = ParseJobArray("1-3,7");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->indices, "1-3,7");
  EXPECT_EQ(spec->max_running, 0);
  EXPECT_EQ(FormatJobArray(*spec), "1-3,7");
  // A limit above the count is harmless (Slurm accepts it too).
  EXPECT_TRUE(ParseJobArray("0-1%10000").ok());
}

TEST(ParseJobArray, EveryBadFormSaysWhatWasWrong) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "\"\": no indices"},
           Case{"%4", "\"\": no indices"},
           Case{"5-2", "\"5-2\": range ends (2) before it starts (5)"},
           Case{"a-b", "\"a-b\": range bounds must be non-negative integers, "
                       "got \"a\""},
           Case{"1-b", "got \"b\""},
           Case{"x", "\"x\": not a non-negative integer"},
           Case{"-1", "got \"\""},
           Case{"1,,2", "\"\": empty item"},
           Case{"1,", "\"\": empty item"},
           Case{" 1", "\" 1\": not a non-negative integer"},
           Case{"0-15:0", "the step must be a positive integer, got \"0\""},
           Case{"0-15:", "the step must be a positive integer, got \"\""},
           Case{"3:2", "a step (:S) needs a range"},
           Case{"0:2-4", "the step comes after the range"},
           Case{"0-99%0", "the running limit after % must be an integer from "
                          "1 to 10000, got \"0\""},
           Case{"0-99%", "got \"\""},
           Case{"0-99%x", "got \"x\""},
           Case{"0-99%2%3", "got \"2%3\""},
           Case{"0-99%10001", "got \"10001\""},
           Case{"0-10000", "more than 10000 indices; at most 10000 jobs in "
                           "one array"},
           Case{"0-9999,20000", "more than 10000 indices"},
           Case{"4000001", "index 4000001 is above the largest, 4000000"},
           Case{"0-99999999999999999999", "got \"99999999999999999999\""},
           Case{"1-3,2", "index 2 is given twice"},
       }) {
    absl::StatusOr<JobArraySpec> spec = ParseJobArray(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(spec.status().message()).find(c.says),
              std::string::npos)
        << c.text << " -> " << spec.status().message();
    EXPECT_NE(std::string(spec.status().message()).find("expected INDICES"),
              std::string::npos)
        << c.text;
  }
  // The indices text is capped.
  std::string long_text = "0";
  while (long_text.size() <= kMaxArrayIndicesBytes) long_text += ",0";
  EXPECT_FALSE(ExpandArrayIndices(long_text).ok());
}

TEST(CheckJobArray, ChecksIndicesAndLimit) {
  EXPECT_TRUE(CheckJobArray({"0-5", 2}).ok());
  EXPECT_TRUE(CheckJobArray({"0-5", 0}).ok());
  EXPECT_FALSE(CheckJobArray({"5-2", 0}).ok());
  absl::Status negative = CheckJobArray({"0-5", -1});
  EXPECT_EQ(negative.message(),
            "running limit %-1: expected 1 to 10000 (or none)");
  EXPECT_FALSE(CheckJobArray({"0-5", 10001}).ok());
}

TEST(SummarizeArray, CountMinMax) {
  ArraySummary s = SummarizeArray("0-15:4,20,2");
  EXPECT_EQ(s.count, 6);  // 0 4 8 12, 20, 2
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 20);
  s = SummarizeArray("9,3-5");
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.min, 3);
  EXPECT_EQ(s.max, 9);
  s = SummarizeArray("0-16:4");
  EXPECT_EQ(s.max, 16);
  EXPECT_EQ(s.count, 5);
}

}  // namespace
}  // namespace tiresias
