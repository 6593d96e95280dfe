#include "core/memory_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias {
namespace {

TEST(MemorySizeTest, SlurmsUnitsMebibytesWithout) {
  EXPECT_EQ(*ParseMemorySize("--mem", "16G"), int64_t{16} << 30);
  EXPECT_EQ(*ParseMemorySize("--mem", "512m"), int64_t{512} << 20);
  EXPECT_EQ(*ParseMemorySize("--mem", "2048"), int64_t{2048} << 20);
  EXPECT_EQ(*ParseMemorySize("--mem", "4K"), 4096);
  EXPECT_EQ(*ParseMemorySize("--mem", "1T"), int64_t{1} << 40);
  for (const char* bad : {"", "0", "G", "-1G", "1.5G", "16GB", "1e3"}) {
    absl::StatusOr<int64_t> size = ParseMemorySize("--mem", bad);
    EXPECT_FALSE(size.ok()) << bad;
    EXPECT_THAT(size.status().message(), ::testing::HasSubstr("--mem: "));
  }
  EXPECT_FALSE(ParseMemorySize("--mem", "99999999999T").ok());
}

TEST(MemorySizeTest, TextIsGibibytesWhenWhole) {
  EXPECT_EQ(MemoryText(32768), "32G");
  EXPECT_EQ(MemoryText(1536), "1536M");
  EXPECT_EQ(MemoryText(0), "0M");
}

TEST(MemorySizeTest, MeasuredBytesReadInThreeFigures) {
  EXPECT_EQ(ByteSizeText(0), "0");
  EXPECT_EQ(ByteSizeText(-5), "0");
  EXPECT_EQ(ByteSizeText(1023), "1023");
  EXPECT_EQ(ByteSizeText(1024), "1.0K");
  EXPECT_EQ(ByteSizeText(812 << 20), "812M");
  EXPECT_EQ(ByteSizeText(int64_t{3} << 29), "1.5G");
  EXPECT_EQ(ByteSizeText(int64_t{12} << 30), "12G");
  EXPECT_EQ(ByteSizeText(int64_t{1} << 62), "4.0E");
}

}  // namespace
}  // namespace tiresias
