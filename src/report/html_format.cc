#include "report/html_format.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"

namespace tiresias {

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonForScriptBlock(const nlohmann::json& value) {
  const std::string dumped =
      value.dump(-1, ' ', /*ensure_ascii=*/false,
                 nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(dumped.size());
  for (char c : dumped) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return std::string(kNoValue);
  if (seconds == 0) return "0 s";
  // One decimal below 10 of a unit, none above: "4.2 s", "12 s".
  auto with_unit = [](double amount, const char* unit) {
    return amount < 9.95 ? absl::StrFormat("%.1f %s", amount, unit)
                         : absl::StrFormat("%.0f %s", amount, unit);
  };
  if (seconds < 59.5) return with_unit(seconds, "s");
  if (seconds < 59.5 * 60) return with_unit(seconds / 60, "min");
  if (seconds < 48 * 3600) return with_unit(seconds / 3600, "h");
  return with_unit(seconds / 86400, "d");
}

std::string FormatCount(double count) {
  if (!std::isfinite(count)) return std::string(kNoValue);
  const double rounded = std::round(count);
  if (std::fabs(rounded) >= 9e18) return absl::StrFormat("%.3g", count);
  const int64_t value = static_cast<int64_t>(rounded);
  std::string digits = absl::StrFormat("%d", value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string FormatPercent(double fraction) {
  if (!std::isfinite(fraction)) return std::string(kNoValue);
  return absl::StrFormat("%.1f%%", fraction * 100);
}

}  // namespace tiresias
