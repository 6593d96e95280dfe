// UTF-8 well-formedness for text that crosses a trust boundary: job specs
// the master accepts, user-controlled text the CLI prints and the master's
// audit log keeps. Pure.
//
// Well-formed means RFC 3629: shortest encodings only, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF.
#ifndef TIRESIAS_CORE_UTF8_H_
#define TIRESIAS_CORE_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace tiresias {

// The length (1 to 4) of the well-formed sequence that starts at
// text[pos], or 0 if the bytes there are not one (a stray continuation
// byte, an overlong form, a surrogate, a truncated sequence...). Requires
// pos < text.size().
int Utf8SequenceLength(std::string_view text, size_t pos);

// The code point of the well-formed sequence of `length` bytes at
// text[pos] (as Utf8SequenceLength returned).
char32_t DecodeUtf8(std::string_view text, size_t pos, int length);

// The offset of the first byte that does not begin a well-formed sequence;
// std::string_view::npos if the whole text is well-formed UTF-8.
size_t FirstInvalidUtf8(std::string_view text);

// `text` with every control character escaped and valid printable UTF-8
// kept as is: \n, \r, \t, and \xNN for the other C0 bytes and DEL;
// \u0080..\u009f for C1 controls; \xNN for each byte that is not part of
// well-formed UTF-8. The result is well-formed UTF-8 with no byte below
// 0x20 and no DEL, and escaping it again changes nothing (a backslash is
// kept as is, so "\xff" may be those four characters or an escaped byte).
std::string PrintableText(std::string_view text);

}  // namespace tiresias

#endif  // TIRESIAS_CORE_UTF8_H_
