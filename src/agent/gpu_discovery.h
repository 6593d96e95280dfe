// Finds the GPUs of this machine for the agent to offer to the master.
//
// Sources, tried in order:
//   1. emulation (`--gpus N`): N made-up GPUs, for machines without any
//      (tests, the local dev cluster); nothing is probed;
//   2. NVML, loaded with dlopen("libnvidia-ml.so.1"), so that the agent
//      needs no NVIDIA headers or libraries to build or start;
//   3. `nvidia-smi --query-gpu=index,uuid,name,memory.total
//      --format=csv,noheader,nounits`.
// A source that is absent or fails falls through to the next; if none finds
// a GPU the error says why each failed and suggests --gpus N.
//
// GPU indices are NVML's (PCI bus order). The launcher sets
// CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers GPUs the same way.
#ifndef TIRESIAS_AGENT_GPU_DISCOVERY_H_
#define TIRESIAS_AGENT_GPU_DISCOVERY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

struct GpuInfo {
  int index = 0;     // what CUDA_VISIBLE_DEVICES takes
  std::string uuid;  // "GPU-…" from NVIDIA, "emu-<index>" when emulated
  std::string name;  // "NVIDIA H200", "Emulated GPU"
  int64_t memory_mib = 0;
  // Its device node's minor number (/dev/nvidiaN, char 195:N), which is
  // what a task's cgroup denies: not always its index (NVML numbers GPUs
  // by PCI bus, the driver its device nodes by probe order). From NVML, or
  // the driver's /proc/driver/nvidia/gpus/*/information; the index when
  // neither says (DiscoverGpus), and for emulated GPUs.
  int minor = -1;

  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

// Memory reported for an emulated GPU.
inline constexpr int64_t kEmulatedGpuMemoryMib = 16384;

struct DiscoveryOptions {
  // From `--gpus N`: emulate N GPUs (N >= 0; 0: none) and probe nothing.
  std::optional<int> emulate;
  // Where to find nvidia-smi; a bare name is looked up in PATH.
  std::string nvidia_smi_path = "nvidia-smi";
  // The NVML library to dlopen; tests point it elsewhere.
  std::string nvml_library = "libnvidia-ml.so.1";
  // nvidia-smi is killed if it has not answered by then (a wedged driver
  // makes it hang).
  std::chrono::milliseconds nvidia_smi_timeout{10000};
  // The driver's per-GPU folders, each with an `information` file naming
  // the GPU's UUID and device minor; tests point it elsewhere.
  std::string driver_gpus_dir = "/proc/driver/nvidia/gpus";
};

// The GPUs of this machine, in index order. Errors: InvalidArgument for a
// bad `emulate`; NotFound when no source found a GPU (the message names each
// source's reason and suggests --gpus N); InvalidArgument when nvidia-smi's
// output cannot be parsed. Thread-safe; may take seconds (nvidia-smi).
absl::StatusOr<std::vector<GpuInfo>> DiscoverGpus(
    const DiscoveryOptions& options);

// Sets the minor of each GPU in `gpus` whose minor is unknown from the
// driver's folders under `driver_gpus_dir` (lines "GPU UUID: GPU-..." and
// "Device Minor: N" of each `information` file), matched by UUID; a GPU
// the driver does not list keeps its index as its minor. Unreadable or
// malformed files are skipped.
void FillGpuMinors(const std::string& driver_gpus_dir,
                   std::vector<GpuInfo>& gpus);

// N emulated GPUs: index i (and minor i), uuid "emu-<i>", name "Emulated
// GPU"; none for 0.
absl::StatusOr<std::vector<GpuInfo>> EmulatedGpus(int count);

// Queries NVML through dlopen(`library`). NotFound if the library cannot be
// loaded; Unavailable if it loads but fails (no driver, ...). May return an
// empty list.
absl::StatusOr<std::vector<GpuInfo>> DiscoverWithNvml(
    const std::string& library);

// Runs nvidia-smi at `path` and parses its answer. NotFound if it cannot be
// run; Unavailable if it exits non-zero or times out.
absl::StatusOr<std::vector<GpuInfo>> DiscoverWithNvidiaSmi(
    const std::string& path, std::chrono::milliseconds timeout);

// Parses the output of `nvidia-smi --query-gpu=index,uuid,name,memory.total
// --format=csv,noheader,nounits`: one line per GPU, "0, GPU-…, NVIDIA H200,
// 143771". Blank lines are skipped; a name holding commas is kept whole. A
// malformed line is an InvalidArgument naming its line number and field.
// Pure.
absl::StatusOr<std::vector<GpuInfo>> ParseNvidiaSmiCsv(std::string_view text);

// GPU discovery as a replaceable object (STYLE rule 4).
class GpuDiscovery {
 public:
  virtual ~GpuDiscovery() = default;
  virtual absl::StatusOr<std::vector<GpuInfo>> Discover() = 0;
};

// Calls DiscoverGpus(options).
class SystemGpuDiscovery final : public GpuDiscovery {
 public:
  explicit SystemGpuDiscovery(DiscoveryOptions options)
      : options_(std::move(options)) {}
  absl::StatusOr<std::vector<GpuInfo>> Discover() override {
    return DiscoverGpus(options_);
  }

 private:
  DiscoveryOptions options_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_GPU_DISCOVERY_H_
