#include "core/large_allocations.h"

#include <malloc.h>
#include <stdlib.h>

#include <cstdlib>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kGlibcMalloc = false;  // the sanitizer's allocator instead
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif
#else
constexpr bool kGlibcMalloc = true;
#endif

// Called through a volatile pointer so that the compiler keeps each call.
void* (*volatile allocate)(size_t) = std::malloc;
void (*volatile release)(void*) = std::free;

// Whether a block of `bytes`, asked for after one as large was freed, is
// a mapping of its own (glibc's count of mapped blocks rises with it).
bool SecondLargeBlockIsMapped(size_t bytes) {
  release(allocate(bytes));
  const size_t before = mallinfo2().hblks;
  void* second = allocate(bytes);
  const bool mapped = mallinfo2().hblks == before + 1;
  release(second);
  return mapped;
}

// Whether a freed block of `bytes` at the top of the main arena is given
// back to the system (the arena shrinks), as it is once the free top
// passes the trim threshold.
bool FreedTopIsTrimmed(size_t bytes) {
  void* block = allocate(bytes);
  const size_t before = mallinfo2().arena;
  release(block);
  return mallinfo2().arena < before;
}

// What the cases need: glibc's allocator, its thresholds not set from the
// environment.
bool Skip() { return !kGlibcMalloc || OperatorSetsLargeAllocations(); }

// Each case runs in a child of its own: the thresholds are the process's.
TEST(LargeAllocationsTest, ABlockFreedDoesNotMakeTheNextOneStayInAnArena) {
  if (Skip()) GTEST_SKIP() << "a sanitizer's allocator, or set by the env";
  constexpr size_t kBlock = 4 * kLargeAllocationBytes;
  // glibc's default: the first free raises the threshold past the block,
  // so the second comes from the arena (and stays there when freed).
  EXPECT_EXIT(std::exit(SecondLargeBlockIsMapped(kBlock) ? 1 : 0),
              testing::ExitedWithCode(0), "");
  // Fixed: the second is mapped again, and given back when freed.
  EXPECT_EXIT(
      {
        if (!FixLargeAllocationThreshold()) std::exit(2);
        std::exit(SecondLargeBlockIsMapped(kBlock) ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
  // A block under the threshold is the arena's, as before.
  EXPECT_EXIT(
      {
        FixLargeAllocationThreshold();
        std::exit(SecondLargeBlockIsMapped(kLargeAllocationBytes / 4) ? 1 : 0);
      },
      testing::ExitedWithCode(0), "");
}

// A standby that caught up freed large blocks before it led: the trim
// threshold they raised is brought back down too.
TEST(LargeAllocationsTest, ATrimThresholdRaisedBeforeIsFixedToo) {
  if (Skip()) GTEST_SKIP() << "a sanitizer's allocator, or set by the env";
  constexpr size_t kTop = kLargeAllocationBytes * 9 / 10;  // not mapped
  // glibc's default, once a 4 MiB block was freed: a free top under 8 MiB
  // stays in the arena.
  EXPECT_EXIT(
      {
        release(allocate(4 * kLargeAllocationBytes));
        std::exit(FreedTopIsTrimmed(kTop) ? 1 : 0);
      },
      testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        release(allocate(4 * kLargeAllocationBytes));
        if (!FixLargeAllocationThreshold()) std::exit(2);
        std::exit(FreedTopIsTrimmed(kTop) ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST(LargeAllocationsTest, AnOperatorsThresholdStands) {
  if (!kGlibcMalloc) GTEST_SKIP() << "not glibc's malloc under a sanitizer";
  for (const char* name :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}) {
    SCOPED_TRACE(name);
    EXPECT_EXIT(
        {
          setenv(name, "65536", 1);
          std::exit(FixLargeAllocationThreshold() ? 1 : 0);
        },
        testing::ExitedWithCode(0), "");
  }
  EXPECT_EXIT(
      {
        unsetenv("MALLOC_MMAP_THRESHOLD_");
        unsetenv("MALLOC_TRIM_THRESHOLD_");
        setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536", 1);
        std::exit(FixLargeAllocationThreshold() ? 1 : 0);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tiresias
