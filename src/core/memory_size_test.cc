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

}  // namespace
}  // namespace tiresias
