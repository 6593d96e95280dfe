#include "agent/gpu_discovery.h"

#include <dlfcn.h>

#include <filesystem>

#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using ::testing::HasSubstr;

constexpr char kAbsentNvml[] = "libnvidia-ml-absent-for-tests.so.1";

TEST(EmulatedGpusTest, MakesNumberedGpusAndProbesNothing) {
  TestDir dir;
  const std::string marker = dir.File("probed");
  DiscoveryOptions options;
  options.emulate = 3;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path =
      dir.Write("nvidia-smi", "#!/bin/sh\ntouch " + marker + "\n", 0755);
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*gpus)[i], (GpuInfo{i, "emu-" + std::to_string(i),
                                   "Emulated GPU", kEmulatedGpuMemoryMib, i}));
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(EmulatedGpusTest, RejectsNegativeCountsAndTakesNone) {
  for (int n : {-1, -2}) {
    absl::StatusOr<std::vector<GpuInfo>> gpus = EmulatedGpus(n);
    EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("--gpus"));
  }
  // 0: a node without GPUs (for CPU-only jobs; the agent checks it keeps
  // spare CPUs).
  absl::StatusOr<std::vector<GpuInfo>> none = EmulatedGpus(0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST(ParseNvidiaSmiCsvTest, ParsesRealOutput) {
  absl::StatusOr<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(
      "1, GPU-5e1b2c3d-aaaa-bbbb-cccc-000000000001, NVIDIA H200, 143771\r\n"
      "\n"
      "0, GPU-5e1b2c3d-aaaa-bbbb-cccc-000000000000, NVIDIA H200, 143771\n");
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0], (GpuInfo{0, "GPU-5e1b2c3d-aaaa-bbbb-cccc-000000000000",
                                 "NVIDIA H200", 143771}));
  EXPECT_EQ((*gpus)[1].index, 1);  // sorted by index
  EXPECT_TRUE(ParseNvidiaSmiCsv("").value().empty());
}

TEST(ParseNvidiaSmiCsvTest, KeepsANameWithCommasWhole) {
  absl::StatusOr<std::vector<GpuInfo>> gpus =
      ParseNvidiaSmiCsv("0, GPU-x, Tesla V100-SXM2-16GB, rev 2, 16160\n");
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ((*gpus)[0].name, "Tesla V100-SXM2-16GB, rev 2");
  EXPECT_EQ((*gpus)[0].memory_mib, 16160);
}

TEST(ParseNvidiaSmiCsvTest, NamesTheMalformedLineAndField) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"0, GPU-a, A100, 40960\n1, GPU-b, 40960\n",
       "line 2: expected 4 comma-separated fields"},
      {"0, GPU-a, A100, [N/A]\n", "line 1: field 'memory.total'"},
      {"x, GPU-a, A100, 40960\n", "line 1: field 'index'"},
      {"-1, GPU-a, A100, 40960\n", "line 1: field 'index'"},
      {"0, , A100, 40960\n", "line 1: field 'uuid'"},
      {"0, GPU-a, , 40960\n", "line 1: field 'name'"},
      {"0, GPU-a, A100, 1\n0, GPU-b, A100, 1\n",
       "line 2: field 'index': "
       "duplicate"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(c.text);
    EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument)
        << c.text;
    EXPECT_THAT(std::string(gpus.status().message()), HasSubstr(c.expected))
        << c.text;
    EXPECT_THAT(std::string(gpus.status().message()),
                HasSubstr("nvidia-smi output"));
  }
}

TEST(NvmlTest, AbsentLibraryIsNotFound) {
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverWithNvml(kAbsentNvml);
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr(kAbsentNvml));
}

TEST(NvmlTest, LibraryWithoutNvmlIsUnavailable) {
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverWithNvml("libm.so.6");
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(gpus.status().message()),
              HasSubstr("lacks an NVML function"));
}

TEST(NvmlTest, ReadsDevicesAndShutsDown) {
  // Held open so its counter survives discovery's dlclose.
  void* fake = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto init_count =
      reinterpret_cast<int (*)()>(dlsym(fake, "fake_nvml_init_count"));
  ASSERT_NE(init_count, nullptr);
  DiscoveryOptions options;
  options.nvml_library = FAKE_NVML_PATH;
  options.nvidia_smi_path = "/nonexistent/nvidia-smi";
  options.driver_gpus_dir = "/nonexistent/gpus";
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  // NVML's minor, not the index: its device node is /dev/nvidia0.
  EXPECT_EQ((*gpus)[1], (GpuInfo{1, "GPU-fake-1", "Fake H200", 143771, 0}));
  EXPECT_EQ(init_count(), 0);  // nvmlShutdown matched nvmlInit_v2
  dlclose(fake);
}

TEST(DiscoverGpusTest, FallsThroughFromAbsentNvmlToNvidiaSmi) {
  TestDir dir;
  const std::string args = dir.File("args");
  DiscoveryOptions options;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path =
      dir.Write("nvidia-smi",
                "#!/bin/sh\necho \"$@\" > " + args +
                    "\necho '0, GPU-aaa, NVIDIA H200, 143771'\n"
                    "echo '1, GPU-bbb, NVIDIA H200, 143771'\n",
                0755);
  // The driver numbers GPU-bbb's device node 4 and knows no GPU-aaa.
  options.driver_gpus_dir = dir.File("gpus");
  std::filesystem::create_directories(dir.File("gpus/0000:3b:00.0"));
  dir.Write("gpus/0000:3b:00.0/information",
            "Model: \t\t NVIDIA H200\nIRQ:   \t\t 156\n"
            "GPU UUID: \t GPU-bbb\nDevice Minor: \t 4\n");
  std::filesystem::create_directories(dir.File("gpus/0000:5e:00.0"));
  dir.Write("gpus/0000:5e:00.0/information",
            "GPU UUID: \t GPU-zzz\nDevice Minor: \t nope\n");
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1], (GpuInfo{1, "GPU-bbb", "NVIDIA H200", 143771, 4}));
  EXPECT_EQ((*gpus)[0].minor, 0);  // unknown to the driver: its index
  EXPECT_EQ(ReadFile(args),
            "--query-gpu=index,uuid,name,memory.total "
            "--format=csv,noheader,nounits\n");
}

TEST(DiscoverGpusTest, NothingFoundSaysWhyAndSuggestsEmulation) {
  DiscoveryOptions options;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path = "/nonexistent/nvidia-smi";
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("no GPU found"));
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr(kAbsentNvml));
  EXPECT_THAT(std::string(gpus.status().message()),
              HasSubstr("/nonexistent/nvidia-smi"));
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("--gpus N"));
}

TEST(DiscoverGpusTest, FailingNvidiaSmiFallsThroughWithItsMessage) {
  TestDir dir;
  DiscoveryOptions options;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path =
      dir.Write("nvidia-smi",
                "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't "
                "communicate with the NVIDIA driver.\"\nexit 9\n",
                0755);
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gpus.status().message()),
              HasSubstr("exited with status 9"));
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("NVIDIA driver"));
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("--gpus N"));
}

TEST(DiscoverGpusTest, HungNvidiaSmiIsKilledAfterTheTimeout) {
  TestDir dir;
  DiscoveryOptions options;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path =
      dir.Write("nvidia-smi", "#!/bin/sh\nexec sleep 30\n", 0755);
  options.nvidia_smi_timeout = std::chrono::milliseconds(100);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gpus.status().message()),
              HasSubstr("did not answer"));
}

TEST(DiscoverGpusTest, UnreadableNvidiaSmiOutputIsAnError) {
  TestDir dir;
  DiscoveryOptions options;
  options.nvml_library = kAbsentNvml;
  options.nvidia_smi_path =
      dir.Write("nvidia-smi", "#!/bin/sh\necho '0, GPU-a, A100, lots'\n", 0755);
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(options);
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(gpus.status().message()),
              HasSubstr("field 'memory.total'"));
}

}  // namespace
}  // namespace tiresias
