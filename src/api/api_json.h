// The JSON vocabulary of Tiresias's client API: what `tiresias ... --json`
// prints and what the dashboard's /api answers carry, made by these
// functions only, so that both say the same thing in the same words
// (docs/json.md lists every field). Pure: protos in, JSON out.
//
// Conventions: ids are JSON numbers; states and other enum values are
// lower-case words without their prefix ("running", "up", "resources");
// instants are Unix seconds in fields named *_time, null when absent;
// durations are seconds in fields named *_s; text a master left empty
// where it means "none" (a pending reason, a drain reason) is null.
//
//   nlohmann::json j = api::JobJson(job, api::JobView::kDetail, now);
//   std::printf("%s\n", api::Dump(j).c_str());
#ifndef TIRESIAS_API_API_JSON_H_
#define TIRESIAS_API_API_JSON_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "nlohmann/json.hpp"
#include "proto/tiresias.pb.h"

namespace tiresias::api {

// A job's wait, in seconds: the time since its submission that it has not
// been running, up to its end (a job that ended keeps the wait it had), or
// up to `now_unix_seconds` while it is unfinished:
//   (end_time or now) - submit_time - total_executed_seconds, at least 0.
// The one meaning of "wait" in `tiresias jobs`, `job`, `history`, the
// dashboard and every JSON wait_s.
double JobWaitSeconds(const v1::Job& job, double now_unix_seconds);

// "pending", "running", ... (JOB_STATE_ dropped, lower case); "state N"
// for a value this client does not know.
std::string JobStateWord(v1::JobState state);
// The inverse of JobStateWord, exactly ("pending", not "PENDING"); false
// for a word that names no state (UNSPECIFIED included).
bool ParseJobStateWord(absl::string_view word, v1::JobState* state);
// "up", "down".
std::string NodeStateWord(v1::NodeState state);
// "resources", "priority", ...; empty for UNSPECIFIED (not waiting).
std::string PendingReasonWord(v1::PendingReasonKind kind);
// "afterok", "afterany", "afternotok", as `submit --dependency` takes them.
std::string DependencyKindWord(v1::DependencyKind kind);

// The attempt a job event concerns: the N of a detail that begins
// "attempt N" (as the master words every event of a launch: started,
// resumed, preempted, adopted); nullopt for other events.
std::optional<int> EventAttempt(const v1::JobEvent& event);

// A listing leaves out what only one job's view carries (its environment
// and events, which ListJobs does not send either).
enum class JobView { kList, kDetail };

// A job. `now_unix_seconds` is the instant wait_s of an unfinished job is
// measured to (the caller's clock: the CLI's, the dashboard's).
nlohmann::json JobJson(const v1::Job& job, JobView view,
                       double now_unix_seconds);
// {"jobs": [JobJson(kList)...]}.
nlohmann::json JobListJson(
    const google::protobuf::RepeatedPtrField<v1::Job>& jobs,
    double now_unix_seconds);
nlohmann::json JobEventJson(const v1::JobEvent& event);
nlohmann::json NodeJson(const v1::Node& node);
// {"nodes": [NodeJson...]}.
nlohmann::json NodeListJson(const v1::ListNodesResponse& nodes);
// The masters' store as the leader last saw it (status's leader.store):
// {"kind", "where", "log_index", "checked", "members": [{"endpoint",
// "in_use", "error" (null: it answered), "version", "db_size",
// "raft_leader", "has_leader", "raft_index", "alarms"}...]}.
nlohmann::json StoreHealthJson(const v1::StoreHealth& store);
nlohmann::json ClusterStatusJson(const v1::ClusterStatus& status);
// {"job_id": N, "existing": bool}.
nlohmann::json SubmitJson(const v1::SubmitJobResponse& response);
// {"job_ids": [N...], "existing": bool}.
nlohmann::json SubmitJson(const v1::SubmitJobsResponse& response);
// {"results": [{"job_id", "ok", "code", "error", "state", "held",
// "unchanged"}...]}.
nlohmann::json UpdateJobsJson(const v1::UpdateJobsResponse& response);
// {"node": NodeJson, "preempted_job_ids": [N...]}.
nlohmann::json DrainNodeJson(const v1::DrainNodeResponse& response);
// {"node": NodeJson}.
nlohmann::json ResumeNodeJson(const v1::ResumeNodeResponse& response);
// {"user", "admin", "via", "insecure"}; user null on an --insecure master.
nlohmann::json WhoAmIJson(const v1::WhoAmIResponse& response);
// {"id", "token", "expires_time"}.
nlohmann::json CreateTokenJson(const v1::CreateTokenResponse& response);
// {"tokens": [{"id", "user", "admin", "description", "created_time",
// "expires_time", "revoked_time"}...]}.
nlohmann::json TokenListJson(const v1::ListTokensResponse& response);
// {"entries": [{"sequence", "time", "principal", "peer", "action",
// "outcome", "detail"}...]}.
nlohmann::json AuditJson(const v1::ListAuditResponse& response);
// `tiresias vc list --json`.
nlohmann::json VcListJson(const v1::ListVcsResponse& response);
// `tiresias qos list --json`: {"qos": [{"name", "priority",
// "allow_no_preempt", "max_gpus_per_user" (null: none), "users", "vcs",
// "description", "running_jobs", "waiting_jobs", "gpus"}]}.
nlohmann::json QosListJson(const v1::ListQosResponse& response);

// The document as text: indented by 2 (or on one line), keys in
// alphabetical order, text that is not UTF-8 (only an old master could
// send it) as U+FFFD rather than failing the whole document.
std::string Dump(const nlohmann::json& json, bool one_line = false);

}  // namespace tiresias::api

#endif  // TIRESIAS_API_API_JSON_H_
