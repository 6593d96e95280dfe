// AgentDaemon's side of the agent protocol: the report of its tasks
// (Statuses), lease renewal, the master's acknowledgements, Register,
// Heartbeat, and applying the desired state they answer with. The loop that
// calls them is in agent_daemon.cc.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/agent_daemon.h"
#include "agent/agent_daemon_internal.h"
#include "agent/log_service.h"
#include "core/node_filter.h"
#include "core/status_macros.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"
#include "security/rpc_status.h"

namespace tiresias {
namespace {

using agent_internal::TaskName;
using agent_internal::UnixSeconds;

// A discovered GPU name as the master takes it (master/agent_reports.h):
// printable ASCII, at most kMaxGpuModelBytes; anything else '?', the rest cut.
std::string ReportableGpuModel(std::string name) {
  if (name.size() > kMaxGpuModelBytes) name.resize(kMaxGpuModelBytes);
  for (char& c : name) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return name;
}

}  // namespace

std::vector<v1::TaskStatus> AgentDaemon::Statuses() const {
  std::vector<v1::TaskStatus> out;
  for (const auto& [key, task] : tasks_) {
    v1::TaskStatus s;
    s.mutable_task()->set_job_id(std::get<0>(key));
    s.mutable_task()->set_attempt(std::get<1>(key));
    s.mutable_task()->set_rank(std::get<2>(key));
    if (!task.ended) {
      s.set_state(task.stop_reason ? v1::TASK_STATE_EXITING
                                   : v1::TASK_STATE_RUNNING);
    } else {
      s.set_state(task.stop_reason ? v1::TASK_STATE_PREEMPTED
                                   : v1::TASK_STATE_EXITED);
    }
    if (task.stop_reason) {
      s.set_stop_reason(static_cast<v1::StopReason>(*task.stop_reason));
    }
    for (int g : task.gpus) s.add_gpu_indexes(g);
    if (task.exit_code) s.set_exit_code(*task.exit_code);
    if (task.out_of_memory) s.set_out_of_memory(true);
    if (task.usage) {
      s.set_cpu_seconds(task.usage->cpu_seconds);
      s.set_memory_peak_bytes(task.usage->memory_peak_bytes);
    }
    if (task.start_time) s.set_start_time(*task.start_time);
    if (task.profile) *s.mutable_profile() = *task.profile;
    if (task.end_time) {
      // The start is read after exec returns, the end by the shim: a task
      // that ends at once can end "before" it started by microseconds.
      // The master refuses an end before the start.
      s.set_end_time(task.start_time
                         ? std::max(*task.end_time, *task.start_time)
                         : *task.end_time);
    }
    out.push_back(std::move(s));
  }
  return out;
}

void AgentDaemon::RenewLeases(int64_t sent_ns) {
  MutexLock lock(&mu_);
  if (lease_ns_ <= 0) return;
  lease_deadline_ns_ = sent_ns + lease_ns_;
  for (auto& [key, task] : tasks_) {
    if (!task.ended && task.lease) task.lease->Renew(lease_deadline_ns_);
  }
}

void AgentDaemon::Acknowledge(const TaskKey& key) {
  auto it = tasks_.find(key);
  if (it == tasks_.end() || !it->second.ended) return;
  if (io_sessions_) io_sessions_->Remove(key);
  Task& task = it->second;
  if (task.handle) {
    absl::Status removed = record_->Remove(*task.handle);
    if (!removed.ok()) {
      Log(absl::StrCat("task record: ", removed.ToString()));
      return;  // reported again; removal retried on the next ack
    }
    if (!task.handle->exit_path.empty()) {
      std::error_code ignored;
      std::filesystem::remove(task.handle->exit_path, ignored);
    }
  }
  {
    // Also a record the agent could not read, or one whose task ended
    // while no agent ran (its profile is lost).
    std::error_code ignored;
    std::filesystem::remove(ProfilePath(key), ignored);
  }
  if (task.lease) task.lease->Remove();
  tasks_.erase(it);
  if (ended_keys_.insert(key).second) {
    ended_order_.push_back(key);
    if (ended_order_.size() > kMaxRememberedEnds) {
      ended_keys_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
}

bool AgentDaemon::Register(std::chrono::milliseconds retry_in) {
  v1::RegisterRequest req;
  req.set_name(options_.node_name);
  req.set_address(options_.advertised_address);
  req.set_log_address(log_address_);
  req.set_gpus(static_cast<int>(gpus_.size()));
  req.set_gpu_model(!options_.gpu_model.empty() ? options_.gpu_model
                    : gpus_.empty()             ? std::string()
                                    : ReportableGpuModel(gpus_[0].name));
  req.mutable_features()->Assign(options_.features.begin(),
                                 options_.features.end());
  req.set_cpus(report_cpus_);
  req.set_memory_mib(report_memory_mib_);
  req.set_spare_cpus(report_spare_cpus_);
  req.set_spare_memory_mib(report_spare_memory_mib_);
  req.set_agent_token(token_);
  req.set_grace_seconds(std::chrono::duration<double>(options_.grace).count());
  req.set_boot_id(boot_id_);
  req.set_report_seq(NextReportSeq());
  {
    MutexLock lock(&mu_);
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::RegisterResponse resp;
  const int64_t sent_ns = BootTimeNs();
  grpc::Status s = stub_->get().Register(&ctx, req, &resp);
  if (!s.ok()) {
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
        s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      // This agent, as configured, can never register with this master:
      // say so and stop, rather than retry forever.
      MutexLock lock(&mu_);
      fatal_ = absl::FailedPreconditionError(
          absl::StrCat("the master at ", options_.master_address,
                       " refuses this agent: ", s.error_message()));
      stopping_ = true;
      cv_.SignalAll();
      return false;
    }
    Log(absl::StrCat("register with ", options_.master_address,
                     " failed (retry in ", retry_in.count(),
                     " ms): ", security::ToAbsl(s).ToString()));
    return false;
  }
  if (absl::Status fresh = AcceptEpoch(resp.epoch()); !fresh.ok()) {
    Log(absl::StrCat("register: ", fresh.message(), " (retry in ",
                     retry_in.count(), " ms)"));
    return false;
  }
  {
    MutexLock lock(&mu_);
    node_id_ = resp.node_id();
    session_ = resp.session();
    session_confirmed_ = true;
    applied_version_ = 0;
    poked_ = false;
    if (resp.heartbeat_interval_seconds() > 0) {
      heartbeat_interval_ = std::chrono::milliseconds(
          static_cast<int64_t>(resp.heartbeat_interval_seconds() * 1000));
    }
    lease_ns_ = static_cast<int64_t>(resp.lease_seconds() * 1e9);
    // The stream reopens for the new session.
    if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
    for (const v1::TaskRef& ref : resp.acknowledged()) {
      Acknowledge({ref.job_id(), ref.attempt(), ref.rank()});
    }
  }
  cv_.SignalAll();
  SaveSession();
  RenewLeases(sent_ns);
  for (const v1::TaskReportError& e : resp.rejected()) {
    Log(absl::StrCat("the master refused a report: ", e.message()));
  }
  Log(absl::StrCat("registered as node ", resp.node_id(), " with ",
                   req.tasks_size(), " task(s); heartbeat every ",
                   heartbeat_interval_.count(), " ms, lease ",
                   resp.lease_seconds(), " s"));
  if (ApplyDesired(resp.desired(), sent_ns)) {
    MutexLock lock(&mu_);
    poked_ = true;  // report what it started at once
  }
  return true;
}

absl::StatusOr<bool> AgentDaemon::Heartbeat() {
  v1::HeartbeatRequest req;
  req.set_node_id(node_id_.load());
  req.set_log_address(log_address_);
  {
    MutexLock lock(&mu_);
    req.set_session(session_);
    req.set_leaving(draining_);
    req.set_boot_id(boot_id_);
    req.set_report_seq(NextReportSeq());
    // The answer is then only what changed since (DesiredState.delta).
    req.set_desired_version(applied_version_);
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::HeartbeatResponse resp;
  const int64_t sent_ns = BootTimeNs();
  grpc::Status s = stub_->get().Heartbeat(&ctx, req, &resp);
  if (!s.ok()) return security::ToAbsl(s);
  // Before anything of it is used, the lease renewal included.
  RETURN_IF_ERROR(AcceptEpoch(resp.epoch()));
  RenewLeases(sent_ns);
  bool again = false;
  {
    MutexLock lock(&mu_);
    session_confirmed_ = true;
    // The master lengthens it as the cluster grows.
    if (resp.heartbeat_interval_seconds() > 0) {
      heartbeat_interval_ = std::chrono::milliseconds(
          static_cast<int64_t>(resp.heartbeat_interval_seconds() * 1000));
    }
    for (const v1::TaskRef& ref : resp.acknowledged()) {
      Acknowledge({ref.job_id(), ref.attempt(), ref.rank()});
    }
    leaving_told_ = leaving_told_ || req.leaving();
    if (req.leaving() && req.tasks_size() == 0 && tasks_.empty()) {
      // Leaving, and the master heard that nothing runs here any more: it
      // has taken the node out.
      drained_ = true;
    } else if (draining_ && tasks_.empty()) {
      again = true;  // tell it so at once
    }
  }
  cv_.SignalAll();
  for (const v1::TaskReportError& e : resp.rejected()) {
    Log(absl::StrCat("the master refused a report: ", e.message()));
  }
  return ApplyDesired(resp.desired(), sent_ns) || again;
}

bool AgentDaemon::ApplyDesired(const v1::DesiredState& desired,
                               int64_t sent_ns) {
  std::set<TaskKey> wanted;
  std::map<std::pair<int64_t, int>, int> stopping;
  std::vector<v1::StartTask> to_start;
  {
    MutexLock lock(&mu_);
    if (desired.session() != session_ || desired.version() < applied_version_) {
      return false;  // of another session, or older than what we applied
    }
    if (desired.delta() && desired.base_version() != applied_version_) {
      // Against a version this agent does not hold (an answer it lost):
      // report again, naming the one it holds; the answer is then whole. A
      // repeat of the version it holds has nothing new.
      if (desired.version() != applied_version_) return true;
    } else {
      if (!desired.delta()) desired_run_.clear();
      for (const v1::TaskRef& ref : desired.removed()) {
        desired_run_.erase({ref.job_id(), ref.attempt(), ref.rank()});
      }
      for (const v1::StartTask& run : desired.run()) {
        desired_run_[{run.task().job_id(), run.task().attempt(),
                      run.task().rank()}] = run;
      }
    }
    applied_version_ = desired.version();
    for (const v1::StopTask& stop : desired.stop()) {
      stopping[{stop.job_id(), stop.attempt()}] = stop.reason();
    }
    for (const auto& [key, run] : desired_run_) {
      wanted.insert(key);
      // Never twice: not while it runs here, nor once it has ended.
      if (!draining_ && !tasks_.contains(key) && !ended_keys_.contains(key)) {
        to_start.push_back(run);
      }
    }
  }
  bool changed = false;
  for (const v1::StartTask& start : to_start) {
    const v1::StartTask* run = &start;
    // Only while the answer is fresh: an agent stopped (SIGSTOP) or slowed
    // down after sending its report must not start what the master may
    // have cancelled since. A stale answer asks for another report.
    if (BootTimeNs() - sent_ns >
        std::chrono::nanoseconds(options_.max_answer_age).count()) {
      Log(absl::StrCat("the master's answer is ",
                       (BootTimeNs() - sent_ns) / 1'000'000,
                       " ms old: reporting again before starting anything"));
      changed = true;
      break;
    }
    changed |= StartTask(*run);
  }
  MutexLock lock(&mu_);
  for (auto& [key, task] : tasks_) {
    if (task.ended || task.stop_reason) continue;
    auto stop = stopping.find({std::get<0>(key), std::get<1>(key)});
    if (stop != stopping.end()) {
      RequestStop(key, task, stop->second);
      changed = true;
    } else if (!wanted.contains(key)) {
      RequestStop(key, task, v1::STOP_REASON_ORPHAN);
      changed = true;
    }
  }
  return changed;
}

}  // namespace tiresias
