// A job's spec between its two shapes: the C++ JobRequest the CLI builds
// and the master validates and stores, and the wire's v1::JobSpec. The one
// conversion each way, shared by the CLI (what it sends), the master (what
// it reads and shows) and the dashboard, so that a per-job field is
// converted in one place. Pure: no I/O, no validation.
#ifndef TIRESIAS_API_JOB_SPEC_H_
#define TIRESIAS_API_JOB_SPEC_H_

#include "master/job_record.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// Every field of `spec` into `out` (env in name order; an array only if it
// has indices or a running limit), replacing what `out` held.
void JobSpecToProto(const JobRequest& spec, v1::JobSpec* out);
// Copies the fields as they are (env in name order; of a name given twice,
// the last value; an unknown dependency kind as 0); validating them
// (ValidateJobRequest) is the caller's business.
JobRequest JobSpecFromProto(const v1::JobSpec& spec);

}  // namespace tiresias

#endif  // TIRESIAS_API_JOB_SPEC_H_
