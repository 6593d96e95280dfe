// UTF-8 well-formedness for text that crosses a trust boundary: job specs
// the master accepts, and user-controlled text the CLI prints. Pure.
//
// Well-formed means RFC 3629: shortest encodings only, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF.
#ifndef TIRESIAS_CORE_UTF8_H_
#define TIRESIAS_CORE_UTF8_H_

#include <cstddef>
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

}  // namespace tiresias

#endif  // TIRESIAS_CORE_UTF8_H_
