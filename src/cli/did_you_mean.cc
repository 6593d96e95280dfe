#include "cli/did_you_mean.h"

#include <algorithm>

namespace tiresias {

int EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions
  // ("jbos" is one edit from "jobs").
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string NearestName(std::string_view word,
                        const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 3;  // more than 2 edits is not a typo
  for (const std::string& c : candidates) {
    const int distance = EditDistance(word, c);
    if (distance < best_distance && 2 * distance < static_cast<int>(word.size())) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace tiresias
