// Store (store.h): the conveniences every implementation shares.
#include "master/store.h"

#include "core/status_macros.h"

namespace tiresias {

absl::StatusOr<JobId> Store::CreateJob(const JobRequest& spec,
                                       Seconds submit_time) {
  ASSIGN_OR_RETURN(std::vector<absl::StatusOr<CreatedJob>> created,
                   CreateJobs({NewJob{spec, ""}}, submit_time));
  if (!created[0].ok()) return created[0].status();
  return created[0]->id;
}

absl::StatusOr<std::vector<JobRecord>> Store::ListJobs(
    std::optional<JobRecordState> state) const {
  JobQuery query;
  if (state) query.states = {*state};
  ASSIGN_OR_RETURN(JobPage page, QueryJobs(query));
  return std::move(page.jobs);
}

}  // namespace tiresias
