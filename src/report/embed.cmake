# Turns a text asset into a C++ source file, at build time and offline.
#
#   cmake -DINPUT=<file> -DOUTPUT=<file.cc> -DSYMBOL=<kName> -P embed.cmake
#
# OUTPUT defines, in namespace tiresias,
#   extern const char kName[];             // the bytes of INPUT, then a NUL
#   extern const std::size_t kNameSize;    // the byte count, without the NUL
# as declared in src/report/embedded_assets.h.
#
# The assets are inlined into <script> and <style> blocks of the HTML
# report, where the text "</script", "</style" or "<!--" would end or
# confuse the block; such an input is refused here rather than producing a
# page that silently breaks.

foreach(var INPUT OUTPUT SYMBOL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${INPUT}")
  message(FATAL_ERROR "embed.cmake: ${INPUT} does not exist")
endif()

file(READ "${INPUT}" text)
string(TOLOWER "${text}" lower)
foreach(bad "</script" "</style" "<!--")
  string(FIND "${lower}" "${bad}" pos)
  if(NOT pos EQUAL -1)
    message(FATAL_ERROR
      "embed.cmake: ${INPUT} contains '${bad}' at byte ${pos}; it cannot be "
      "inlined into the HTML report")
  endif()
endforeach()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
# 0xAB, per byte, 20 bytes a line.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 20 line_pattern)
string(REGEX REPLACE "(${line_pattern})" "\\1\n" bytes "${bytes}")

get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
"// Generated at build time by src/report/embed.cmake from ${input_name}.
// Do not edit; edit the source file instead.
#include <cstddef>

#include \"report/embedded_assets.h\"

namespace tiresias {

extern const char ${SYMBOL}[] = {
${bytes}
0x00};
extern const std::size_t ${SYMBOL}Size = ${size};

}  // namespace tiresias
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
