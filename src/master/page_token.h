// The page tokens of ListJobs: opaque to clients, they carry the id of the
// last job a page returned (the next page starts after it). Pure.
//
//   std::string token = EncodePageToken(1500);
//   ASSIGN_OR_RETURN(JobId after, DecodePageToken(token));  // 1500
#ifndef TIRESIAS_MASTER_PAGE_TOKEN_H_
#define TIRESIAS_MASTER_PAGE_TOKEN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/job.h"

namespace tiresias {

// A token for the page after job `last_id` (> 0).
std::string EncodePageToken(JobId last_id);
// The id a token carries; 0 for the empty token (the first page).
// InvalidArgument naming page_token for anything EncodePageToken did not
// make.
absl::StatusOr<JobId> DecodePageToken(std::string_view token);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_PAGE_TOKEN_H_
