#include "cli/printable.h"

#include "absl/strings/str_format.h"
#include "core/utf8.h"

namespace tiresias::cli {

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c < 0x20 || c == 0x7f) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          out += absl::StrFormat("\\x%02x", c);
      }
      ++pos;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++pos;
      continue;
    }
    const int length = Utf8SequenceLength(text, pos);
    if (length == 0) {
      out += absl::StrFormat("\\x%02x", c);
      ++pos;
      continue;
    }
    const char32_t code_point = DecodeUtf8(text, pos, length);
    if (code_point >= 0x80 && code_point <= 0x9f) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned>(code_point));
    } else {
      out.append(text.data() + pos, length);
    }
    pos += length;
  }
  return out;
}

}  // namespace tiresias::cli
