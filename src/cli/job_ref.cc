#include "cli/job_ref.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tiresias::cli {
namespace {

// Digits only: SimpleAtoi alone would take "+5" and " 5".
bool ParseCount(absl::string_view text, int64_t* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != text.npos) {
    return false;
  }
  return absl::SimpleAtoi(text, out);
}

}  // namespace

absl::StatusOr<JobRef> ParseJobRef(absl::string_view text) {
  JobRef ref;
  const size_t sep = text.find('_');
  const bool ok =
      sep == text.npos
          ? ParseCount(text, &ref.id) && ref.id >= 1
          : ParseCount(text.substr(0, sep), &ref.array_id) &&
                ref.array_id >= 1 &&
                ParseCount(text.substr(sep + 1), &ref.index);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("JOB ", text,
                     ": expected a job id (e.g. 15) or ARRAYID_INDEX, a job "
                     "of an array as `tiresias jobs` shows it (e.g. 12_3)"));
  }
  return ref;
}

}  // namespace tiresias::cli
