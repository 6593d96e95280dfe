#include "profiler/profile_records.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tiresias::profiler {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(Records* records) : records_(records) {}

  bool ParseLine(absl::string_view line);

 private:
  // The current image of `pid`, made if it has none.
  size_t Process(int64_t pid) {
    auto [it, inserted] = current_.emplace(pid, records_->processes.size());
    if (inserted) {
      ProcessRecord p;
      p.pid = pid;
      records_->processes.push_back(std::move(p));
    }
    return it->second;
  }

  Records* records_;
  absl::flat_hash_map<int64_t, size_t> current_;  // pid -> latest image
};

bool Parser::ParseLine(absl::string_view line) {
  Records* records = records_;
  const std::vector<absl::string_view> f =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (f.empty() || f[0].size() != 1) return false;
  switch (f[0][0]) {
    case 'M': {
      MessageRecord m;
      int64_t pid = 0;
      if (f.size() != 5 || !absl::SimpleAtoi(f[1], &pid) ||
          !absl::SimpleAtoi(f[2], &m.conn) ||
          !absl::SimpleAtoi(f[3], &m.t_ns) ||
          !absl::SimpleAtoi(f[4], &m.bytes)) {
        return false;
      }
      m.process = Process(pid);
      records->messages.push_back(m);
      return true;
    }
    case 'C': {
      ConnectionRecord c;
      int64_t pid = 0;
      if (f.size() != 6 || !absl::SimpleAtoi(f[1], &pid) ||
          !absl::SimpleAtoi(f[2], &c.conn)) {
        return false;
      }
      c.process = Process(pid);
      c.kind = std::string(f[3]);
      c.local = Unescape(f[4]);
      c.peer = Unescape(f[5]);
      records->connections.push_back(std::move(c));
      return true;
    }
    case 'P': {
      ProcessRecord p;
      if (f.size() < 4 || !absl::SimpleAtoi(f[1], &p.pid) ||
          !absl::SimpleAtoi(f[2], &p.ppid) ||
          !absl::SimpleAtoi(f[3], &p.start_ns)) {
        return false;
      }
      for (size_t i = 4; i < f.size(); ++i) p.argv.push_back(Unescape(f[i]));
      current_[p.pid] = records->processes.size();
      records->processes.push_back(std::move(p));
      return true;
    }
    case 'E': {
      int64_t pid = 0;
      uint64_t t_ns = 0;
      if (f.size() != 4 || !absl::SimpleAtoi(f[1], &pid) ||
          !absl::SimpleAtoi(f[2], &t_ns)) {
        return false;
      }
      records->processes[Process(pid)].stop_reason = std::string(f[3]);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::string Unescape(absl::string_view field) {
  if (field == "-") return "";
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '%' && i + 2 < field.size() &&
        HexValue(field[i + 1]) >= 0 && HexValue(field[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(field[i + 1]) * 16 +
                                      HexValue(field[i + 2])));
      i += 2;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

Records ParseRecords(absl::string_view text) {
  Records records;
  Parser parser(&records);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (!parser.ParseLine(line)) ++records.malformed_lines;
  }
  return records;
}

absl::StatusOr<Records> ReadRecordsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot read: ", std::strerror(error)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": read error"));
  }
  return ParseRecords(text.str());
}

}  // namespace tiresias::profiler
