#include "trace/csv.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace tiresias::trace_internal {
namespace {

absl::Status ErrnoError(const std::string& path, int error_number) {
  return absl::Status(
      absl::ErrnoToStatusCode(error_number),
      absl::StrCat(path, ": cannot open: ", std::strerror(error_number)));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
// (H. Hinnant's days_from_civil). Requires a valid date.
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;  // [0, 399]
  const int64_t doy =
      (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;        // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

bool ParseDateTime(std::string_view text, int64_t* seconds) {
  static constexpr std::string_view kPattern = "dddd-dd-dd dd:dd:dd";
  if (text.size() != kPattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kPattern[i] == 'd' ? !digit : text[i] != kPattern[i]) return false;
  }
  auto number = [&](size_t at, size_t len) {
    int value = 0;
    for (size_t i = at; i < at + len; ++i) value = value * 10 + (text[i] - '0');
    return value;
  };
  const int year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const int hour = number(11, 2), minute = number(14, 2),
            second = number(17, 2);
  if (month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) ||
      hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  *seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 +
             minute * 60 + second;
  return true;
}


absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, errno);
  std::string data;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) data.reserve(st.st_size);
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      int error_number = errno;
      ::close(fd);
      return ErrnoError(path, error_number);
    }
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

bool ParseInt64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseInt(std::string_view text, int* out) {
  if (text.empty()) return false;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() &&
         std::isfinite(*out);
}

std::string Quote(std::string_view text, size_t max_shown) {
  if (text.size() > max_shown) {
    return absl::StrCat(
        "\"", absl::CHexEscape(ToAbsl(text.substr(0, max_shown))), "...\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(ToAbsl(text)), "\"");
}

CsvReader::CsvReader(std::string path, std::string_view text, char separator)
    : path_(std::move(path)), text_(text), separator_(separator) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text_.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    pos_ = kByteOrderMark.size();
  }
}

bool CsvReader::NextNonBlankLine(std::string_view* line) {
  while (pos_ < text_.size()) {
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    std::string_view raw = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_number_;
    std::string_view trimmed = Trim(raw);
    if (!trimmed.empty()) {
      *line = trimmed;
      return true;
    }
  }
  return false;
}

void CsvReader::Split(std::string_view line) {
  fields_.clear();
  while (true) {
    size_t comma = line.find(separator_);
    if (comma == std::string_view::npos) {
      fields_.push_back(Trim(line));
      return;
    }
    fields_.push_back(Trim(line.substr(0, comma)));
    line.remove_prefix(comma + 1);
  }
}

absl::Status CsvReader::ReadHeader() {
  std::string_view line;
  if (!NextNonBlankLine(&line)) {
    return FileError("empty file, expected a header line");
  }
  header_text_ = line;
  Split(line);
  header_ = fields_;
  return absl::OkStatus();
}

void CsvReader::SetColumns(std::vector<std::string_view> names) {
  header_ = std::move(names);
}

std::vector<std::string_view> CsvReader::PeekFirstLine() const {
  CsvReader copy = *this;
  std::string_view line;
  if (!copy.NextNonBlankLine(&line)) return {};
  copy.Split(line);
  return copy.fields_;
}

int CsvReader::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<int> CsvReader::RequireColumn(std::string_view name,
                                             std::string_view what) const {
  int column = FindColumn(name);
  if (column < 0) {
    return LineError(absl::StrCat(ToAbsl(what), " header lacks column '",
                                  ToAbsl(name), "'"));
  }
  return column;
}

absl::StatusOr<bool> CsvReader::Next() {
  std::string_view line;
  if (!NextNonBlankLine(&line)) return false;
  Split(line);
  ++rows_read_;
  if (fields_.size() != header_.size()) {
    return LineError(absl::StrCat("expected ", header_.size(), " columns, got ",
                                  fields_.size()));
  }
  return true;
}

absl::StatusOr<int> CsvReader::PositiveInt(int column) const {
  int value;
  if (!ParseInt(field(column), &value) || value <= 0) {
    return ColumnError(column, "a positive integer");
  }
  return value;
}

absl::StatusOr<int64_t> CsvReader::NonNegativeInt64(int column) const {
  int64_t value;
  if (!ParseInt64(field(column), &value) || value < 0) {
    return ColumnError(column, "a non-negative integer");
  }
  return value;
}

absl::StatusOr<double> CsvReader::NonNegativeDouble(
    int column, std::string_view expected) const {
  double value;
  if (!ParseDouble(field(column), &value) || value < 0) {
    return ColumnError(column, expected);
  }
  return value == 0 ? 0.0 : value;  // no "-0"
}

absl::StatusOr<std::string_view> CsvReader::NonEmpty(int column) const {
  if (field(column).empty()) return ColumnError(column, "a non-empty name");
  return field(column);
}

absl::Status CsvReader::ColumnError(int column,
                                    std::string_view expected) const {
  return LineError(absl::StrCat("column '", ToAbsl(header_[column]),
                                "': expected ", ToAbsl(expected), ", got ",
                                Quote(field(column))));
}

absl::Status CsvReader::LineError(std::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ":", line_number_, ": ", ToAbsl(message)));
}

absl::Status CsvReader::FileError(std::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(path_, ": ", ToAbsl(message)));
}

}  // namespace tiresias::trace_internal
