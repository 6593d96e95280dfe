// The node agent daemon: runs on every GPU server, registers it with the
// master, heartbeats the status of the tasks it runs and carries out the
// master's StartTask / StopTask commands (see proto/tiresias.proto,
// AgentRegistry).
//
//   AgentOptions options;
//   options.master_address = "10.0.0.1:50051";
//   options.state_dir = "/var/lib/tiresias-agent";
//   AgentDaemon agent(options);
//   RETURN_IF_ERROR(agent.Start());  // discovery, record, adoption
//   ... until SIGTERM ...
//   agent.Stop();  // stops heartbeating and serving logs; tasks keep running
//
// State dir: tasks.json (the task record, task_record.h), session.json (the
// node id and heartbeat interval of the last registration), and
// logs/job-<id>-attempt-<a>-rank-<r>.log (each task's stdout and stderr,
// served to the master by an AgentLogs service, log_service.h) and
// exits/job-<id>-attempt-<a>-rank-<r>.exit (how each task ended, written by
// its shim, spawn.h; removed once the master has acknowledged the end).
//
// Restart: a new agent on the same state dir kills what is left of the
// process group of each recorded task whose shim is gone, adopts the tasks
// the record says still run, and first heartbeats with the saved node id:
// a master that still knows the node keeps its jobs running (no new
// StartTask). Only if
// the master answers NOT_FOUND (it restarted, or marked the node down) does
// the agent Register again, reporting those tasks.
//
// The master being unreachable never stops tasks: the agent keeps them
// running and retries with exponential backoff, logging one line per
// backoff step.
#ifndef TIRESIAS_AGENT_AGENT_DAEMON_H_
#define TIRESIAS_AGENT_AGENT_DAEMON_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/gpu_discovery.h"
#include "agent/launcher.h"
#include "agent/task_record.h"

namespace tiresias {

namespace v1 {
class RegisterRequest;
class TaskStatus;
class Command;
}  // namespace v1

struct AgentOptions {
  std::string master_address = "127.0.0.1:50051";  // host:port
  std::string node_name;  // empty: this machine's hostname
  // Host other nodes' job processes reach this one at (MASTER_ADDR).
  std::string advertised_address = "127.0.0.1";
  // host:port where the agent serves its tasks' logs to the master
  // (AgentLogs); port 0 picks a free one. Empty: advertised_address's host,
  // port 0. Advertised to the master as advertised_address's host with the
  // bound port.
  std::string log_listen;
  std::optional<int> emulate_gpus;  // --gpus N; nullopt: discover
  std::string state_dir;            // created if missing; required
  // SIGTERM to SIGKILL, for preemption and cancellation.
  std::chrono::milliseconds grace{30000};
  // How often exits are looked for between heartbeats; an exit is
  // heartbeated at once.
  std::chrono::milliseconds poll_interval{50};
  // Retry backoff while the master is unreachable: doubles from min to max.
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{10000};
  std::chrono::milliseconds rpc_timeout{5000};  // per Register/Heartbeat
  // One line per notable event; null: "tiresias agent: ..." on stderr.
  // Called from the agent's thread.
  std::function<void(std::string_view)> log;
};

// Thread-safety: Start and Stop from one thread; the accessors from any.
class AgentDaemon {
 public:
  explicit AgentDaemon(AgentOptions options);
  ~AgentDaemon();  // Stop()
  AgentDaemon(const AgentDaemon&) = delete;
  AgentDaemon& operator=(const AgentDaemon&) = delete;

  // Creates the state dir, discovers GPUs, loads the task record and adopts
  // the tasks that still run, then starts the agent's thread (register,
  // heartbeat, commands). Errors (no GPU found, corrupt record, state dir
  // not writable) leave nothing running. Call once.
  absl::Status Start();
  // Stops heartbeating and joins the thread; tasks keep running, for a
  // restarted agent to re-attach to. Idempotent.
  void Stop();

  // After Stop(): stops every task still running (SIGTERM, the grace
  // period, then SIGKILL), as a cancellation, waiting for each. For a local
  // cluster being torn down (`tiresias up`); a plain agent leaves its tasks
  // running for a restarted agent to adopt.
  void StopAllTasks();

  // The master's id for this node; 0 until registered.
  int64_t node_id() const { return node_id_.load(); }
  // Tasks started (or adopted) and not yet acknowledged as ended.
  int task_count() const;

 private:
  using TaskKey = std::tuple<int64_t, int, int>;  // job, attempt, rank
  struct Task {
    std::optional<TaskHandle> handle;  // absent: it failed to start
    std::vector<int> gpus;
    bool ended = false;
    bool preempted = false;  // ended after a stop we sent
    std::optional<int> exit_code;
    std::optional<double> start_time;  // Unix seconds
    std::optional<double> end_time;
  };

  void Loop();
  void Log(std::string_view line);
  // Waits `d` or until Stop(); false if stopping.
  bool Sleep(std::chrono::milliseconds d);
  // false: not registered (logged, with `retry_in`).
  bool Register(std::chrono::milliseconds retry_in);
  // OK, NotFound (register again) or another error (master unreachable).
  absl::Status Heartbeat();
  void Execute(const v1::Command& command);
  void StartTask(const v1::Command& command);
  void StopTasks(const v1::Command& command);
  bool PollExits();  // true if a task ended
  void AdoptRecorded();
  void RemoveStaleExitFiles();
  void SaveSession();
  void LoadSession();
  std::vector<v1::TaskStatus> Statuses() const;  // requires mu_

  AgentOptions options_;
  std::vector<GpuInfo> gpus_;
  std::unique_ptr<ProcessLauncher> launcher_;
  std::optional<TaskRecord> record_;
  std::unique_ptr<class AgentStub> stub_;
  std::unique_ptr<class AgentLogServer> log_server_;
  std::string log_address_;  // what Register and Heartbeat advertise

  mutable std::mutex mu_;  // tasks_, stopping_
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<TaskKey, Task> tasks_;

  std::atomic<int64_t> node_id_{0};
  std::chrono::milliseconds heartbeat_interval_{2000};
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_AGENT_DAEMON_H_
