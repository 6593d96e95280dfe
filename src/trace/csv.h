// Internal to src/trace: the plain CSV reading that the trace, cluster-spec
// and sample readers share, and the errors that name the place
// (`path:line: column 'name': expected ..., got "text"`).
//
// The dialect is the one of the files we read: fields separated by commas
// (or another separator, e.g. tabs for Gavel's traces), no quoting, spaces and tabs around a field ignored, LF or CRLF line ends,
// blank lines skipped, an optional UTF-8 byte-order mark. The first non-blank
// line is the header (unless the format has none and the caller names the
// columns with SetColumns); every data line must have as many fields as it.
//
// Built for speed (a 3.4 MB trace in a few milliseconds): the file is read
// whole and fields are views into it, so nothing is copied per field.
#ifndef TIRESIAS_TRACE_CSV_H_
#define TIRESIAS_TRACE_CSV_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/to_absl.h"

namespace tiresias::trace_internal {

using ::tiresias::ToAbsl;  // core/to_absl.h

// Reads the whole file. NotFound when it does not exist; other failures get
// the code errno suggests. The message is "path: cannot open: <reason>".
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Parses exactly "YYYY-MM-DD HH:MM:SS" into seconds since 1970-01-01
// 00:00:00 on the same (zone-less) clock. False on any other shape or on an
// impossible date or time.
bool ParseDateTime(std::string_view text, int64_t* seconds);

// Whole-string number parsing: false unless all of `text` is the number.
// ParseDouble accepts only finite values ("nan", "inf" and overflow fail).
bool ParseInt64(std::string_view text, int64_t* out);
bool ParseInt(std::string_view text, int* out);
bool ParseDouble(std::string_view text, double* out);

// `text` quoted for an error message, with C escapes; past `max_shown`
// characters it is cut short and ends in "...".
std::string Quote(std::string_view text, size_t max_shown = 80);

// Walks the lines of a CSV text. The text must outlive the reader; the views
// it hands out point into it. Not thread-safe.
class CsvReader {
 public:
  // `path` is only used to name the place in errors.
  CsvReader(std::string path, std::string_view text, char separator = ',');

  // Reads the header (the first non-blank line). Fails on an empty file.
  absl::Status ReadHeader();
  // For a format without a header line: names the columns (for FindColumn
  // and errors) and reads no line. The names must outlive the reader.
  void SetColumns(std::vector<std::string_view> names);
  // The first non-blank line split into fields (trimmed), without moving on;
  // empty for a blank file. For telling formats apart.
  std::vector<std::string_view> PeekFirstLine() const;
  // Header fields, trimmed, and the header line as written (trimmed).
  const std::vector<std::string_view>& header() const { return header_; }
  std::string_view header_text() const { return header_text_; }
  // Index of the column named `name` (exact match), or -1.
  int FindColumn(std::string_view name) const;
  // Like FindColumn, but a missing column is an error on the header line:
  // "path:1: <what> header lacks column 'name'".
  absl::StatusOr<int> RequireColumn(std::string_view name,
                                    std::string_view what) const;

  // Moves to the next non-blank data line. Returns false at the end, an
  // error when the line's field count differs from the header's.
  absl::StatusOr<bool> Next();
  // 1-based number of the current line (of the header before Next).
  int line_number() const { return line_number_; }
  // Data lines read so far (0-based index of the current one plus one).
  int64_t rows_read() const { return rows_read_; }
  // Field `column` of the current line, trimmed.
  std::string_view field(int column) const { return fields_[column]; }

  // Typed fields; a bad one gives a ColumnError. `expected` completes
  // "expected ..." in that error.
  absl::StatusOr<int> PositiveInt(int column) const;
  absl::StatusOr<int64_t> NonNegativeInt64(int column) const;
  absl::StatusOr<double> NonNegativeDouble(int column,
                                           std::string_view expected) const;
  // A field that must not be empty (a name, a tenant).
  absl::StatusOr<std::string_view> NonEmpty(int column) const;

  // "path:line: column 'name': expected <expected>, got \"<field>\"".
  absl::Status ColumnError(int column, std::string_view expected) const;
  // "path:line: <message>", for the current line.
  absl::Status LineError(std::string_view message) const;
  // "path: <message>", for the file as a whole.
  absl::Status FileError(std::string_view message) const;

 private:
  // Next raw line (without its end), skipping blank ones; false at the end.
  bool NextNonBlankLine(std::string_view* line);
  // Splits `line` into fields_ (trimmed).
  void Split(std::string_view line);

  std::string path_;
  std::string_view text_;
  char separator_;
  size_t pos_ = 0;
  int line_number_ = 0;
  int64_t rows_read_ = 0;
  std::string_view header_text_;
  std::vector<std::string_view> header_;
  std::vector<std::string_view> fields_;
};

}  // namespace tiresias::trace_internal

#endif  // TIRESIAS_TRACE_CSV_H_
