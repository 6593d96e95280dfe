// ParseConfig and ReadConfigFile (config_file.h): the TOML subset a
// configuration file is written in, each entry with its line.
#include "cli/config_toml.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/config_file.h"

namespace tiresias::cli {
namespace config_internal {

std::string FlagName(std::string_view key) {
  std::string out(key);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

bool ParseNumber(std::string_view token, std::string* out) {
  std::string_view t = token;
  std::string clean;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    clean.push_back(t[0]);
    t.remove_prefix(1);
  }
  if (t == "inf" || t == "nan") {
    *out = clean + std::string(t);
    return true;
  }
  bool digit = false, dot = false, exp = false;
  char prev = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      digit = true;
      clean.push_back(c);
    } else if (c == '_') {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(prev)) ||
          i + 1 == t.size() ||
          !absl::ascii_isdigit(static_cast<unsigned char>(t[i + 1]))) {
        return false;
      }
    } else if (c == '.' && !dot && !exp && digit) {
      dot = true;
      clean.push_back(c);
    } else if ((c == 'e' || c == 'E') && !exp && digit) {
      exp = true;
      clean.push_back(c);
      if (i + 1 < t.size() && (t[i + 1] == '+' || t[i + 1] == '-')) {
        clean.push_back(t[++i]);
      }
    } else {
      return false;
    }
    prev = c;
  }
  if (!digit || !absl::ascii_isdigit(static_cast<unsigned char>(prev))) {
    return false;
  }
  // No leading zeros (TOML's rule; CLI11 would read 010 as octal 8).
  const size_t first = clean[0] == '+' || clean[0] == '-' ? 1 : 0;
  if (clean.size() > first + 1 && clean[first] == '0' &&
      absl::ascii_isdigit(static_cast<unsigned char>(clean[first + 1]))) {
    return false;
  }
  *out = std::move(clean);
  return true;
}

}  // namespace config_internal
namespace {

using config_internal::FlagName;
using config_internal::ParseNumber;
using Kind = ConfigEntry::Kind;

bool BareKeyChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '-';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  Parser(std::string_view text, std::string path)
      : s_(text), path_(std::move(path)) {}

  absl::StatusOr<ConfigFile> Parse() {
    ConfigFile file;
    file.path = path_;
    std::vector<ConfigEntry>* section = nullptr;
    std::string section_name;
    while (true) {
      SkipBlank();
      SkipComment();
      if (pos_ == s_.size()) break;
      if (s_[pos_] == '\n') {
        ++pos_;
        ++line_;
        continue;
      }
      if (s_[pos_] == '[') {
        if (pos_ + 1 < s_.size() && s_[pos_ + 1] == '[') {
          return Error("arrays of tables ([[...]]) are not used here");
        }
        ++pos_;
        SkipBlank();
        std::string name = ReadBareKey();
        SkipBlank();
        if (name.empty() || pos_ == s_.size() || s_[pos_] != ']') {
          return Error(absl::StrCat(
              "expected a section name and ], as [master] or [agent]"));
        }
        ++pos_;
        bool known = false;
        for (std::string_view k : kConfigSections) known |= (name == k);
        if (!known) {
          return Error(absl::StrCat("unknown section [", name,
                                    "]; expected [master] or [agent]"));
        }
        if (file.sections.contains(name)) {
          return Error(absl::StrCat("section [", name, "] given twice"));
        }
        if (!AtLineEnd()) {
          return Error(
              absl::StrCat("expected the end of the line after [", name, "]"));
        }
        section = &file.sections[name];
        section_name = name;
        continue;
      }
      ConfigEntry entry;
      entry.line = line_;
      if (s_[pos_] == '"' || s_[pos_] == '\'') {
        return Error("quoted keys are not used here: write the flag's name");
      }
      entry.key = ReadBareKey();
      if (entry.key.empty()) {
        return Error(absl::StrCat(
            "expected a key (a flag's name: letters, digits, - and _) or a "
            "[section], not '",
            std::string(s_.substr(pos_, 1)), "'"));
      }
      SkipBlank();
      if (pos_ < s_.size() && s_[pos_] == '.') {
        return Error(
            absl::StrCat("dotted keys (", entry.key, ".…) are not used here"));
      }
      if (pos_ == s_.size() || s_[pos_] != '=') {
        return Error(absl::StrCat("expected = after ", entry.key));
      }
      ++pos_;
      SkipBlank();
      if (absl::Status s = ReadValue(&entry); !s.ok()) return s;
      if (!AtLineEnd()) {
        return Error(
            absl::StrCat("expected the end of the line after the "
                         "value of ",
                         entry.key));
      }
      if (section == nullptr) {
        return ErrorAt(entry.line,
                       absl::StrCat(entry.key,
                                    " is outside a section: put it under "
                                    "[master] or [agent]"));
      }
      for (const ConfigEntry& other : *section) {
        if (FlagName(other.key) == FlagName(entry.key)) {
          return ErrorAt(
              entry.line,
              absl::StrCat("[", section_name, "] ", entry.key,
                           " given twice (first on line ", other.line, ")"));
        }
      }
      section->push_back(std::move(entry));
    }
    return file;
  }

 private:
  absl::Status Error(std::string_view message) const {
    return ErrorAt(line_, message);
  }
  absl::Status ErrorAt(int line, std::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ":", line, ": ", std::string(message)));
  }

  absl::Status Unterminated(const ConfigEntry& entry) const {
    return ErrorAt(entry.line, absl::StrCat("unterminated list of ", entry.key,
                                            ": expected ]"));
  }

  void SkipBlank() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                (s_[pos_] == '\r' && pos_ + 1 < s_.size() &&
                                 s_[pos_ + 1] == '\n'))) {
      ++pos_;
    }
  }
  void SkipComment() {
    if (pos_ < s_.size() && s_[pos_] == '#') {
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
    }
  }
  // Blanks, comments and line ends (inside an array).
  void SkipSpace() {
    while (true) {
      SkipBlank();
      SkipComment();
      if (pos_ < s_.size() && s_[pos_] == '\n') {
        ++pos_;
        ++line_;
        continue;
      }
      return;
    }
  }
  bool AtLineEnd() {
    SkipBlank();
    SkipComment();
    return pos_ == s_.size() || s_[pos_] == '\n';
  }
  std::string ReadBareKey() {
    const size_t start = pos_;
    while (pos_ < s_.size() && BareKeyChar(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  absl::Status ReadValue(ConfigEntry* entry) {
    if (pos_ < s_.size() && s_[pos_] == '[') {
      entry->array = true;
      ++pos_;
      bool first = true;
      while (true) {
        SkipSpace();
        if (pos_ == s_.size()) return Unterminated(*entry);
        if (s_[pos_] == ']') {
          ++pos_;
          return absl::OkStatus();
        }
        std::string value;
        Kind kind;
        if (absl::Status s = ReadScalar(&value, &kind); !s.ok()) return s;
        if (!first && kind != entry->kind) {
          return Error(absl::StrCat("the list of ", entry->key,
                                    " mixes kinds of values"));
        }
        entry->kind = kind;
        first = false;
        entry->values.push_back(std::move(value));
        SkipSpace();
        if (pos_ == s_.size()) return Unterminated(*entry);
        if (s_[pos_] == ',') {
          ++pos_;
        } else if (s_[pos_] != ']') {
          return Error(
              absl::StrCat("expected , or ] in the list of ", entry->key));
        }
      }
    }
    std::string value;
    if (absl::Status s = ReadScalar(&value, &entry->kind); !s.ok()) return s;
    entry->values.push_back(std::move(value));
    return absl::OkStatus();
  }

  absl::Status ReadScalar(std::string* out, Kind* kind) {
    if (pos_ == s_.size() || s_[pos_] == '\n') {
      return Error("expected a value after =");
    }
    const char quote = s_[pos_];
    if (quote == '"' || quote == '\'') {
      if (s_.substr(pos_, 3) == std::string(3, quote)) {
        return Error("multi-line strings are not used here");
      }
      *kind = Kind::kString;
      ++pos_;
      while (true) {
        if (pos_ == s_.size() || s_[pos_] == '\n') {
          return Error("unterminated string: expected its closing quote");
        }
        const char c = s_[pos_++];
        if (c == quote) return absl::OkStatus();
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          return Error("a control character inside a string");
        }
        if (c != '\\' || quote == '\'') {
          out->push_back(c);
          continue;
        }
        if (pos_ == s_.size()) return Error("unterminated string");
        const char e = s_[pos_++];
        switch (e) {
          case '\\':
            out->push_back('\\');
            break;
          case '"':
            out->push_back('"');
            break;
          case 'n':
            out->push_back('\n');
            break;
          case 't':
            out->push_back('\t');
            break;
          case 'r':
            out->push_back('\r');
            break;
          case 'b':
            out->push_back('\b');
            break;
          case 'f':
            out->push_back('\f');
            break;
          case 'u':
          case 'U': {
            const size_t digits = e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (size_t i = 0; i < digits; ++i) {
              if (pos_ == s_.size() ||
                  !absl::ascii_isxdigit(static_cast<unsigned char>(s_[pos_]))) {
                return Error(absl::StrCat("\\", std::string(1, e), " takes ",
                                          digits, " hex digits"));
              }
              const char h = s_[pos_++];
              cp = cp * 16 + (absl::ascii_isdigit(static_cast<unsigned char>(h))
                                  ? h - '0'
                                  : absl::ascii_tolower(h) - 'a' + 10);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
              return Error("an escape that is not a Unicode scalar value");
            }
            AppendUtf8(cp, out);
            break;
          }
          default:
            return Error(absl::StrCat("unknown escape \\", std::string(1, e),
                                      " in a string"));
        }
      }
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ' ' && s_[pos_] != '\t' &&
           s_[pos_] != '\n' && s_[pos_] != '\r' && s_[pos_] != ',' &&
           s_[pos_] != ']' && s_[pos_] != '#') {
      ++pos_;
    }
    const std::string_view token = s_.substr(start, pos_ - start);
    if (token == "true" || token == "false") {
      *kind = Kind::kBool;
      *out = std::string(token);
      return absl::OkStatus();
    }
    if (ParseNumber(token, out)) {
      *kind = Kind::kNumber;
      return absl::OkStatus();
    }
    return Error(absl::StrCat(
        "expected a value: a \"string\", a number, true, false or a [list]; "
        "got '",
        std::string(token), "' (a string needs quotes)"));
  }

  std::string_view s_;
  std::string path_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

const std::vector<ConfigEntry>* ConfigFile::Section(
    std::string_view name) const {
  auto it = sections.find(name);
  return it == sections.end() ? nullptr : &it->second;
}

absl::StatusOr<ConfigFile> ParseConfig(std::string_view text,
                                       std::string path) {
  return Parser(text, std::move(path)).Parse();
}

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat(
        path, ": cannot read the configuration file: ", std::strerror(err));
    if (err == EACCES) return absl::PermissionDeniedError(why);
    return absl::NotFoundError(why);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot read the configuration file"));
  }
  return ParseConfig(text.str(), path);
}

}  // namespace tiresias::cli
