// Memory sizes as Slurm writes them (`--mem-per-gpu 16G`): parsed for the
// CLI and the agent, and shown back in the same form.
#ifndef TIRESIAS_CORE_MEMORY_SIZE_H_
#define TIRESIAS_CORE_MEMORY_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias {

// Slurm's memory size: a whole number with an optional K, M, G or T suffix
// (binary units, either case), MiB without one. In bytes; InvalidArgument
// "FLAG: expected a size such as 16G, ..." otherwise (0 and sizes past
// 2^62 bytes included).
absl::StatusOr<int64_t> ParseMemorySize(std::string_view flag,
                                        std::string_view text);

// A size in MiB for people: "32G" when whole GiB, else "1536M".
std::string MemoryText(int64_t mib);

// A measured size in bytes for people, to three figures or so: "1.5G",
// "812M", "4.0K", "100" (bytes); "0" for none.
std::string ByteSizeText(int64_t bytes);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_MEMORY_SIZE_H_
