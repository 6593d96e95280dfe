#include "agent/gpu_discovery.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/run_capture.h"

namespace tiresias {
namespace {

template <typename T>
bool ParseInteger(absl::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= 0;
}

absl::Status LineError(int line, absl::string_view what,
                       absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(
      "nvidia-smi output line ", line, ": ", what, ", got \"", got, "\""));
}

}  // namespace

void FillGpuMinors(const std::string& driver_gpus_dir,
                   std::vector<GpuInfo>& gpus) {
  std::map<std::string, int> minor_of;  // UUID -> device minor
  std::error_code error;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(driver_gpus_dir, error)) {
    std::ifstream in(entry.path() / "information");
    std::string line, uuid;
    int minor = -1;
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const absl::string_view key =
          absl::StripAsciiWhitespace(absl::string_view(line).substr(0, colon));
      const absl::string_view value =
          absl::StripAsciiWhitespace(absl::string_view(line).substr(colon + 1));
      if (key == "GPU UUID") uuid = std::string(value);
      if (key == "Device Minor" && !ParseInteger(value, minor)) minor = -1;
    }
    if (!uuid.empty() && minor >= 0) minor_of[uuid] = minor;
  }
  for (GpuInfo& gpu : gpus) {
    if (gpu.minor >= 0) continue;
    auto found = minor_of.find(gpu.uuid);
    gpu.minor = found != minor_of.end() ? found->second : gpu.index;
  }
}

absl::StatusOr<std::vector<GpuInfo>> EmulatedGpus(int count) {
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpus: expected a number of GPUs to emulate (0: none, a node for "
        "CPU-only jobs), got ",
        count));
  }
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    gpus.push_back(GpuInfo{i, absl::StrCat("emu-", i), "Emulated GPU",
                           kEmulatedGpuMemoryMib, i});
  }
  return gpus;
}

absl::StatusOr<std::vector<GpuInfo>> ParseNvidiaSmiCsv(
    std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  std::vector<GpuInfo> gpus;
  std::set<int> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);  // also a trailing '\r'
    if (line.empty()) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() < 4) {
      return LineError(line_number,
                       absl::StrCat("expected 4 comma-separated fields "
                                    "(index, uuid, name, memory.total) but "
                                    "found ",
                                    fields.size()),
                       line);
    }
    for (absl::string_view& f : fields) f = absl::StripAsciiWhitespace(f);
    GpuInfo gpu;
    if (!ParseInteger(fields.front(), gpu.index)) {
      return LineError(line_number,
                       "field 'index': expected a non-negative integer",
                       fields.front());
    }
    gpu.uuid = std::string(fields[1]);
    if (gpu.uuid.empty()) {
      return LineError(line_number, "field 'uuid': expected a GPU UUID", "");
    }
    // A name holding commas was split too: everything between the uuid's
    // comma and the last one is the name.
    const size_t name_start = line.find(',', line.find(',') + 1) + 1;
    const size_t name_end = line.rfind(',');
    gpu.name = std::string(absl::StripAsciiWhitespace(
        line.substr(name_start, name_end - name_start)));
    if (gpu.name.empty()) {
      return LineError(line_number, "field 'name': expected a GPU name", "");
    }
    if (!ParseInteger(fields.back(), gpu.memory_mib)) {
      return LineError(line_number,
                       "field 'memory.total': expected an integer (MiB)",
                       fields.back());
    }
    if (!seen.insert(gpu.index).second) {
      return LineError(line_number, "field 'index': duplicate GPU index",
                       fields.front());
    }
    gpus.push_back(std::move(gpu));
  }
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) {
    return a.index < b.index;
  });
  return gpus;
}

absl::StatusOr<std::vector<GpuInfo>> DiscoverWithNvidiaSmi(
    const std::string& path, std::chrono::milliseconds timeout) {
  absl::StatusOr<CommandResult> run =
      RunCapture({path, "--query-gpu=index,uuid,name,memory.total",
                  "--format=csv,noheader,nounits"},
                 timeout);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    absl::string_view first_line = run->output;
    first_line = first_line.substr(0, first_line.find('\n'));
    return absl::UnavailableError(
        absl::StrCat(path, " exited with status ", run->exit_code, ": ",
                     absl::StripAsciiWhitespace(first_line)));
  }
  return ParseNvidiaSmiCsv(run->output);
}

absl::StatusOr<std::vector<GpuInfo>> DiscoverGpus(
    const DiscoveryOptions& options) {
  if (options.emulate.has_value()) return EmulatedGpus(*options.emulate);
  std::vector<std::string> reasons;

  absl::StatusOr<std::vector<GpuInfo>> nvml =
      DiscoverWithNvml(options.nvml_library);
  if (nvml.ok() && !nvml->empty()) {
    FillGpuMinors(options.driver_gpus_dir, *nvml);
    return nvml;
  }
  reasons.push_back(nvml.ok()
                        ? "NVML: no GPU"
                        : absl::StrCat("NVML: ", nvml.status().message()));

  absl::StatusOr<std::vector<GpuInfo>> smi = DiscoverWithNvidiaSmi(
      options.nvidia_smi_path, options.nvidia_smi_timeout);
  // nvidia-smi ran but said something we cannot read: that is worth
  // reporting as such rather than as "no GPU".
  if (smi.status().code() == absl::StatusCode::kInvalidArgument) return smi;
  if (smi.ok() && !smi->empty()) {
    FillGpuMinors(options.driver_gpus_dir, *smi);
    return smi;
  }
  reasons.push_back(smi.ok()
                        ? "nvidia-smi: no GPU"
                        : absl::StrCat("nvidia-smi: ", smi.status().message()));

  return absl::NotFoundError(
      absl::StrCat("no GPU found (", absl::StrJoin(reasons, "; "),
                   "); to run without GPUs, emulate some with --gpus N"));
}

}  // namespace tiresias
