#include "api/api_json.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "api/job_text.h"
#include "core/warn_signal.h"

namespace tiresias::api {
namespace {

using nlohmann::json;

// An enum value's name without `prefix`, in lower case; "" when it has no
// name (a value from a newer peer).
std::string EnumWord(const std::string& name, absl::string_view prefix) {
  absl::string_view word = name;
  if (absl::StartsWith(word, prefix)) word.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(word);
}

// A value the proto marks optional: null when absent.
json Nullable(bool has, double v) { return has ? json(v) : json(nullptr); }

json TextOrNull(const std::string& text) {
  return text.empty() ? json(nullptr) : json(text);
}

template <typename Repeated>
json Strings(const Repeated& values) {
  return std::vector<std::string>(values.begin(), values.end());
}

template <typename Repeated>
json Ids(const Repeated& values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

json ProfileJson(const v1::Job& job) {
  if (!job.has_profile()) return nullptr;
  const v1::TrafficProfile& p = job.profile();
  return {{"periodic", p.periodic()},
          {"tensor_skew", Nullable(p.has_tensor_skew(), p.tensor_skew())},
          {"iteration_s", Nullable(p.has_iteration_s(), p.iteration_s())},
          {"bytes_per_iteration",
           Nullable(p.has_bytes_per_iteration(), p.bytes_per_iteration())},
          {"messages_per_iteration", Nullable(p.has_messages_per_iteration(),
                                              p.messages_per_iteration())},
          {"measured_job_id", p.measured_job_id()}};
}

}  // namespace

double JobWaitSeconds(const v1::Job& job, double now_unix_seconds) {
  const double end = job.has_end_time() ? job.end_time() : now_unix_seconds;
  return std::max(0.0, end - job.submit_time() - job.total_executed_seconds());
}

std::string JobStateWord(v1::JobState state) {
  const std::string word = EnumWord(v1::JobState_Name(state), "JOB_STATE_");
  return word.empty() ? absl::StrCat("state ", static_cast<int>(state)) : word;
}

bool ParseJobStateWord(absl::string_view word, v1::JobState* state) {
  return !word.empty() && absl::AsciiStrToLower(word) == word &&
         v1::JobState_Parse(
             absl::StrCat("JOB_STATE_", absl::AsciiStrToUpper(word)), state) &&
         *state != v1::JOB_STATE_UNSPECIFIED;
}

std::string NodeStateWord(v1::NodeState state) {
  const std::string word = EnumWord(v1::NodeState_Name(state), "NODE_STATE_");
  return word.empty() ? absl::StrCat("state ", static_cast<int>(state)) : word;
}

std::string PendingReasonWord(v1::PendingReasonKind kind) {
  if (kind == v1::PENDING_REASON_KIND_UNSPECIFIED) return "";
  const std::string word =
      EnumWord(v1::PendingReasonKind_Name(kind), "PENDING_REASON_KIND_");
  return word.empty() ? absl::StrCat("kind ", static_cast<int>(kind)) : word;
}

std::string DependencyKindWord(v1::DependencyKind kind) {
  switch (kind) {
    case v1::DEPENDENCY_KIND_AFTER_OK:
      return "afterok";
    case v1::DEPENDENCY_KIND_AFTER_ANY:
      return "afterany";
    case v1::DEPENDENCY_KIND_AFTER_NOT_OK:
      return "afternotok";
    default:
      return absl::StrCat("kind ", static_cast<int>(kind));
  }
}

std::optional<int> EventAttempt(const v1::JobEvent& event) {
  absl::string_view detail = event.detail();
  if (!absl::ConsumePrefix(&detail, "attempt ")) return std::nullopt;
  const size_t digits =
      std::min(detail.find_first_not_of("0123456789"), detail.size());
  int attempt = 0;
  if (digits == 0 || !absl::SimpleAtoi(detail.substr(0, digits), &attempt) ||
      attempt <= 0) {
    return std::nullopt;
  }
  return attempt;
}

json JobEventJson(const v1::JobEvent& e) {
  const std::optional<int> attempt = EventAttempt(e);
  return {{"job_id", e.job_id()},
          {"sequence", e.sequence()},
          {"time", e.time()},
          {"kind", e.kind()},
          {"attempt", attempt ? json(*attempt) : json(nullptr)},
          {"detail", e.detail()}};
}

// Which nodes may run it; null when any may.
json NodeFilterJson(const v1::JobSpec& spec) {
  if (spec.gpu_type().empty() && spec.constraint().empty() &&
      spec.nodelist().empty() && spec.exclude().empty()) {
    return nullptr;
  }
  return {{"gpu_type", TextOrNull(spec.gpu_type())},
          {"constraint", TextOrNull(spec.constraint())},
          {"nodelist", Strings(spec.nodelist())},
          {"exclude", Strings(spec.exclude())}};
}

json JobJson(const v1::Job& j, JobView view, double now_unix_seconds) {
  const v1::JobSpec& spec = j.spec();
  json dependencies = json::array();
  for (const v1::JobDependency& dep : spec.dependencies()) {
    dependencies.push_back(
        {{"kind", DependencyKindWord(dep.kind())}, {"job_id", dep.job_id()}});
  }
  const std::string reason_kind = PendingReasonWord(j.pending_reason_kind());
  json out = {
      {"id", j.id()},
      {"name", spec.name()},
      {"user", spec.user()},
      {"state", JobStateWord(j.state())},
      {"held", j.held()},
      {"gpus", spec.gpus()},
      {"command", Strings(spec.command())},
      {"model", spec.model()},
      {"checkpoint_dir", spec.checkpoint_dir()},
      {"workdir", spec.workdir()},
      {"output", spec.output()},
      {"error", spec.error()},
      {"time_limit_s", spec.time_limit_seconds() > 0
                           ? json(spec.time_limit_seconds())
                           : json(nullptr)},
      {"no_preempt", spec.no_preempt()},
      {"shape", spec.nodes() > 0 ? json{{"nodes", spec.nodes()},
                                        {"gpus_per_node", spec.gpus_per_node()}}
                                 : json(nullptr)},
      {"tasks_per_node",
       spec.tasks_per_node() > 0 ? json(spec.tasks_per_node()) : json(nullptr)},
      {"signal", spec.signal() != 0 ? json(FormatWarnSignal(
                                          {.signal = spec.signal(),
                                           .seconds = spec.signal_seconds()}))
                                    : json(nullptr)},
      {"node_filter", NodeFilterJson(spec)},
      {"exclusive", spec.exclusive()},
      {"cpus_per_gpu",
       spec.cpus_per_gpu() > 0 ? json(spec.cpus_per_gpu()) : json(nullptr)},
      {"mem_per_gpu_mib", spec.mem_per_gpu_mib() > 0
                              ? json(spec.mem_per_gpu_mib())
                              : json(nullptr)},
      {"cpus", spec.cpus() > 0 ? json(spec.cpus()) : json(nullptr)},
      {"mem_mib", spec.mem_mib() > 0 ? json(spec.mem_mib()) : json(nullptr)},
      {"vc", TextOrNull(spec.vc())},
      {"qos", TextOrNull(spec.qos())},
      {"image", TextOrNull(spec.image())},
      {"notify", TextOrNull(spec.notify())},
      {"begin_time",
       spec.begin_time() > 0 ? json(spec.begin_time()) : json(nullptr)},
      {"notify_on", json(std::vector<std::string>(spec.notify_on().begin(),
                                                  spec.notify_on().end()))},
      {"io", spec.io() == v1::IO_MODE_PTY     ? json("pty")
             : spec.io() == v1::IO_MODE_PIPES ? json("pipes")
                                              : json(nullptr)},
      {"borrowing", j.borrowing()},
      {"dependencies", std::move(dependencies)},
      {"waiting_on_dependencies", j.waiting_on_dependencies()},
      {"queue", j.queue()},
      {"attempt", j.attempt()},
      {"restarts", j.restarts()},
      {"preemptions", j.preemptions()},
      {"promotions", j.promotions()},
      {"attained_gpu_s", j.attained_gpu_seconds()},
      {"executed_s", j.executed_seconds()},
      {"total_executed_s", j.total_executed_seconds()},
      {"wait_s", JobWaitSeconds(j, now_unix_seconds)},
      {"jct_s",
       j.has_end_time() ? json(j.end_time() - j.submit_time()) : json(nullptr)},
      {"submit_time", j.submit_time()},
      {"first_start_time",
       Nullable(j.has_first_start_time(), j.first_start_time())},
      {"end_time", Nullable(j.has_end_time(), j.end_time())},
      {"last_stop_time", j.last_stop_time()},
      {"nodes", Strings(j.nodes())},
      {"exit_code", j.has_exit_code() ? json(j.exit_code()) : json(nullptr)},
      {"cpu_s", j.cpu_seconds()},
      {"max_memory_bytes", j.max_memory_bytes()},
      {"pending_reason", TextOrNull(j.pending_reason())},
      {"pending_reason_kind", TextOrNull(reason_kind)},
      {"profile", ProfileJson(j)},
      {"profile_text", FormatJobProfile(j)},
      {"array_id", j.array_id() > 0 ? json(j.array_id()) : json(nullptr)},
      {"array_index", j.array_id() > 0 ? json(j.array_index()) : json(nullptr)},
      {"array", spec.has_array()
                    ? json{{"indices", spec.array().indices()},
                           {"max_running", spec.array().max_running()}}
                    : json(nullptr)},
  };
  if (view == JobView::kDetail) {
    json env = json::object();
    for (const v1::EnvVar& var : spec.env()) env[var.key()] = var.value();
    out["env"] = std::move(env);
    json events = json::array();
    for (const v1::JobEvent& e : j.events()) events.push_back(JobEventJson(e));
    out["events"] = std::move(events);
  }
  return out;
}

json JobListJson(const google::protobuf::RepeatedPtrField<v1::Job>& jobs,
                 double now_unix_seconds) {
  json list = json::array();
  for (const v1::Job& j : jobs) {
    list.push_back(JobJson(j, JobView::kList, now_unix_seconds));
  }
  return {{"jobs", std::move(list)}};
}

json NodeJson(const v1::Node& n) {
  return {{"id", n.id()},
          {"name", n.name()},
          {"address", n.address()},
          {"state", NodeStateWord(n.state())},
          {"gpus", n.gpus()},
          {"gpus_free", n.gpus_free()},
          {"drained", n.drained()},
          {"drain_reason", TextOrNull(n.drain_reason())},
          {"gpu_model", TextOrNull(n.gpu_model())},
          {"features", Strings(n.features())},
          {"cpus", n.cpus()},
          {"memory_mib", n.memory_mib()},
          {"spare_cpus", n.spare_cpus()},
          {"spare_memory_mib", n.spare_memory_mib()},
          {"spare_cpus_free", n.spare_cpus_free()},
          {"spare_memory_mib_free", n.spare_memory_mib_free()},
          {"last_heartbeat_time", n.last_heartbeat_time()},
          {"job_ids", Ids(n.job_ids())}};
}

json NodeListJson(const v1::ListNodesResponse& nodes) {
  json list = json::array();
  for (const v1::Node& n : nodes.nodes()) list.push_back(NodeJson(n));
  return {{"nodes", std::move(list)}};
}

json TuningStatusJson(const v1::TuningStatus& s) {
  const v1::Tuning& t = s.tuning();
  json out = {{"thresholds_gpu_s", t.thresholds()},
              {"promote_knob",
               t.promote_knob() == 0 ? json("inf") : json(t.promote_knob())},
              {"queue_order", t.queue_order()},
              {"placement", t.placement()},
              {"source", s.source()}};
  if (s.source() == "applied") {
    out["applied_at"] = s.applied_at();
    out["applied_by"] = s.applied_by();
    out["note"] = s.note();
    out["drift"] = {{"drift", s.drift()},
                    {"statistic", s.drift_statistic()},
                    {"p_value", s.drift_p_value()},
                    {"jobs_tuned_on", s.drift_jobs_before()},
                    {"jobs_since", s.drift_jobs_recent()}};
  }
  return out;
}

json StoreHealthJson(const v1::StoreHealth& s) {
  json members = json::array();
  for (const v1::StoreMember& m : s.members()) {
    members.push_back(
        {{"endpoint", m.endpoint()},
         {"in_use", m.in_use()},
         {"error", m.error().empty() ? json(nullptr) : json(m.error())},
         {"version", m.version()},
         {"db_size", m.db_size()},
         {"raft_leader", m.raft_leader()},
         {"has_leader", m.has_leader()},
         {"raft_index", m.raft_index()},
         {"alarms",
          std::vector<std::string>(m.alarms().begin(), m.alarms().end())}});
  }
  return {{"kind", s.kind()},
          {"where", s.where()},
          {"log_index", s.log_index()},
          {"checked", s.checked()},
          {"members", members}};
}

json ClusterStatusJson(const v1::ClusterStatus& s) {
  json jobs = json::object();
  for (const auto& [state, count] : s.jobs()) jobs[state] = count;
  const v1::PackLimitStatus& p = s.pack_limit();
  return {{"policy", s.policy()},
          {"placement", s.placement()},
          {"nodes_up", s.nodes_up()},
          {"nodes_down", s.nodes_down()},
          {"nodes_drained", s.nodes_drained()},
          {"gpus", s.gpus()},
          {"gpus_busy", s.gpus_busy()},
          {"gpus_drained", s.gpus_drained()},
          {"jobs", std::move(jobs)},
          {"pack_limit",
           {{"value", p.value()},
            {"learning", p.learning()},
            {"runs", p.runs()},
            {"samples", p.samples()},
            {"fit", p.fit()}}},
          {"tuning", TuningStatusJson(s.tuning())},
          {"leader", s.has_leader()
                         ? json{{"epoch", s.leader().epoch()},
                                {"since", s.leader().since()},
                                {"pid", s.leader().pid()},
                                {"host", s.leader().host()},
                                {"standbys", std::vector<std::string>(
                                                 s.leader().standbys().begin(),
                                                 s.leader().standbys().end())},
                                {"store", StoreHealthJson(s.leader().store())}}
                         : json(nullptr)}};
}

json SubmitJson(const v1::SubmitJobResponse& r) {
  json out = {{"job_id", r.job_id()}, {"existing", r.existing()}};
  if (r.array_job_ids_size() > 0) out["array_job_ids"] = Ids(r.array_job_ids());
  return out;
}

json SubmitJson(const v1::SubmitJobsResponse& r) {
  return {{"job_ids", Ids(r.job_ids())}, {"existing", r.existing()}};
}

json UpdateJobsJson(const v1::UpdateJobsResponse& response) {
  json results = json::array();
  for (const v1::JobActionResult& r : response.results()) {
    const bool ok = r.code() == 0;
    results.push_back(
        {{"job_id", r.job_id()},
         {"ok", ok},
         {"code", r.code()},
         {"error", TextOrNull(r.error())},
         {"state", ok ? json(JobStateWord(r.state())) : json(nullptr)},
         {"held", r.held()},
         {"unchanged", r.unchanged()}});
  }
  return {{"results", std::move(results)}};
}

json DrainNodeJson(const v1::DrainNodeResponse& r) {
  return {{"node", NodeJson(r.node())},
          {"preempted_job_ids", Ids(r.preempted_job_ids())}};
}

json ResumeNodeJson(const v1::ResumeNodeResponse& r) {
  return {{"node", NodeJson(r.node())}};
}

json WhoAmIJson(const v1::WhoAmIResponse& r) {
  return {{"user", TextOrNull(r.user())},
          {"admin", r.admin()},
          {"via", r.via()},
          {"insecure", r.insecure()}};
}

json CreateTokenJson(const v1::CreateTokenResponse& r) {
  return {{"id", r.id()},
          {"token", r.token()},
          {"expires_time", Nullable(r.has_expires(), r.expires())}};
}

json TokenListJson(const v1::ListTokensResponse& response) {
  json tokens = json::array();
  for (const v1::TokenInfo& t : response.tokens()) {
    tokens.push_back(
        {{"id", t.id()},
         {"user", t.user()},
         {"admin", t.admin()},
         {"description", t.description()},
         {"created_time", t.created()},
         {"expires_time", Nullable(t.has_expires(), t.expires())},
         {"revoked_time", Nullable(t.has_revoked(), t.revoked())}});
  }
  return {{"tokens", std::move(tokens)}};
}

json VcListJson(const v1::ListVcsResponse& response) {
  json vcs = json::array();
  for (const v1::VcStatus& s : response.vcs()) {
    const v1::VirtualCluster& vc = s.vc();
    auto limit = [](int32_t n) { return n < 0 ? json(nullptr) : json(n); };
    vcs.push_back({{"name", vc.name()},
                   {"quota", vc.quota()},
                   {"quota_gpus", s.quota_gpus()},
                   {"weight", vc.weight()},
                   {"borrow_limit", limit(vc.borrow_limit())},
                   {"lend_limit", limit(vc.lend_limit())},
                   {"fair_per_user", vc.fair_per_user()},
                   {"fair_quantum_s", vc.fair_quantum_seconds()},
                   {"members", Strings(vc.members())},
                   {"default_for", Strings(vc.default_for())},
                   {"guaranteed_gpus", s.guaranteed_gpus()},
                   {"borrowed_gpus", s.borrowed_gpus()},
                   {"running_jobs", s.running_jobs()},
                   {"waiting_jobs", s.waiting_jobs()},
                   {"bound_cells", Strings(s.bound_cells())}});
  }
  return {{"vcs", std::move(vcs)}};
}

json QosListJson(const v1::ListQosResponse& response) {
  json levels = json::array();
  for (const v1::QosStatus& s : response.qos()) {
    const v1::Qos& q = s.qos();
    levels.push_back({{"name", q.name()},
                      {"priority", q.priority()},
                      {"allow_no_preempt", q.allow_no_preempt()},
                      {"max_gpus_per_user", q.max_gpus_per_user() < 0
                                                ? json(nullptr)
                                                : json(q.max_gpus_per_user())},
                      {"users", Strings(q.users())},
                      {"vcs", Strings(q.vcs())},
                      {"description", q.description()},
                      {"running_jobs", s.running_jobs()},
                      {"waiting_jobs", s.waiting_jobs()},
                      {"gpus", s.gpus()}});
  }
  return {{"qos", std::move(levels)}};
}

json AuditJson(const v1::ListAuditResponse& response) {
  json entries = json::array();
  for (const v1::AuditEntry& e : response.entries()) {
    entries.push_back({{"sequence", e.sequence()},
                       {"time", e.time()},
                       {"principal", e.principal()},
                       {"peer", e.peer()},
                       {"action", e.action()},
                       {"outcome", e.outcome()},
                       {"detail", e.detail()}});
  }
  return {{"entries", std::move(entries)}};
}

std::string Dump(const json& j, bool one_line) {
  return j.dump(one_line ? -1 : 2, ' ', false, json::error_handler_t::replace);
}

}  // namespace tiresias::api
