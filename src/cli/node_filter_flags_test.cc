#include "cli/node_filter_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/node_filter.h"

namespace tiresias::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist("-w", text);
  EXPECT_TRUE(names.ok()) << names.status();
  return names.ok() ? *names : std::vector<std::string>{};
}

TEST(ExpandHostlistTest, NamesRangesAndWidths) {
  EXPECT_THAT(Expand("a"), ElementsAre("a"));
  EXPECT_THAT(Expand("a,b,a"), ElementsAre("a", "b"));
  EXPECT_THAT(Expand("gpu[1-3,7]"),
              ElementsAre("gpu1", "gpu2", "gpu3", "gpu7"));
  EXPECT_THAT(Expand("n[08-10],login"),
              ElementsAre("n08", "n09", "n10", "login"));
  EXPECT_THAT(Expand("r[1-2]-ib"), ElementsAre("r1-ib", "r2-ib"));
  EXPECT_THAT(Expand("x[3]"), ElementsAre("x3"));
}

TEST(ExpandHostlistTest, RefusesWhatItCannotRead) {
  for (const char* bad : {"", "a,,b", "a,", "gpu[1-3", "gpu1-3]", "gpu[3-1]",
                          "gpu[a-b]", "gpu[]", "gpu[1-2][3]", "gpu[1,,2]"}) {
    absl::StatusOr<std::vector<std::string>> names = ExpandHostlist("-w", bad);
    EXPECT_EQ(names.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(names.status().message(), HasSubstr("-w")) << bad;
  }
  EXPECT_FALSE(ExpandHostlist("-w", "n[0-5000]").ok());
  EXPECT_TRUE(ExpandHostlist("-w", "n[1-1024]").ok());
  EXPECT_FALSE(ExpandHostlist("-w", "n[1-1024],m").ok());
}

TEST(ApplyNodeFilterTest, CpusAndMemPerJob) {
  // A CPU-only job keeps them as its own; --cpus is required.
  JobRequest spec;
  spec.num_gpus = 0;
  ASSERT_TRUE(ApplyNodeFilter({.cpus = "3", .mem = "1536M"},
                              kNodeFilterFlagNames, &spec)
                  .ok());
  EXPECT_EQ(spec.cpus, 3);
  EXPECT_EQ(spec.mem_mib, 1536);
  EXPECT_EQ(spec.cpus_per_gpu, 0);
  absl::Status bad =
      ApplyNodeFilter({.mem = "1G"}, kNodeFilterFlagNames, &spec);
  EXPECT_EQ(bad.message(),
            "--cpus: required for a job without GPUs (a CPU-only job)");
  bad = ApplyNodeFilter({.cpus_per_gpu = "2", .cpus = "2"},
                        kNodeFilterFlagNames, &spec);
  EXPECT_EQ(bad.message(),
            "--cpus and --cpus-per-gpu: give one (--cpus is the job's in all)");
  bad = ApplyNodeFilter({.mem_per_gpu = "1G", .cpus = "2"},
                        kNodeFilterFieldNames, &spec);
  EXPECT_EQ(bad.message(), "mem_per_gpu: a job without GPUs asks with mem");
  // With GPUs: spread over them, rounded up.
  spec.num_gpus = 4;
  ASSERT_TRUE(
      ApplyNodeFilter({.cpus = "10", .mem = "10G"}, kNodeFilterFlagNames, &spec)
          .ok());
  EXPECT_EQ(spec.cpus, 0);
  EXPECT_EQ(spec.mem_mib, 0);
  EXPECT_EQ(spec.cpus_per_gpu, 3);
  EXPECT_EQ(spec.mem_per_gpu_mib, 2560);
  for (const char* cpus : {"0", "-1", "x", "1025"}) {
    bad = ApplyNodeFilter({.cpus = cpus}, kNodeFilterFlagNames, &spec);
    EXPECT_THAT(bad.message(), HasSubstr("--cpus: ")) << cpus;
  }
}

TEST(ApplyNodeFilterTest, SetsTheSpecOrNamesTheFlag) {
  JobRequest spec;
  ASSERT_TRUE(ApplyNodeFilter({.gpu_type = "a100",
                               .constraint = "ib&nvme",
                               .nodelist = "g[1-2]",
                               .exclude = "g2"},
                              kNodeFilterFlagNames, &spec)
                  .ok());
  EXPECT_EQ(spec.gpu_type, "a100");
  EXPECT_EQ(spec.constraint, "ib&nvme");
  EXPECT_THAT(spec.nodelist, ElementsAre("g1", "g2"));
  EXPECT_THAT(spec.exclude, ElementsAre("g2"));
  absl::Status bad =
      ApplyNodeFilter({.constraint = "ib&&x"}, kNodeFilterFlagNames, &spec);
  EXPECT_THAT(bad.message(), HasSubstr("--constraint: "));
  bad = ApplyNodeFilter({.exclude = "g["}, kNodeFilterFieldNames, &spec);
  EXPECT_THAT(bad.message(), HasSubstr("exclude \"g[\""));
  ASSERT_TRUE(ApplyNodeFilter({.cpus_per_gpu = "6", .mem_per_gpu = "24G"},
                              kNodeFilterFlagNames, &spec)
                  .ok());
  EXPECT_EQ(spec.cpus_per_gpu, 6);
  EXPECT_EQ(spec.mem_per_gpu_mib, 24576);
  // Rounded up to whole MiB: a job gets at least what it asked.
  ASSERT_TRUE(
      ApplyNodeFilter({.mem_per_gpu = "1536K"}, kNodeFilterFlagNames, &spec)
          .ok());
  EXPECT_EQ(spec.mem_per_gpu_mib, 2);
  for (const char* cpus : {"0", "-1", "1.5", "x", "1025"}) {
    bad = ApplyNodeFilter({.cpus_per_gpu = cpus}, kNodeFilterFlagNames, &spec);
    EXPECT_THAT(bad.message(), HasSubstr("--cpus-per-gpu: ")) << cpus;
  }
  for (const char* mem : {"0", "512K", "16GB", "2000T"}) {
    bad = ApplyNodeFilter({.mem_per_gpu = mem}, kNodeFilterFieldNames, &spec);
    EXPECT_THAT(bad.message(), HasSubstr("mem_per_gpu: ")) << mem;
  }
}

}  // namespace
}  // namespace tiresias::cli
