// Where glibc's malloc puts large blocks, for a daemon whose answers are
// sometimes large (a page of 5,000 listed jobs, a reply being encoded) and
// built on whichever of its many server threads took the call.
//
//   FixLargeAllocationThreshold();  // at start, before the state is loaded
//
// glibc serves blocks of at least M_MMAP_THRESHOLD from a mapping of their
// own, given back when freed, but by default raises that threshold to the
// largest such block freed (up to 32 MiB). From then on those blocks are
// carved from the arena of the thread that asked, and what they leave
// there stays: a full listing of 100,000 jobs kept 120-130 MB of the
// master's memory that malloc_trim could not return; with the threshold
// fixed at 1 MiB, 40 MB (BENCHMARKS.md, "Memory kept after a listing").
#ifndef TIRESIAS_CORE_LARGE_ALLOCATIONS_H_
#define TIRESIAS_CORE_LARGE_ALLOCATIONS_H_

#include <cstddef>

namespace tiresias {

// The threshold a daemon fixes: blocks of this size or more are mapped.
inline constexpr size_t kLargeAllocationBytes = size_t{1} << 20;

// Fixes M_MMAP_THRESHOLD at kLargeAllocationBytes, unless the operator set
// MALLOC_MMAP_THRESHOLD_ (then theirs stands). Returns whether it did.
// Process-wide; idempotent.
bool FixLargeAllocationThreshold();

}  // namespace tiresias

#endif  // TIRESIAS_CORE_LARGE_ALLOCATIONS_H_
