// GPU discovery through NVML, loaded at run time with dlopen so that the
// agent builds and starts on machines without NVIDIA's libraries. The few
// types and functions used are declared here (they are NVML's stable C ABI).
#include <dlfcn.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/gpu_discovery.h"

namespace tiresias {
namespace {

using nvmlReturn_t = int;  // an enum in nvml.h; 0 is NVML_SUCCESS
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
// NVML_DEVICE_NAME_V2_BUFFER_SIZE and NVML_DEVICE_UUID_V2_BUFFER_SIZE.
constexpr unsigned kNameBufferSize = 96;
constexpr unsigned kUuidBufferSize = 80;

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*get_count)(unsigned*);
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*);
  const char* (*error_string)(nvmlReturn_t);  // optional
  // optional: /dev/nvidiaN's N
  nvmlReturn_t (*get_minor)(nvmlDevice_t, unsigned*);

  std::string Error(absl::string_view call, nvmlReturn_t code) const {
    const char* text = error_string != nullptr ? error_string(code) : nullptr;
    return absl::StrCat(call, " failed: ", text != nullptr ? text : "error",
                        " (", code, ")");
  }
};

// Closes the library when discovery is done, whatever the path out.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }

  template <typename Fn>
  bool Bind(const char* symbol, Fn& out) {
    out = reinterpret_cast<Fn>(dlsym(handle_, symbol));
    return out != nullptr;
  }

 private:
  void* handle_;
};

absl::StatusOr<std::vector<GpuInfo>> ListDevices(const NvmlApi& api) {
  unsigned count = 0;
  if (nvmlReturn_t r = api.get_count(&count); r != kNvmlSuccess) {
    return absl::UnavailableError(api.Error("nvmlDeviceGetCount_v2", r));
  }
  std::vector<GpuInfo> gpus;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t r = api.get_handle(i, &device); r != kNvmlSuccess) {
      return absl::UnavailableError(
          api.Error(absl::StrCat("nvmlDeviceGetHandleByIndex_v2(", i, ")"), r));
    }
    char name[kNameBufferSize] = {};
    char uuid[kUuidBufferSize] = {};
    nvmlMemory_t memory = {};
    if (nvmlReturn_t r = api.get_name(device, name, sizeof(name));
        r != kNvmlSuccess) {
      return absl::UnavailableError(api.Error("nvmlDeviceGetName", r));
    }
    if (nvmlReturn_t r = api.get_uuid(device, uuid, sizeof(uuid));
        r != kNvmlSuccess) {
      return absl::UnavailableError(api.Error("nvmlDeviceGetUUID", r));
    }
    if (nvmlReturn_t r = api.get_memory(device, &memory); r != kNvmlSuccess) {
      return absl::UnavailableError(api.Error("nvmlDeviceGetMemoryInfo", r));
    }
    name[sizeof(name) - 1] = '\0';
    uuid[sizeof(uuid) - 1] = '\0';
    unsigned minor = 0;
    const bool has_minor = api.get_minor != nullptr &&
                           api.get_minor(device, &minor) == kNvmlSuccess &&
                           minor < (1u << 20);
    gpus.push_back(GpuInfo{static_cast<int>(i), uuid, name,
                           static_cast<int64_t>(memory.total >> 20),
                           has_minor ? static_cast<int>(minor) : -1});
  }
  return gpus;
}

}  // namespace

absl::StatusOr<std::vector<GpuInfo>> DiscoverWithNvml(
    const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(absl::StrCat(
        "cannot load ", library, ": ", why != nullptr ? why : "unknown error"));
  }
  Library lib(handle);
  NvmlApi api = {};
  const bool bound =
      lib.Bind("nvmlInit_v2", api.init) &&
      lib.Bind("nvmlShutdown", api.shutdown) &&
      lib.Bind("nvmlDeviceGetCount_v2", api.get_count) &&
      lib.Bind("nvmlDeviceGetHandleByIndex_v2", api.get_handle) &&
      lib.Bind("nvmlDeviceGetName", api.get_name) &&
      lib.Bind("nvmlDeviceGetUUID", api.get_uuid) &&
      lib.Bind("nvmlDeviceGetMemoryInfo", api.get_memory);
  if (!bound) {
    return absl::UnavailableError(
        absl::StrCat(library, " lacks an NVML function: ", dlerror()));
  }
  lib.Bind("nvmlErrorString", api.error_string);
  lib.Bind("nvmlDeviceGetMinorNumber", api.get_minor);
  if (nvmlReturn_t r = api.init(); r != kNvmlSuccess) {
    return absl::UnavailableError(api.Error("nvmlInit_v2", r));
  }
  absl::StatusOr<std::vector<GpuInfo>> gpus = ListDevices(api);
  api.shutdown();
  return gpus;
}

}  // namespace tiresias
