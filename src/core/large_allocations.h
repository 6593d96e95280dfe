// Where glibc's malloc puts large blocks, for a daemon whose answers are
// sometimes large (a page of 5,000 listed jobs, a reply being encoded) and
// built on whichever of its many server threads took the call.
//
//   FixLargeAllocationThreshold();  // at start, before the state is loaded
//
// glibc serves blocks of at least M_MMAP_THRESHOLD from a mapping of their
// own, given back when freed, but by default raises that threshold to the
// largest such block freed (up to 32 MiB), and the trim threshold (the
// free top an arena keeps) to twice it. From then on those blocks are
// carved from the arena of the thread that asked, and what they leave
// there stays: at 2,000 agents a full listing of 100,000 jobs kept 131-148
// MB of the master's memory that malloc_trim could not return; with the
// thresholds fixed, 23-33 MB, the listing itself up to about 1.5x slower
// on an idle host (BENCHMARKS.md, "Memory kept after a listing").
#ifndef TIRESIAS_CORE_LARGE_ALLOCATIONS_H_
#define TIRESIAS_CORE_LARGE_ALLOCATIONS_H_

#include <cstddef>

namespace tiresias {

// The thresholds a daemon fixes: blocks of kLargeAllocationBytes or more
// are mapped; an arena keeps at most kTrimThresholdBytes of free top
// (glibc's own default).
inline constexpr size_t kLargeAllocationBytes = size_t{1} << 20;
inline constexpr size_t kTrimThresholdBytes = size_t{128} << 10;

// Whether the operator set either threshold (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_, or GLIBC_TUNABLES' glibc.malloc.mmap_threshold
// or trim_threshold).
bool OperatorSetsLargeAllocations();

// Fixes M_MMAP_THRESHOLD at kLargeAllocationBytes and M_TRIM_THRESHOLD at
// kTrimThresholdBytes, unless OperatorSetsLargeAllocations() (then theirs
// stand). Returns whether it did. Process-wide; idempotent.
bool FixLargeAllocationThreshold();

}  // namespace tiresias

#endif  // TIRESIAS_CORE_LARGE_ALLOCATIONS_H_
