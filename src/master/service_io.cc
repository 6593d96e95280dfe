// TiresiasService::JobIo: a client joined to one task of a running job
// through its agent (AgentLogs.TaskIo). The handler's thread relays the
// client's requests to the agent; a second thread relays the agent's
// responses to the client. Who may do what:
//   - its output (read_only): the job's owner or an admin;
//   - its input (an interactive job) and port-forward: its owner alone (an
//     admin typing into a user's shell, or reaching their notebook, would
//     act as that user); on an --insecure master, anyone.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "master/job_record.h"
#include "master/service.h"

namespace tiresias {
namespace {

using ClientStream = grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>;

// How long the relay waits, after the agent's side ended, for the client to
// close its side before cancelling the call.
constexpr std::chrono::seconds kClientCloseWait{5};

grpc::Status Refuse(grpc::StatusCode code, std::string message) {
  return grpc::Status(code, std::move(message));
}

}  // namespace

grpc::Status TiresiasService::JobIo(grpc::ServerContext* ctx,
                                    ClientStream* client) {
  // Who calls, and their count of streams, before this thread waits for
  // anything: a caller with no credential, or one at the limit, holds no
  // master thread waiting for an `open` that may never come.
  absl::StatusOr<Principal> caller = auth_.Client(*ctx, "JobIo");
  if (!caller.ok()) return security::ToGrpc(caller.status());
  // Counted against the user's streams until this call ends.
  absl::StatusOr<UserStreams::Hold> hold = streams_.Acquire(caller->user);
  if (!hold.ok()) return security::ToGrpc(hold.status());
  v1::IoRequest first;
  if (!client->Read(&first)) return grpc::Status::OK;  // gone
  if (!first.has_open()) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  "the first request must be `open`");
  }
  v1::IoOpen open = first.open();
  const JobId id = open.job_id();
  // Authenticated again, not only at the call's start: a client may wait
  // as long as it likes before its `open`, and a token revoked or expired
  // meanwhile must attach to nothing.
  absl::StatusOr<Principal> who = MayActOnJob(*ctx, id, "JobIo");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (open.rank() < 0) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("rank: expected >= 0, got ", open.rank()));
  }
  if (open.forward_port() < 0 || open.forward_port() > 65535) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("forward_port: expected 1 to 65535 (0: "
                               "none), got ",
                               open.forward_port()));
  }
  absl::StatusOr<MasterState::TaskLogLocation> where =
      state_->LocateTaskLog(id, 0, open.rank());
  if (!where.ok()) return security::ToGrpc(where.status());
  if (where->state != JobRecordState::kRunning || where->ended) {
    return Refuse(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("job ", id, " is ",
                     ToAbsl(JobRecordStateName(where->state)),
                     where->ended && where->state == JobRecordState::kRunning
                         ? " (this task has ended)"
                         : "",
                     "; only a running job can be attached to"));
  }
  const bool insecure = who->via == "insecure";
  absl::StatusOr<JobRecord> job = state_->GetJob(id);
  if (!job.ok()) return security::ToGrpc(job.status());
  const bool owner = insecure || who->user == job->spec.user;
  const bool wants_input = open.forward_port() > 0 || !open.read_only();
  if (wants_input && !owner) {
    return security::ToGrpc(auth_.Deny(
        *who, absl::StrCat("JobIo job ", id),
        absl::StrCat("job ", id, " is ", job->spec.user, "'s: only its owner ",
                     open.forward_port() > 0 ? "may reach its ports"
                                             : "may type into it",
                     "; an admin may watch its output (attach --read-only)")));
  }
  if (open.forward_port() == 0 && !open.read_only() && where->io == kIoNone) {
    return Refuse(grpc::StatusCode::FAILED_PRECONDITION,
                  absl::StrCat("job ", id,
                               " is not interactive (its stdin is /dev/null): "
                               "attach to it read-only to follow its output, "
                               "or start one with `tiresias run`"));
  }
  if (where->nodes.empty() || !where->nodes[0].up ||
      where->nodes[0].log_address.empty()) {
    return Refuse(grpc::StatusCode::UNAVAILABLE,
                  absl::StrCat("job ", id, " rank ", open.rank(),
                               ": its node cannot be reached now"));
  }
  const MasterState::LogNode& node = where->nodes[0];
  open.mutable_task()->set_job_id(id);
  open.mutable_task()->set_attempt(where->attempt);
  open.mutable_task()->set_rank(open.rank());

  grpc::ClientContext agent_ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::IoRequest, v1::IoResponse>>
      agent = AgentLogsStub(node.name, node.log_address)->TaskIo(&agent_ctx);
  v1::IoRequest agent_open;
  *agent_open.mutable_open() = open;
  if (!agent->Write(agent_open)) {
    grpc::Status s = agent->Finish();
    return Refuse(grpc::StatusCode::UNAVAILABLE,
                  absl::StrCat("job ", id, ": its node ", node.name,
                               " cannot be reached: ", s.error_message()));
  }

  // The agent's first answer says whether it took the task on: a refusal
  // (NOT_FOUND, FAILED_PRECONDITION for a port no process of the job
  // listens on, ...) is the client's answer too.
  v1::IoResponse opened;
  if (!agent->Read(&opened)) {
    grpc::Status s = agent->Finish();
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return Refuse(s.error_code(),
                    absl::StrCat("job ", id, ": its node ", node.name,
                                 " cannot be reached: ", s.error_message()));
    }
    return s.ok() ? Refuse(grpc::StatusCode::UNAVAILABLE,
                           absl::StrCat("job ", id, ": its node ", node.name,
                                        " ended the stream at once"))
                  : s;
  }
  if (opened.has_opened()) opened.mutable_opened()->set_node(node.name);
  if (!client->Write(opened)) {
    agent_ctx.TryCancel();
    agent->Finish();
    return grpc::Status::OK;
  }

  // The agent's responses to the client, on a thread of their own.
  std::mutex mu;
  std::condition_variable cv;
  bool client_done = false;     // the client's side has ended
  bool agent_done = false;      // the agent's side has ended
  std::thread down([&] {
    v1::IoResponse r;
    bool ended = false;
    while (agent->Read(&r)) {
      ended = r.has_end();
      if (!client->Write(r) || ended) break;
    }
    if (!ended) {
      // The agent went away: the client hears so. (The call is finished
      // once, by the handler's thread, after every write.)
      agent_ctx.TryCancel();
      v1::IoResponse end;
      end.mutable_end()->set_reason(absl::StrCat(
          "the stream from the task's node ", node.name, " ended"));
      client->Write(end);
    }
    std::unique_lock<std::mutex> lock(mu);
    agent_done = true;
    cv.notify_all();
    // A client that does not close its side after the end is cancelled.
    if (!cv.wait_for(lock, kClientCloseWait, [&] { return client_done; })) {
      ctx->TryCancel();
    }
  });
  // A client that goes away while the agent's side is stuck (a task that
  // reads no input): the agent's call is cancelled, so no thread waits on
  // it for ever.
  std::thread watch([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!(client_done && agent_done)) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (ctx->IsCancelled()) {
        agent_ctx.TryCancel();
        break;
      }
    }
  });

  v1::IoRequest req;
  while (client->Read(&req)) {
    if (req.has_open()) continue;  // only the first
    if (open.read_only() && open.forward_port() == 0) continue;
    if (!agent->Write(req)) break;
  }
  agent->WritesDone();
  {
    std::lock_guard<std::mutex> lock(mu);
    client_done = true;
    cv.notify_all();
  }
  {
    // The agent's side ends once it sees ours closed (or the task's end).
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kClientCloseWait, [&] { return agent_done; })) {
      agent_ctx.TryCancel();
    }
  }
  down.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_all();
  }
  watch.join();
  agent->Finish();
  return grpc::Status::OK;
}

}  // namespace tiresias
