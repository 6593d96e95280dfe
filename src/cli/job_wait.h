// Waiting for a job to end, and the exit code a script gets for it
// (`tiresias submit --wait`, `tiresias logs -f`).
#ifndef TIRESIAS_CLI_JOB_WAIT_H_
#define TIRESIAS_CLI_JOB_WAIT_H_

#include <cstdint>

#include "cli/cluster_client.h"
#include "proto/tiresias.pb.h"

namespace tiresias::cli {

// Exit code for a job cancelled before it ended on its own (timeout(1)'s
// neighbour; a job's own code is its exit status, 128 + N for signal N).
inline constexpr int kCancelledExitCode = 125;
// Exit code for a job stopped at its time limit (`submit --time`), as
// timeout(1) exits 124.
inline constexpr int kTimeoutExitCode = 124;

// The code a script gets for ended job `job`: finished 0 (or its code),
// failed its exit code (1 if it has none, e.g. lost with its node),
// cancelled kCancelledExitCode, timeout kTimeoutExitCode. Requires
// IsFinal(job.state()).
int JobExitCode(const v1::Job& job);

// Polls job `id` until it ends; returns JobExitCode and says on stderr how
// a job that did not finish ended. Keeps waiting through a master that is
// unreachable for up to two minutes; other errors: one line, exit 1.
int WaitForJob(MasterClient& client, int64_t id);

// Polls the jobs of array `array_id` (ListJobs by array) until every one
// has ended; returns the highest JobExitCode among them (Slurm's `sbatch
// --wait` on an array), saying on stderr how many did not finish. Errors
// as WaitForJob.
int WaitForArray(MasterClient& client, int64_t array_id);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_JOB_WAIT_H_
