#include "master/page_token.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "master/job_validation.h"

namespace tiresias {
namespace {

// Versioned, so that a later format can tell its tokens from these.
constexpr std::string_view kPrefix = "j1:";

}  // namespace

std::string EncodePageToken(JobId last_id) {
  return absl::WebSafeBase64Escape(absl::StrCat(ToAbsl(kPrefix), last_id));
}

absl::StatusOr<JobId> DecodePageToken(std::string_view token) {
  if (token.empty()) return 0;
  std::string text;
  JobId id = 0;
  if (!absl::WebSafeBase64Unescape(ToAbsl(token), &text) ||
      text.rfind(kPrefix, 0) != 0 ||
      !absl::SimpleAtoi(ToAbsl(std::string_view(text).substr(kPrefix.size())),
                        &id) ||
      id <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_token: expected a next_page_token of an earlier ListJobs "
        "answer, got ",
        QuoteForError(token)));
  }
  return id;
}

}  // namespace tiresias
