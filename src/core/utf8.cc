#include "core/utf8.h"

namespace tiresias {

int Utf8SequenceLength(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) {
    return static_cast<unsigned char>(text[i]);
  };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) return 1;
  int length = 0;
  // The second byte's allowed range excludes overlong forms, surrogates and
  // code points past U+10FFFF (RFC 3629, section 4).
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (pos + length > text.size()) return 0;
  if (byte(pos + 1) < lo || byte(pos + 1) > hi) return 0;
  for (int i = 2; i < length; ++i) {
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 0;
  }
  return length;
}

char32_t DecodeUtf8(std::string_view text, size_t pos, int length) {
  const auto byte = [&](size_t i) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[pos + i]));
  };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return (byte(0) & 0x1F) << 6 | (byte(1) & 0x3F);
    case 3:
      return (byte(0) & 0x0F) << 12 | (byte(1) & 0x3F) << 6 | (byte(2) & 0x3F);
    default:
      return (byte(0) & 0x07) << 18 | (byte(1) & 0x3F) << 12 |
             (byte(2) & 0x3F) << 6 | (byte(3) & 0x3F);
  }
}

size_t FirstInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const int length = Utf8SequenceLength(text, pos);
    if (length == 0) return pos;
    pos += length;
  }
  return std::string_view::npos;
}

namespace {

void AppendHexEscape(std::string& out, const char* prefix, unsigned value,
                     int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) {
    out += kHex[(value >> shift) & 0xF];
  }
}

}  // namespace

std::string PrintableText(std::string_view text) {
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
          AppendHexEscape(out, "\\x", c, 2);
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
      AppendHexEscape(out, "\\x", c, 2);
      ++pos;
      continue;
    }
    const char32_t code_point = DecodeUtf8(text, pos, length);
    if (code_point >= 0x80 && code_point <= 0x9f) {
      AppendHexEscape(out, "\\u", static_cast<unsigned>(code_point), 4);
    } else {
      out.append(text.data() + pos, length);
    }
    pos += length;
  }
  return out;
}

}  // namespace tiresias
