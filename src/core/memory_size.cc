#include "core/memory_size.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

std::string ByteSizeText(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(std::max<int64_t>(bytes, 0));
  constexpr const char* kUnits[] = {"K", "M", "G", "T", "P", "E"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  // One decimal below 10, none above: "1.5G", "812M", "12G".
  return value < 10 ? absl::StrFormat("%.1f%s", value, kUnits[unit])
                    : absl::StrFormat("%.0f%s", value, kUnits[unit]);
}

}  // namespace tiresias
