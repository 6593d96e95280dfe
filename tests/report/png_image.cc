#include "png_image.h"

#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tiresias::report_test {
namespace {

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = (value << 8) | static_cast<uint8_t>(bytes[at + i]);
  }
  return value;
}

absl::StatusOr<std::vector<uint8_t>> Inflate(const std::string& compressed,
                                             size_t expected) {
  std::vector<uint8_t> out(expected);
  uLongf out_size = expected;
  const int rc = uncompress(out.data(), &out_size,
                            reinterpret_cast<const Bytef*>(compressed.data()),
                            compressed.size());
  if (rc != Z_OK || out_size != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("PNG: zlib data did not inflate to ", expected,
                     " bytes (zlib code ", rc, ")"));
  }
  return out;
}

uint8_t Paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return static_cast<uint8_t>(a);
  return static_cast<uint8_t>(pb <= pc ? b : c);
}

// Undoes the per-row filters in place; `raw` is rows of 1 + stride bytes.
absl::Status Unfilter(std::vector<uint8_t>& raw, uint32_t height, size_t stride,
                      size_t bpp) {
  for (uint32_t y = 0; y < height; ++y) {
    uint8_t* row = &raw[y * (stride + 1)];
    const uint8_t filter = row[0];
    uint8_t* cur = row + 1;
    const uint8_t* up = y > 0 ? cur - (stride + 1) : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= bpp ? cur[i - bpp] : 0;
      const int b = up ? up[i] : 0;
      const int c = up && i >= bpp ? up[i - bpp] : 0;
      switch (filter) {
        case 0:
          break;
        case 1:
          cur[i] += a;
          break;
        case 2:
          cur[i] += b;
          break;
        case 3:
          cur[i] += (a + b) / 2;
          break;
        case 4:
          cur[i] += Paeth(a, b, c);
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("PNG: row ", y, ": unknown filter ", int{filter}));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PngImage> DecodePng(const std::string& bytes) {
  static const std::string kSignature = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 33 || bytes.compare(0, 8, kSignature) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0) {
    return absl::InvalidArgumentError("PNG: no signature or IHDR chunk");
  }
  PngImage image;
  image.width = BigEndian32(bytes, 16);
  image.height = BigEndian32(bytes, 20);
  const uint8_t depth = bytes[24], color = bytes[25], interlace = bytes[28];
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PNG: unsupported bit depth ", int{depth}, ", colour type ", int{color},
        ", interlace ", int{interlace}));
  }
  const size_t bpp = color == 6 ? 4 : 3;
  std::string idat;
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint32_t length = BigEndian32(bytes, at);
    if (at + 12 + length > bytes.size()) {
      return absl::InvalidArgumentError("PNG: truncated chunk");
    }
    const std::string type = bytes.substr(at + 4, 4);
    if (type == "IDAT") idat.append(bytes, at + 8, length);
    if (type == "IEND") break;
    at += 12 + length;
  }
  const size_t stride = image.width * bpp;
  auto raw = Inflate(idat, (stride + 1) * image.height);
  if (!raw.ok()) return raw.status();
  absl::Status unfiltered = Unfilter(*raw, image.height, stride, bpp);
  if (!unfiltered.ok()) return unfiltered;
  image.pixels.reserve(static_cast<size_t>(image.width) * image.height);
  for (uint32_t y = 0; y < image.height; ++y) {
    const uint8_t* row = &(*raw)[y * (stride + 1) + 1];
    for (uint32_t x = 0; x < image.width; ++x) {
      const uint8_t* p = row + x * bpp;
      image.pixels.push_back({p[0], p[1], p[2]});
    }
  }
  return image;
}

bool Near(const Rgb& a, const Rgb& b, int tolerance) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance &&
         std::abs(a.b - b.b) <= tolerance;
}

Rgb ParseHexColor(const std::string& hex) {
  const unsigned long value = std::strtoul(hex.c_str() + 1, nullptr, 16);
  return {static_cast<uint8_t>(value >> 16), static_cast<uint8_t>(value >> 8),
          static_cast<uint8_t>(value)};
}

}  // namespace tiresias::report_test
