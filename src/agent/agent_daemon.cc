// AgentDaemon: the register / heartbeat / command loop.
#include "agent/agent_daemon.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/file_store.h"
#include "agent/log_service.h"
#include "agent/proc_table.h"
#include "proto/tiresias.grpc.pb.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// The gRPC stub, kept out of the header.
class AgentStub {
 public:
  explicit AgentStub(const std::string& address)
      : stub_(v1::AgentRegistry::NewStub(grpc::CreateChannel(
            address, grpc::InsecureChannelCredentials()))) {}
  v1::AgentRegistry::Stub& get() { return *stub_; }

 private:
  std::unique_ptr<v1::AgentRegistry::Stub> stub_;
};

namespace {

// Exit code reported for a task whose command could not be started (as a
// shell reports "command not found").
constexpr int kStartFailedExitCode = 127;

double UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

// CUDA_VISIBLE_DEVICES of a running process, read from /proc/<pid>/environ:
// the task record does not hold GPU indexes, the task's environment does.
std::vector<int> GpusOfProcess(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int> gpus;
  for (absl::string_view entry : absl::StrSplit(text.str(), '\0')) {
    if (!absl::StartsWith(entry, "CUDA_VISIBLE_DEVICES=")) continue;
    entry.remove_prefix(absl::string_view("CUDA_VISIBLE_DEVICES=").size());
    for (absl::string_view g : absl::StrSplit(entry, ',', absl::SkipEmpty())) {
      int index;
      if (absl::SimpleAtoi(g, &index)) gpus.push_back(index);
    }
  }
  return gpus;
}

// "host" of "host", "host:port", "[v6]:port" or "v6".
std::string AddressHost(const std::string& address) {
  if (address.starts_with('[')) {
    return address.substr(0, address.find(']') + 1);
  }
  const size_t colon = address.find(':');
  if (colon != std::string::npos && address.find(':', colon + 1) == std::string::npos) {
    return address.substr(0, colon);
  }
  return address.find(':') == std::string::npos ? address
                                                 : absl::StrCat("[", address, "]");
}

// Kills what is left of a recorded task's process group once its leader
// (the shim) is gone: processes the task started would otherwise keep its
// GPUs after the master gives them to another job. Only while no other
// process holds the leader's pid, so the group cannot be someone else's.
void SweepDeadTaskGroup(const TaskHandle& h) {
  absl::StatusOr<std::optional<ProcStat>> leader =
      RealProcessTable()->Stat(h.pgid);
  if (!leader.ok()) return;
  const bool ours = !leader->has_value() ||
                    ((*leader)->exited() &&
                     (*leader)->start_ticks == h.proc_start_ticks);
  if (ours) killpg(h.pgid, SIGKILL);
}

std::string TaskName(int64_t job, int attempt, int rank) {
  return absl::StrCat("job ", job, " attempt ", attempt, " rank ", rank);
}

}  // namespace

AgentDaemon::AgentDaemon(AgentOptions options) : options_(std::move(options)) {
  if (options_.node_name.empty()) options_.node_name = Hostname();
}

AgentDaemon::~AgentDaemon() { Stop(); }

void AgentDaemon::Log(std::string_view line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "tiresias agent: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  }
}

absl::Status AgentDaemon::Start() {
  if (options_.state_dir.empty()) {
    return absl::InvalidArgumentError("state dir: must not be empty");
  }
  std::error_code ec;
  std::filesystem::create_directories(
      std::filesystem::path(options_.state_dir) / "logs", ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state dir ", options_.state_dir, ": cannot create: ", ec.message()));
  }
  DiscoveryOptions discovery;
  discovery.emulate = options_.emulate_gpus;
  absl::StatusOr<std::vector<GpuInfo>> gpus = DiscoverGpus(discovery);
  if (!gpus.ok()) return gpus.status();
  gpus_ = *std::move(gpus);
  absl::StatusOr<TaskRecord> record =
      TaskRecord::Open(options_.state_dir + "/tasks.json");
  if (!record.ok()) return record.status();
  record_.emplace(*std::move(record));
  const std::string host = AddressHost(options_.advertised_address);
  absl::StatusOr<std::unique_ptr<AgentLogServer>> logs = AgentLogServer::Start(
      options_.log_listen.empty() ? absl::StrCat(host, ":0")
                                  : options_.log_listen,
      options_.state_dir + "/logs");
  if (!logs.ok()) return logs.status();
  log_server_ = *std::move(logs);
  log_address_ = absl::StrCat(host, ":", log_server_->port());
  launcher_ = std::make_unique<PosixLauncher>();
  stub_ = std::make_unique<AgentStub>(options_.master_address);
  Log(absl::StrCat("node ", options_.node_name, ": ", gpus_.size(),
                   " GPU(s), master ", options_.master_address));
  AdoptRecorded();
  RemoveStaleExitFiles();
  LoadSession();
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void AgentDaemon::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  log_server_.reset();
}

void AgentDaemon::StopAllTasks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, task] : tasks_) {
    if (!task.handle || task.ended) continue;
    absl::StatusOr<TaskExit> exit =
        launcher_->Stop(*task.handle, StopReason::kCancel, options_.grace);
    if (!exit.ok()) {
      Log(absl::StrCat("job ", task.handle->job_id,
                       ": could not stop: ", exit.status().message()));
    }
    task.ended = true;
  }
}

int AgentDaemon::task_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(tasks_.size());
}

bool AgentDaemon::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

void AgentDaemon::AdoptRecorded() {
  std::vector<RecoveredTask> found =
      CheckRecordedTasks(record_->entries(), *RealProcessTable(),
                         std::chrono::system_clock::now());
  std::lock_guard<std::mutex> lock(mu_);
  for (const RecoveredTask& r : found) {
    const TaskHandle& h = r.entry.handle;
    Task task;
    task.handle = h;
    task.start_time = UnixSeconds(h.start_time);
    const std::string name = TaskName(h.job_id, h.attempt, h.rank);
    if (r.alive()) {
      // Records older than the task shim lack the GPUs; the task's own
      // environment says (the shim's is the agent's).
      task.gpus = h.gpus.empty() ? GpusOfProcess(h.pid) : h.gpus;
      absl::Status s = launcher_->Adopt(h, r.entry.stop_requested,
                                        options_.grace);
      if (!s.ok()) {
        Log(absl::StrCat(name, ": cannot adopt pid ", h.pid, ": ",
                         s.ToString()));
        continue;  // stays in the record; retried by the next agent
      }
      Log(absl::StrCat(name, ": adopted running pid ", h.pid));
    } else {
      SweepDeadTaskGroup(h);
      task.ended = true;
      task.gpus = h.gpus;
      task.preempted = r.entry.stop_requested.has_value();
      if (r.exit->signal) {
        task.exit_code = 128 + *r.exit->signal;
      } else {
        task.exit_code = r.exit->exit_code;
      }
      task.end_time = UnixSeconds(r.exit->end_time);
      Log(absl::StrCat(name, ": exited while no agent ran (",
                       r.exit->Describe(), ")"));
    }
    tasks_[{h.job_id, h.attempt, h.rank}] = std::move(task);
  }
}

// An exit file no recorded task names was left by a crash between
// forgetting its task and removing it.
void AgentDaemon::RemoveStaleExitFiles() {
  std::set<std::string> recorded;
  for (const TaskRecordEntry& e : record_->entries()) {
    if (!e.handle.exit_path.empty()) recorded.insert(e.handle.exit_path);
  }
  std::error_code ec;
  const std::filesystem::path dir =
      std::filesystem::path(options_.state_dir) / "exits";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string path = entry.path().string();
    if (path.ends_with(".tmp")) path.resize(path.size() - 4);  // being written
    if (entry.is_regular_file(ec) && !recorded.contains(path)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

// session.json: "<node_id> <heartbeat_interval_ms>".
void AgentDaemon::LoadSession() {
  absl::StatusOr<std::optional<std::string>> text =
      RealFileStore()->Read(options_.state_dir + "/session.json");
  if (!text.ok() || !text->has_value()) return;
  std::vector<std::string> parts =
      absl::StrSplit(**text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  int64_t id = 0;
  int64_t interval_ms = 0;
  if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &id) &&
      absl::SimpleAtoi(parts[1], &interval_ms) && id > 0 && interval_ms > 0) {
    node_id_ = id;
    heartbeat_interval_ = std::chrono::milliseconds(interval_ms);
  }
}

void AgentDaemon::SaveSession() {
  absl::Status s = RealFileStore()->WriteAtomically(
      options_.state_dir + "/session.json",
      absl::StrCat(node_id_.load(), " ", heartbeat_interval_.count(), "\n"));
  if (!s.ok()) Log(absl::StrCat("cannot save the session: ", s.ToString()));
}

std::vector<v1::TaskStatus> AgentDaemon::Statuses() const {
  std::vector<v1::TaskStatus> out;
  for (const auto& [key, task] : tasks_) {
    v1::TaskStatus s;
    s.mutable_task()->set_job_id(std::get<0>(key));
    s.mutable_task()->set_attempt(std::get<1>(key));
    s.mutable_task()->set_rank(std::get<2>(key));
    s.set_state(!task.ended        ? v1::TASK_STATE_RUNNING
                : task.preempted   ? v1::TASK_STATE_PREEMPTED
                                   : v1::TASK_STATE_EXITED);
    for (int g : task.gpus) s.add_gpu_indexes(g);
    if (task.exit_code) s.set_exit_code(*task.exit_code);
    if (task.start_time) s.set_start_time(*task.start_time);
    if (task.end_time) s.set_end_time(*task.end_time);
    out.push_back(std::move(s));
  }
  return out;
}

bool AgentDaemon::Register(std::chrono::milliseconds retry_in) {
  v1::RegisterRequest req;
  req.set_name(options_.node_name);
  req.set_address(options_.advertised_address);
  req.set_log_address(log_address_);
  req.set_gpus(static_cast<int>(gpus_.size()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::RegisterResponse resp;
  grpc::Status s = stub_->get().Register(&ctx, req, &resp);
  if (!s.ok()) {
    Log(absl::StrCat("register with ", options_.master_address,
                     " failed (retry in ", retry_in.count(),
                     " ms): ", FromGrpc(s).ToString()));
    return false;
  }
  node_id_ = resp.node_id();
  if (resp.heartbeat_interval_seconds() > 0) {
    heartbeat_interval_ = std::chrono::milliseconds(static_cast<int64_t>(
        resp.heartbeat_interval_seconds() * 1000));
  }
  SaveSession();
  Log(absl::StrCat("registered as node ", resp.node_id(), " with ",
                   req.tasks_size(), " task(s); heartbeat every ",
                   heartbeat_interval_.count(), " ms"));
  for (const v1::Command& c : resp.commands()) Execute(c);
  return true;
}

absl::Status AgentDaemon::Heartbeat() {
  v1::HeartbeatRequest req;
  req.set_node_id(node_id_.load());
  req.set_log_address(log_address_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (v1::TaskStatus& s : Statuses()) *req.add_tasks() = std::move(s);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  v1::HeartbeatResponse resp;
  grpc::Status s = stub_->get().Heartbeat(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s);
  for (const v1::TaskRef& ref : resp.acknowledged()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find({ref.job_id(), ref.attempt(), ref.rank()});
    if (it == tasks_.end() || !it->second.ended) continue;
    if (it->second.handle) {
      absl::Status removed = record_->Remove(*it->second.handle);
      if (!removed.ok()) {
        Log(absl::StrCat("task record: ", removed.ToString()));
        continue;  // reported again; removal retried on the next ack
      }
      if (!it->second.handle->exit_path.empty()) {
        std::error_code ignored;
        std::filesystem::remove(it->second.handle->exit_path, ignored);
      }
    }
    tasks_.erase(it);
  }
  for (const v1::Command& c : resp.commands()) Execute(c);
  return absl::OkStatus();
}

void AgentDaemon::Execute(const v1::Command& command) {
  if (command.has_start()) StartTask(command);
  if (command.has_stop()) StopTasks(command);
}

void AgentDaemon::StartTask(const v1::Command& command) {
  const v1::StartTask& st = command.start();
  const TaskKey key{st.task().job_id(), st.task().attempt(), st.task().rank()};
  const std::string name =
      TaskName(st.task().job_id(), st.task().attempt(), st.task().rank());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tasks_.contains(key)) return;  // a repeated command
  }
  TaskSpec spec;
  spec.job_id = st.task().job_id();
  spec.attempt = st.task().attempt();
  spec.rank = st.task().rank();
  spec.world_size = st.world_size();
  spec.local_rank = st.local_rank();
  spec.gpus.assign(st.gpu_indexes().begin(), st.gpu_indexes().end());
  spec.argv.assign(st.command().begin(), st.command().end());
  spec.env.insert(st.env().begin(), st.env().end());
  spec.checkpoint_dir = st.checkpoint_dir();
  spec.restart_count = st.restart_count();
  spec.master_addr = st.master_addr();
  spec.master_port = st.master_port();
  spec.worker_addrs.assign(st.worker_addresses().begin(),
                           st.worker_addresses().end());
  spec.log_path = TaskLogPath(options_.state_dir + "/logs", spec.job_id,
                              spec.attempt, spec.rank);
  spec.exit_path =
      absl::StrCat(options_.state_dir, "/exits/job-", spec.job_id,
                   "-attempt-", spec.attempt, "-rank-", spec.rank, ".exit");
  Task task;
  task.gpus = spec.gpus;
  absl::StatusOr<TaskHandle> handle = launcher_->Start(spec);
  if (handle.ok()) {
    // Recorded before it is reported running, so that a restarted agent
    // knows about every task the master may think runs here.
    absl::Status put = record_->Put(TaskRecordEntry{*handle, std::nullopt});
    if (!put.ok()) Log(absl::StrCat(name, ": task record: ", put.ToString()));
    task.handle = *handle;
    task.start_time = UnixSeconds(handle->start_time);
    Log(absl::StrCat(name, ": started pid ", handle->pid, " on GPUs ",
                     absl::StrJoin(spec.gpus, ","), ", log ", spec.log_path));
  } else {
    // Reported as a task that exited with a failure; the user finds why in
    // the job's log.
    Log(absl::StrCat(name, ": cannot start: ", handle.status().ToString()));
    std::ofstream(spec.log_path, std::ios::app)
        << "tiresias agent: cannot start the task: "
        << handle.status().message() << "\n";
    const double now = UnixSeconds(std::chrono::system_clock::now());
    task.ended = true;
    task.exit_code = kStartFailedExitCode;
    task.start_time = now;
    task.end_time = now;
  }
  std::lock_guard<std::mutex> lock(mu_);
  tasks_[key] = std::move(task);
}

void AgentDaemon::StopTasks(const v1::Command& command) {
  const v1::StopTask& stop = command.stop();
  // An orphan is stopped like a cancelled task: it will not resume here.
  const StopReason reason = stop.reason() == v1::STOP_REASON_PREEMPT
                                ? StopReason::kPreempt
                                : StopReason::kCancel;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, task] : tasks_) {
    if (std::get<0>(key) != stop.job_id() ||
        std::get<1>(key) != stop.attempt() || task.ended || !task.handle) {
      continue;
    }
    const std::string name =
        TaskName(std::get<0>(key), std::get<1>(key), std::get<2>(key));
    // Recorded before signalling (see task_record.h).
    absl::Status marked = record_->MarkStopRequested(*task.handle, reason);
    if (!marked.ok()) {
      Log(absl::StrCat(name, ": task record: ", marked.ToString()));
    }
    absl::Status s = launcher_->RequestStop(*task.handle, reason,
                                            options_.grace);
    Log(absl::StrCat(name, ": stopping (", std::string(StopReasonName(reason)),
                     s.ok() ? "" : absl::StrCat(": ", s.ToString()), ")"));
  }
}

bool AgentDaemon::PollExits() {
  std::vector<TaskExit> exits = launcher_->PollAll();
  std::lock_guard<std::mutex> lock(mu_);
  for (const TaskExit& e : exits) {
    auto it = tasks_.find({e.handle.job_id, e.handle.attempt, e.handle.rank});
    if (it == tasks_.end()) continue;
    Task& task = it->second;
    task.ended = true;
    task.preempted = e.outcome == TaskOutcome::kPreempted ||
                     e.outcome == TaskOutcome::kCancelled;
    if (e.signal) {
      task.exit_code = 128 + *e.signal;
    } else if (e.exit_code) {
      task.exit_code = *e.exit_code;
    }
    task.end_time = UnixSeconds(e.end_time);
    Log(absl::StrCat(TaskName(e.handle.job_id, e.handle.attempt,
                              e.handle.rank),
                     ": ", e.Describe()));
  }
  return !exits.empty();
}

void AgentDaemon::Loop() {
  std::chrono::milliseconds backoff = options_.min_backoff;
  auto next_backoff = [&] {
    backoff = std::min(backoff * 2, options_.max_backoff);
  };
  // A saved node id is tried with a heartbeat first (see the header).
  bool registered = node_id_.load() != 0;
  auto last_beat = std::chrono::steady_clock::time_point{};
  bool changed = true;
  while (true) {
    if (!registered) {
      if (Register(backoff)) {
        registered = true;
        backoff = options_.min_backoff;
        last_beat = std::chrono::steady_clock::now();
        changed = true;
      } else {
        if (!Sleep(backoff)) return;
        next_backoff();
        continue;
      }
    }
    if (PollExits()) changed = true;
    const auto now = std::chrono::steady_clock::now();
    if (changed || now - last_beat >= heartbeat_interval_) {
      absl::Status s = Heartbeat();
      if (s.ok()) {
        backoff = options_.min_backoff;
        last_beat = now;
        changed = false;
      } else if (absl::IsNotFound(s)) {
        Log(absl::StrCat("master does not know node ", node_id_.load(),
                         ": registering again"));
        registered = false;
        continue;
      } else {
        Log(absl::StrCat("heartbeat to ", options_.master_address,
                         " failed (tasks keep running; retry in ",
                         backoff.count(), " ms): ", s.ToString()));
        if (!Sleep(backoff)) return;
        next_backoff();
        continue;
      }
    }
    if (!Sleep(std::min(options_.poll_interval, heartbeat_interval_))) return;
  }
}

}  // namespace tiresias
