// Checks a job spec against job_limits.h before anything is stored: one
// function that the master (SubmitJob) and the CLI (`tiresias submit`, before
// sending) share, so both refuse the same specs with the same words. Pure;
// depends on no gRPC, SQLite or master code.
//
//   absl::Status status = ValidateJobRequest(spec);
//   // "spec.env key \"A=B\": expected a variable name matching
//   //  [A-Za-z_][A-Za-z0-9_]*"
#ifndef TIRESIAS_MASTER_JOB_VALIDATION_H_
#define TIRESIAS_MASTER_JOB_VALIDATION_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "master/job_limits.h"
#include "master/job_record.h"

namespace tiresias {

// OK, or InvalidArgument with a one-line message naming the first field at
// fault ("spec.name", "spec.command[2]", "spec.env key \"X\"", ...) and what
// was expected. Checks everything job_limits.h lists, and gpus >= 1; not
// whether the cluster has that many GPUs (the master's business).
absl::Status ValidateJobRequest(const JobRequest& spec);

// spec.notify and notify_on alone (ValidateJobRequest checks them too):
// an http(s):// URL or mailto:ADDRESS, known event words.
absl::Status ValidateNotify(const JobRequest& spec);

// Why a job may not set the variable `name` in its environment (the agent
// sets it for every task, over the job's: CUDA_VISIBLE_DEVICES, RANK,
// MASTER_PORT, PWD, TIRESIAS_*, ...); empty if it may.
std::string EnvSetPerTask(std::string_view name);

// OK for an empty id (none given) or one of job_limits::kMaxRequestIdBytes
// bytes of printable ASCII at most; InvalidArgument naming "request_id"
// otherwise.
absl::Status ValidateRequestId(std::string_view request_id);

// `text` for an error message: C-escaped (control and non-ASCII bytes as
// \n, \x1b, \xff...) and cut to about 64 bytes, in double quotes.
std::string QuoteForError(std::string_view text);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_JOB_VALIDATION_H_
