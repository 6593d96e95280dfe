#include "master/output_pattern.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

constexpr std::string_view kKnown = "%j, %A, %a, %t, %r, %R or %%";

bool IsPlaceholder(char c) {
  return c == 'j' || c == 'A' || c == 'a' || c == 't' || c == 'r' || c == 'R' ||
         c == '%';
}

}  // namespace

absl::Status ValidateOutputPattern(std::string_view field,
                                   std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 == pattern.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(field), ": a lone '%' at the end (byte ", i,
                       "); expected ", ToAbsl(kKnown), " (%% for a '%')"));
    }
    const char next = pattern[i + 1];
    if (!IsPlaceholder(next)) {
      return absl::InvalidArgumentError(absl::StrCat(
          ToAbsl(field), ": unknown placeholder \"%",
          absl::CHexEscape(absl::string_view(&next, 1)), "\" at byte ", i,
          "; expected ", ToAbsl(kKnown), " (%% for a '%')"));
    }
    ++i;  // "%%": the second '%' starts nothing
  }
  return absl::OkStatus();
}

std::string ExpandOutputPattern(std::string_view pattern,
                                const OutputPatternValues& values) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%' || i + 1 == pattern.size()) {
      out.push_back(c);
      continue;
    }
    switch (pattern[i + 1]) {
      case 'j':
        absl::StrAppend(&out, values.job_id);
        break;
      case 'A':
        absl::StrAppend(&out,
                        values.array_id > 0 ? values.array_id : values.job_id);
        break;
      case 'a':
        absl::StrAppend(&out, values.array_index);
        break;
      case 't':
      case 'r':
        absl::StrAppend(&out, values.rank);
        break;
      case 'R':
        absl::StrAppend(&out, values.attempt);
        break;
      case '%':
        out.push_back('%');
        break;
      default:
        out.push_back('%');  // not a placeholder: kept as written
        continue;
    }
    ++i;
  }
  return out;
}

}  // namespace tiresias
