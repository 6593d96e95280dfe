// What the dashboard reads from the master for one browser, as the JSON of
// its /api answers (dashboard_server.h). Every call carries the token of
// the browser's session (none for an --insecure master), so the master
// applies that user's own rights: others' jobs come without their
// environment, and without their command under --hide-commands. The reader
// holds no credential of its own. Thread-safe (gRPC stubs are).
#ifndef TIRESIAS_DASHBOARD_MASTER_READER_H_
#define TIRESIAS_DASHBOARD_MASTER_READER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "dashboard/api_params.h"
#include "nlohmann/json.hpp"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

// One /api answer: an HTTP status and its JSON body ({"error": "..."} when
// not 200).
struct ApiAnswer {
  int status = 200;
  nlohmann::json body;
  // The master refused the token (UNAUTHENTICATED: revoked, expired): the
  // session that holds it is over.
  bool unauthenticated = false;
};

class MasterReader {
 public:
  // `channel` to the master at `master_address` (named in errors).
  MasterReader(std::string master_address,
               std::shared_ptr<grpc::Channel> channel);

  // {"now", "master", "viewer": {"user", "admin", "insecure"}, "jobs":
  // {"pending": N, ... every state}, "nodes": [...]}: the jobs counted by
  // state as the master keeps them (GetClusterStatus, the `jobs` of
  // `tiresias status --json`), never listed, so its size does not grow
  // with the jobs; every node as `nodes --json` (api/api_json.h,
  // docs/json.md); the viewer from WhoAmI. The jobs themselves are
  // JobsPage's, a page at a time. `token` empty: the call carries none.
  ApiAnswer State(const std::string& token) const;
  // One job with its environment (as the master shows it to this user) and
  // events, as `tiresias job ID --json` prints it: 400 for a malformed id,
  // 404 for an unknown one.
  ApiAnswer Job(const std::string& token, const std::string& id_text) const;
  // GET /api/jobs: one page of the jobs `params` select, in id order:
  // {"jobs": [...], "next_page_token": "..." ("" on the last page),
  // "page_size"}; a page token the master refuses is 400.
  ApiAnswer JobsPage(const std::string& token, const JobsParams& params) const;
  // GET /api/history (master_reader_more.cc): the master's cluster history,
  // {"points": [{"sample_time", "gpus_busy", "gpus_total", "jobs_waiting",
  // "jobs_running"}], "interval_s"}, oldest first.
  ApiAnswer History(const std::string& token,
                    const HistoryParams& params) const;
  // GET /api/jobs/ID/log: a slice of a task's log (ReadJobLog), {"data"
  // (text; bytes that are not UTF-8 replaced), "offset", "next_offset",
  // "attempt", "current_attempt", "complete", "job_state", "node"}. 404
  // unknown job or no log, 409 the job has not started, 403 not allowed.
  ApiAnswer JobLog(const std::string& token, const std::string& id_text,
                   const LogParams& params) const;
  // POST /api/jobs/ID/ACTION: hold, release or cancel the job (UpdateJobs,
  // so the master checks the caller may). 200 {"job_id", "action",
  // "outcome": "done" or "unchanged", "state", "held"}; refused: 403 (not
  // the owner nor an admin), 404, 409 (the action does not apply), with
  // {"error": "refused: ..."}; 400 for an unknown action.
  ApiAnswer Act(const std::string& token, const std::string& id_text,
                const std::string& action) const;
  // The master's WhoAmI for `token`.
  grpc::Status WhoAmI(const std::string& token, v1::WhoAmIResponse* out) const;
  // One line saying why a call failed: the master's address, the code, its
  // message (tokens redacted), and a hint when it could not be reached.
  std::string Failure(const grpc::Status& status) const;

 private:
  std::unique_ptr<grpc::ClientContext> Context(const std::string& token) const;
  ApiAnswer Failed(const grpc::Status& status) const;
  // Failed, but a refusal of the request itself (INVALID_ARGUMENT,
  // NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION) is 400, 404, 403 or
  // 409 with the master's message.
  ApiAnswer Refused(const grpc::Status& status) const;
  // Refused, the message starting "refused: " for a refusal.
  ApiAnswer RefusedAction(const grpc::Status& status) const;

  std::string master_address_;
  std::unique_ptr<v1::Tiresias::Stub> stub_;
};

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_MASTER_READER_H_
