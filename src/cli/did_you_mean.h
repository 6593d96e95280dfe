// "Did you mean ...?" for a mistyped command or option name.
#ifndef TIRESIAS_CLI_DID_YOU_MEAN_H_
#define TIRESIAS_CLI_DID_YOU_MEAN_H_

#include <string>
#include <string_view>
#include <vector>

namespace tiresias {

// Edits (insertions, deletions, substitutions, swaps of two neighbours)
// that turn `a` into `b`.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` if it is close enough to be a typo of it
// (at most 2 edits, and fewer than half its length); empty otherwise. Ties
// go to the first candidate.
std::string NearestName(std::string_view word,
                        const std::vector<std::string>& candidates);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_DID_YOU_MEAN_H_
