#include "core/large_allocations.h"

#include <malloc.h>

#include <cstdlib>

namespace tiresias {

bool FixLargeAllocationThreshold() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return false;
  // Setting it also ends glibc's raising of the trim threshold with it.
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargeAllocationBytes)) ==
         1;
}

}  // namespace tiresias
