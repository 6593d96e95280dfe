#include "core/large_allocations.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace tiresias {

bool OperatorSetsLargeAllocations() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr &&
         (std::strstr(tunables, "glibc.malloc.mmap_threshold") != nullptr ||
          std::strstr(tunables, "glibc.malloc.trim_threshold") != nullptr);
}

bool FixLargeAllocationThreshold() {
  if (OperatorSetsLargeAllocations()) return false;
  // Both, explicitly: setting the mmap threshold ends glibc's raising of
  // either, but leaves a trim threshold raised already (by what a standby
  // freed while it caught up) where it is.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargeAllocationBytes)) ==
             1 &&
         mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes)) == 1;
}

}  // namespace tiresias
