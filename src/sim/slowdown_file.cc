#include "sim/slowdown_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tiresias {
namespace {

absl::Status LineError(const std::string& name, int line,
                       absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", what));
}

std::string Known(const ModelTable& base) {
  std::vector<std::string> names;
  for (const ModelPerf& m : base.models()) names.push_back(m.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<ModelTable> ApplySlowdownText(const ModelTable& base,
                                             const std::string& text,
                                             const std::string& name) {
  std::vector<ModelPerf> rows = base.models();
  std::set<std::string> seen;
  bool header = false;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    // The source is free text and may hold commas: split at the first two.
    std::vector<std::string> cols = absl::StrSplit(line, absl::MaxSplits(',', 2));
    for (std::string& c : cols) c = std::string(absl::StripAsciiWhitespace(c));
    if (!header) {
      if (cols.size() != 3 || cols[0] != "model" ||
          cols[1] != "spread_slowdown" || cols[2] != "source") {
        return LineError(name, line_no,
                         "expected the header model,spread_slowdown,source");
      }
      header = true;
      continue;
    }
    if (cols.size() != 3) {
      return LineError(name, line_no,
                       "expected 3 columns: model,spread_slowdown,source");
    }
    auto row = std::find_if(rows.begin(), rows.end(), [&](const ModelPerf& m) {
      return m.name == cols[0];
    });
    if (row == rows.end()) {
      return LineError(name, line_no,
                       absl::StrCat("column 'model': \"", cols[0],
                                    "\" is not a model of the simulator's "
                                    "table (", Known(base), ")"));
    }
    if (!seen.insert(cols[0]).second) {
      return LineError(name, line_no,
                       absl::StrCat("model \"", cols[0], "\" appears twice"));
    }
    char* end = nullptr;
    errno = 0;
    const double factor = std::strtod(cols[1].c_str(), &end);
    if (cols[1].empty() || *end != '\0' || errno != 0 ||
        !std::isfinite(factor) || factor < 1) {
      return LineError(name, line_no,
                       absl::StrCat("column 'spread_slowdown': expected a "
                                    "number >= 1, got \"", cols[1], "\""));
    }
    if (cols[2].empty()) {
      return LineError(name, line_no,
                       "column 'source': say where the number comes from");
    }
    row->spread_slowdown = factor;
    row->source = cols[2];
  }
  if (!header) {
    return LineError(name, line_no,
                     "no header model,spread_slowdown,source (empty file?)");
  }
  return ModelTable::Create(std::move(rows));
}

absl::StatusOr<ModelTable> ApplySlowdownFile(const ModelTable& base,
                                             const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot read (", std::strerror(errno), ")"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ApplySlowdownText(base, text.str(), path);
}

}  // namespace tiresias
