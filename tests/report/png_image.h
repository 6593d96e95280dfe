// Test-only: decodes the 8-bit RGB and RGBA PNGs that headless Chromium
// writes for --screenshot, so tests can look at pixels (did the charts'
// lines get drawn?) rather than only at the file size. Not a general PNG
// reader: no palettes, no 16-bit, no interlacing.
#ifndef TIRESIAS_TESTS_REPORT_PNG_IMAGE_H_
#define TIRESIAS_TESTS_REPORT_PNG_IMAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias::report_test {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

struct PngImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<Rgb> pixels;  // row-major; alpha, if any, dropped

  const Rgb& At(uint32_t x, uint32_t y) const {
    return pixels[static_cast<size_t>(y) * width + x];
  }
};

// Decodes the bytes of a PNG file. InvalidArgument names what was wrong.
absl::StatusOr<PngImage> DecodePng(const std::string& bytes);

// Whether every channel of `a` is within `tolerance` of `b`'s.
bool Near(const Rgb& a, const Rgb& b, int tolerance);

// "#4e79a7" -> {0x4e, 0x79, 0xa7}.
Rgb ParseHexColor(const std::string& hex);

}  // namespace tiresias::report_test

#endif  // TIRESIAS_TESTS_REPORT_PNG_IMAGE_H_
