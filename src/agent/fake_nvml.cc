// Test-only: a stand-in for libnvidia-ml.so.1 with two GPUs, so that the
// NVML path of GPU discovery is exercised on machines without NVIDIA's
// driver. Built as a module the test dlopens by path.
#include <cstdio>
#include <cstring>

extern "C" {

struct nvmlDevice_st {
  int index;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

static nvmlDevice_st devices[2] = {{0}, {1}};
static int initialized = 0;

int nvmlInit_v2() {
  ++initialized;
  return 0;
}
int nvmlShutdown() {
  --initialized;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (initialized <= 0) return 1;  // NVML_ERROR_UNINITIALIZED
  *count = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &devices[index];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_st* device, char* name, unsigned length) {
  std::snprintf(name, length, "Fake H200");
  return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned length) {
  std::snprintf(uuid, length, "GPU-fake-%d", device->index);
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, nvmlMemory_t* memory) {
  memory->total = 143771ULL << 20;
  memory->free = memory->total;
  memory->used = 0;
  return 0;
}
// Numbered the other way round from their indexes, as a driver may do.
int nvmlDeviceGetMinorNumber(nvmlDevice_st* device, unsigned* minor) {
  *minor = 1 - device->index;
  return 0;
}
const char* nvmlErrorString(int code) { return "fake error"; }
// Stays initialized-balanced so the test can check shutdown was called.
int fake_nvml_init_count() { return initialized; }

}  // extern "C"
