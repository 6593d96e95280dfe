#include "core/memory_size.h"

#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"

namespace tiresias {

absl::StatusOr<int64_t> ParseMemorySize(std::string_view flag,
                                        std::string_view text) {
  std::string digits(text);
  int64_t unit = int64_t{1} << 20;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K':
        unit = int64_t{1} << 10;
        digits.pop_back();
        break;
      case 'M':
        unit = int64_t{1} << 20;
        digits.pop_back();
        break;
      case 'G':
        unit = int64_t{1} << 30;
        digits.pop_back();
        break;
      case 'T':
        unit = int64_t{1} << 40;
        digits.pop_back();
        break;
      default:
        break;
    }
  }
  int64_t value = 0;
  if (digits.empty() ||
      digits.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(digits, &value) || value <= 0 ||
      value > (int64_t{1} << 62) / unit) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(flag),
        ": expected a size such as 16G, 512M or 2048 (MiB), got \"",
        ToAbsl(text), "\""));
  }
  return value * unit;
}

std::string MemoryText(int64_t mib) {
  if (mib > 0 && mib % 1024 == 0) return absl::StrCat(mib / 1024, "G");
  return absl::StrCat(mib, "M");
}

}  // namespace tiresias
