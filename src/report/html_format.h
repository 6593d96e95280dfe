// Text helpers for the HTML report: escaping for HTML and for JSON inlined
// in a <script> block, and human-friendly numbers for tables.
//
// All functions are pure and thread-safe. Durations are in seconds.
#ifndef TIRESIAS_REPORT_HTML_FORMAT_H_
#define TIRESIAS_REPORT_HTML_FORMAT_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace tiresias {

// What tables show for a missing or unusable value.
inline constexpr std::string_view kNoValue = "\xe2\x80\x94";  // em dash

// Escapes &, <, >, " and ' so that `text` is safe both as element content
// and inside a quoted attribute value.
std::string EscapeHtml(std::string_view text);

// Serializes `value` as JSON that can sit verbatim between
// <script type="application/json"> and </script>: every <, > and & is
// written as a \u escape (they can only occur inside JSON strings, so the
// text still parses to the same value), which rules out "</script" and
// "<!--". Invalid UTF-8 in strings is replaced by U+FFFD rather than
// throwing; NaN and infinities become null, as in any JSON.
std::string JsonForScriptBlock(const nlohmann::json& value);

// A duration with a unit chosen for the reader: "0 s", "4.2 s", "12 s",
// "4.5 min", "41 min", "2.3 h", "30 h", "3.1 d". Negative or non-finite
// values give kNoValue.
std::string FormatDuration(double seconds);

// A count with thousands separators: 82247 -> "82,247". Non-integral
// values are rounded; non-finite ones give kNoValue.
std::string FormatCount(double count);

// A fraction as a percentage with one decimal: 0.734 -> "73.4%".
std::string FormatPercent(double fraction);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_HTML_FORMAT_H_
