// The job file of `tiresias submit --file JOBS.jsonl`: one job spec per
// line as a JSON object, with the fields of the submit flags:
//
//   {"gpus": 2, "command": ["python3", "train.py"], "name": "resnet",
//    "env": {"SEED": "1"}, "checkpoint_dir": "/ckpt/resnet",
//    "chdir": "runs/resnet", "output": "out-%j.txt", "error": "err-%j.txt",
//    "time": "1:30:00", "no_preempt": false, "hold": false,
//    "dependency": "afterok:12", "gpu_type": "a100", "constraint": "ib",
//    "nodelist": "gpu[01-04]", "exclude": "gpu03"}
//
// ("time" in the forms of `submit --time`, cli/time_limit.h; "dependency"
// as `submit --dependency`, core/dependency.h; the node filter's fields
// as submit's flags, cli/node_filter_flags.h.)
// "gpus" and "command" are required; "name" defaults to the command's base
// name, as for `submit`; "chdir" (or "workdir", its name in JobSpec) to
// the caller's directory, and a relative one is relative to it. Blank
// lines are skipped (and counted). Every line is checked, against the same
// ValidateJobRequest the master applies, before anything is sent: the
// first bad line stops the whole file with
//
//   jobs.jsonl:17: gpus: expected at least 1 GPU, got 0
//
// Pure (reads no file but the one named); depends on no gRPC.
#ifndef TIRESIAS_CLI_JOB_FILE_H_
#define TIRESIAS_CLI_JOB_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "master/job_limits.h"
#include "master/job_record.h"

namespace tiresias::cli {

// Most jobs one `submit --file` (and one SubmitJobs request) may carry.
inline constexpr size_t kMaxJobsPerFile =
    job_limits::kMaxJobsPerSubmission;

// One job of the file and the line (from 1) it came from.
struct JobFileEntry {
  JobRequest spec;
  int line = 0;
};

// `dir` made absolute against `cwd` (an absolute path) and lexically
// normal, without a trailing '/'; `cwd` itself when `dir` is empty.
std::string AbsoluteWorkdir(std::string_view dir, const std::string& cwd);

// Parses `text`, the contents of the file named `path` (used only in
// messages). `user` is set as every job's owner (empty: the master decides,
// from the credential). `cwd` is the caller's directory, every job's
// working directory unless its line says otherwise (empty: the agent's, and
// a relative "chdir" is refused). InvalidArgument "PATH:LINE: FIELD: what was
// expected" for the first bad line; "PATH: no jobs ..." for a file without
// any; "PATH: N jobs ..." past kMaxJobsPerFile.
absl::StatusOr<std::vector<JobFileEntry>> ParseJobFile(
    std::string_view text, const std::string& path, const std::string& user,
    const std::string& cwd = "");

// Reads `path` ("-": standard input) and parses it. A file that cannot be
// read: FailedPrecondition "PATH: cannot read it: <reason>".
absl::StatusOr<std::vector<JobFileEntry>> ReadJobFile(
    const std::string& path, const std::string& user,
    const std::string& cwd = "");

// "jobs[I].FIELD: what" (a master's refusal of job I of a SubmitJobs
// request, I from 0) as "PATH:LINE: FIELD: what" with the line of entry I;
// any other message is returned unchanged.
std::string LocateJobError(std::string_view message, const std::string& path,
                           const std::vector<JobFileEntry>& entries);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_JOB_FILE_H_
