#include "cli/job_wait.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tiresias::cli {
namespace {

constexpr std::chrono::seconds kUnreachableFor{120};
constexpr std::chrono::milliseconds kFirstPoll{100};
constexpr std::chrono::milliseconds kMaxPoll{1000};

}  // namespace

int JobExitCode(const v1::Job& job) {
  switch (job.state()) {
    case v1::JOB_STATE_FINISHED:
      return job.has_exit_code() ? job.exit_code() : 0;
    case v1::JOB_STATE_CANCELLED:
      return kCancelledExitCode;
    case v1::JOB_STATE_TIMEOUT:
      return kTimeoutExitCode;
    default:
      return job.has_exit_code() && job.exit_code() != 0 ? job.exit_code()
                                                          : 1;
  }
}

namespace {

// Asks `check` (one round of calls to the master) again and again, with a
// growing pause, until it says the wait is over: its status is OK and it
// set `*code`. Keeps going through a master that is unreachable for up to
// kUnreachableFor; another error, or a longer outage: one line, exit 1.
int PollUntilDone(MasterClient& client, const std::string& what,
                  const std::function<grpc::Status(std::optional<int>*)>&
                      check) {
  auto poll = kFirstPoll;
  auto last_ok = std::chrono::steady_clock::now();
  while (true) {
    std::optional<int> code;
    const grpc::Status status = check(&code);
    const auto now = std::chrono::steady_clock::now();
    if (status.ok()) {
      last_ok = now;
      if (code) return *code;
    } else if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
               now - last_ok > kUnreachableFor) {
      return Fail(DescribeRpcError(status, client.address(), what));
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(kMaxPoll, poll * 2);
  }
}

}  // namespace

int WaitForJob(MasterClient& client, int64_t id) {
  return PollUntilDone(
      client, absl::StrCat("job ", id), [&](std::optional<int>* done) {
        v1::GetJobRequest req;
        req.set_job_id(id);
        v1::GetJobResponse resp;
        const grpc::Status status =
            client.stub().GetJob(client.Context().get(), req, &resp);
        if (!status.ok() || !IsFinal(resp.job().state())) return status;
        const int code = JobExitCode(resp.job());
        if (resp.job().state() != v1::JOB_STATE_FINISHED || code != 0) {
          std::fprintf(stderr, "tiresias: job %lld %s, exit code %d\n",
                       static_cast<long long>(id),
                       JobStateName(resp.job().state()).c_str(), code);
        }
        *done = code;
        return status;
      });
}

int WaitForArray(MasterClient& client, int64_t array_id) {
  const std::string what = absl::StrCat("array ", array_id);
  return PollUntilDone(client, what, [&](std::optional<int>* done) {
    v1::ListJobsRequest req;
    req.set_array_id(array_id);
    req.set_page_size(5000);
    int jobs = 0;
    int unfinished = 0;
    int not_finished = 0;  // ended otherwise than finished with 0
    int code = 0;
    while (true) {
      v1::ListJobsResponse page;
      const grpc::Status status =
          client.stub().ListJobs(client.Context().get(), req, &page);
      if (!status.ok()) return status;
      for (const v1::Job& job : page.jobs()) {
        ++jobs;
        if (!IsFinal(job.state())) {
          ++unfinished;
          continue;
        }
        const int job_code = JobExitCode(job);
        if (job_code != 0) ++not_finished;
        code = std::max(code, job_code);
      }
      if (page.next_page_token().empty()) break;
      req.set_page_token(page.next_page_token());
    }
    if (jobs == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such array");
    }
    if (unfinished > 0) return grpc::Status::OK;
    if (not_finished > 0) {
      std::fprintf(stderr,
                   "tiresias: array %lld: %d of %d jobs did not finish "
                   "with 0; exit code %d (the highest)\n",
                   static_cast<long long>(array_id), not_finished, jobs,
                   code);
    }
    *done = code;
    return grpc::Status::OK;
  });
}

}  // namespace tiresias::cli
