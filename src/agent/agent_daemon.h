// The node agent daemon: runs on every GPU server, registers it with the
// master and converges the tasks it runs to the master's desired state for
// the node (see proto/tiresias.proto, "Agent protocol").
//
//   AgentOptions options;
//   options.master_address = "10.0.0.1:50051";
//   options.state_dir = "/var/lib/tiresias-agent";
//   AgentDaemon agent(options);
//   RETURN_IF_ERROR(agent.Start());  // discovery, record, adoption
//   ... until SIGTERM ...
//   agent.Drain(timeout);  // hand the jobs back (they checkpoint), then stop
//
// Level-triggered: every heartbeat reports every task the agent has, and
// every answer carries the whole desired state. The agent starts what
// should run and has never run here, and stops what runs and should not. A
// desired state of another session, or older than the last one applied, is
// ignored; a task that ended is never started again (ended launch ids are
// remembered, kMaxRememberedEnds of them). The WatchDesiredState stream
// brings a change within milliseconds, but only as a wake-up: the agent
// then reports at once and acts on the answer, and starts a task only from
// an answer to a report it sent less than max_answer_age before (checked
// again before each start). So a late message (an agent stopped with
// SIGSTOP while one was in flight) never starts a launch cancelled since.
//
// Lease (lease.h): every task has a lease file its shim watches; the agent
// renews them all after each heartbeat that succeeds, to the heartbeat's
// send time + RegisterResponse.lease_seconds. An agent cut off from the
// master (partitioned, stopped, dead) stops renewing and the shims stop the
// tasks, before the master gives them to another node.
//
// State dir: lock (held by the running agent: one agent per state dir),
// tasks.json (the task record, task_record.h), session.json (the node id,
// session, heartbeat interval, lease and grace of the last registration),
// agent-token (this agent's identity: a random secret made on first start,
// mode 0600; a restarted agent proves with it that it is the same one),
// logs/job-<id>-attempt-<a>-rank-<r>.log (each task's stdout and stderr,
// served to the master by an AgentLogs service, log_service.h),
// exits/job-...exit (how each task ended, written by its shim, spawn.h) and
// leases/job-... (each task's lease); the last two are removed once the
// master has acknowledged the task's end.
//
// Restart: a new agent on the same state dir kills what is left of the
// process group of each recorded task whose shim is gone, adopts the tasks
// the record says still run (and their leases), and first heartbeats with
// the saved session: a master that still knows it keeps its jobs running.
// Only if the master answers NOT_FOUND (it restarted, or declared the node
// lost) does the agent Register again, reporting those tasks.
//
// The master being unreachable does not stop tasks at once: the agent
// retries with exponential backoff (a line per step) until the lease lapses.
//
// Tasks run as their owner (run_as.h): an agent running as root runs each
// task as the Unix account of its job's owner (StartTask.owner), mapped by
// user_map_file if given; a task it must refuse (no owner, no such
// account, root without allow_root_tasks) is reported as failing to start
// (exit code 127), the reason in its log. An agent not running as root
// runs tasks as itself, and says so once at start.
#ifndef TIRESIAS_AGENT_AGENT_DAEMON_H_
#define TIRESIAS_AGENT_AGENT_DAEMON_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/gpu_discovery.h"
#include "agent/launcher.h"
#include "agent/lease.h"
#include "agent/task_record.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "security/tls.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace tiresias {

namespace v1 {
class DesiredState;
class StartTask;
class TaskStatus;
class TrafficProfile;
}  // namespace v1

struct AgentDependencies;  // agent_dependencies.h

struct AgentOptions {
  std::string master_address = "127.0.0.1:50051";  // host:port
  // The agent's identity (its node's certificate) and the cluster's CA,
  // for talking to the master and serving logs to it alone. Insecure:
  // plain text (the master must be --insecure too).
  security::TlsConfig tls = security::InsecureTlsConfig();
  std::string node_name;  // empty: this machine's hostname
  // Host other nodes' job processes reach this one at (MASTER_ADDR).
  std::string advertised_address = "127.0.0.1";
  // host:port where the agent serves its tasks' logs to the master
  // (AgentLogs); port 0 picks a free one. Empty: advertised_address's host,
  // port 0. Advertised to the master as advertised_address's host with the
  // bound port.
  std::string log_listen;
  std::optional<int> emulate_gpus;  // --gpus N; nullopt: discover
  // The model of its GPUs told to the master (RegisterRequest.gpu_model);
  // empty: the first GPU's name as discovered ("Emulated GPU" when
  // emulated). And its features (--feature), for jobs' --constraint.
  std::string gpu_model;
  std::vector<std::string> features;
  // Memory the node's GPUs share out to jobs (--memory), MiB; 0: the
  // machine's (sysconf). Jobs' --mem-per-gpu is matched against it.
  int64_t memory_mib = 0;
  // Created if missing; required. 0711 (an existing one is set so, and
  // what lies in it closed to group and others, security/private_files.h):
  // only the agent reads it, but tasks running as other accounts must
  // traverse it to their profile file (profiles/, 0711) and to their
  // fallback checkpoint folder (checkpoints/<account>, 0700).
  std::string state_dir;
  // Where accounts without a usable home checkpoint by default
  // (checkpoint_dir.h); empty: <state_dir>/checkpoints. `tiresias up`
  // gives its agents one folder, so a job resumes on any of them.
  std::string checkpoint_fallback_dir;
  // SIGTERM to SIGKILL, for every stop (preemption, cancellation, fencing,
  // shutdown). Told to the master, which shortens the lease by it.
  std::chrono::milliseconds grace{30000};
  // When a profiled task still running is read for its profile: once the
  // profiler has stopped recording it (RecordingLimits::seconds_per_process,
  // 300 s) and a margin. Tests shorten it.
  std::chrono::milliseconds profile_read_after{305000};
  // How often exits are looked for between heartbeats; an exit is
  // heartbeated at once.
  std::chrono::milliseconds poll_interval{10};
  // Retry backoff while the master is unreachable: doubles from min to max
  // (each wait +-20%). Short, so that a master back after any outage is
  // found within seconds (the channel itself reconnects at least every
  // second: agent_dependencies.cc).
  std::chrono::milliseconds min_backoff{200};
  std::chrono::milliseconds max_backoff{2000};
  std::chrono::milliseconds rpc_timeout{5000};  // per Register/Heartbeat
  // Tasks are started only from an answer to a report sent less than this
  // before (an agent stopped or slowed down meanwhile re-reports instead).
  std::chrono::milliseconds max_answer_age{5000};
  // Owner -> account map (run_as.h), read at Start (malformed: Start
  // fails). Empty: every owner runs as the account of the same name.
  std::string user_map_file;
  // Run tasks whose account is root (uid 0); refused otherwise.
  bool allow_root_tasks = false;
  // Each task in cgroups of its own (cgroups.h: its node's other GPUs
  // denied, its memory-kill reported, what it left killed), under
  // tiresias/<node>. kAuto: when the agent can make them (root, a
  // hierarchy mounted and writable: v2 where it is the machine's only
  // one, else v1), else it logs why and runs tasks without; kOn: the same
  // choice, but Start fails without; kV1, kV2: that one or Start fails;
  // kOff: never.
  enum class Cgroups { kAuto, kOn, kOff, kV1, kV2 };
  Cgroups cgroups = Cgroups::kAuto;
  // With cgroups: each task's memory limit, per GPU it was given; a task
  // past it is killed by the kernel and reported out of memory. 0: an
  // equal share per GPU of the memory told to the master (MeasureResources).
  int64_t memory_per_gpu_bytes = 0;
  // With cgroups: a task with GPUs is bound to this many CPUs per GPU, a
  // block of its own per GPU (CpusForGpus of the CPUs the agent may use);
  // 0: an even share of them; -1: no binding.
  int cpus_per_gpu = 0;
  // CPUs kept out of every GPU's block for CPU-only jobs (`submit --gpus 0
  // --cpus N`): the last this many of the CPUs the agent may use (at most
  // all but one per GPU), told to the master as the node's spare CPUs;
  // the GPUs' blocks are made of the rest. With cgroups, a CPU-only task
  // is bound to that many of them (PosixLauncherOptions::spare_cpus).
  // 0: none (the node takes no CPU-only job).
  int spare_cpus = 0;
  // The memory kept with them (bytes), out of what GPUs' slices share;
  // -1: their share of the memory by CPU count.
  int64_t spare_memory_bytes = -1;
  // Container tasks (JobSpec.image; container.h, image_store.h): podman,
  // whose store the images come from, and the OCI runtime (paths, or names
  // looked up in PATH); where the node's GPU device nodes are. Prepared
  // images go to <state_dir>/images, bundles to <state_dir>/containers.
  std::string podman = "podman";
  std::string container_runtime = "crun";
  std::string gpu_device_dir = "/dev";
  // Folders below which jobs may name a root file system folder as their
  // image (ImageStoreOptions::folders); none: only images of podman's.
  std::vector<std::string> image_folders;
  // Prefixes a named image must start with (ImageStoreOptions::allow).
  std::vector<std::string> image_allow;
  // One line per notable event; null: "tiresias agent: ..." on stderr.
  // Called from the agent's threads.
  std::function<void(std::string_view)> log;
};

// Thread-safety: Start, Stop, Drain from one thread; the accessors from any.
class AgentDaemon {
 public:
  // Ended launch ids remembered after the master acknowledged them, so
  // that a late or repeated desired state can never start them again.
  static constexpr size_t kMaxRememberedEnds = 4096;

  // With RealAgentDependencies() (agent_dependencies.h).
  explicit AgentDaemon(AgentOptions options);
  // With `deps`' launcher, files and master stub (each made at Start).
  AgentDaemon(AgentOptions options, AgentDependencies deps);
  ~AgentDaemon();  // Stop()
  AgentDaemon(const AgentDaemon&) = delete;
  AgentDaemon& operator=(const AgentDaemon&) = delete;

  // Creates the state dir, reads the user map, discovers GPUs, loads the
  // task record and adopts the tasks that still run, then starts the
  // agent's threads (register, heartbeat, desired state). Errors (a
  // malformed user map, no GPU found, corrupt record, state dir not
  // writable) leave nothing running. Call once.
  absl::Status Start();
  // Stops heartbeating and joins the threads; tasks keep running, for a
  // restarted agent to re-attach to (until their lease lapses).
  // Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Hands the node's jobs back: tells the master the agent is leaving (it
  // starts nothing more here and preempts what runs here), stops every
  // task itself as well (SIGTERM, the grace period, SIGKILL: the jobs
  // checkpoint), reports their ends, and returns once the master has
  // acknowledged them all or `timeout` passed, then Stop(). OK if every
  // end was acknowledged; DeadlineExceeded otherwise (the ends stay in the
  // task record and are reported by the next agent on this state dir).
  absl::Status Drain(std::chrono::milliseconds timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drain in two steps, for stopping several agents at once: BeginDrain
  // returns at once; WaitDrained waits as Drain does.
  void BeginDrain() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WaitDrained(std::chrono::milliseconds timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Not OK once the master refused this agent's configuration (a grace
  // that does not fit its node timeout, more GPUs than it allows, a bad
  // name, a certificate for another node or none): the agent has stopped
  // trying; its tasks keep running until their leases lapse.
  absl::Status fatal() const ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return fatal_;
  }
  // True once a drain has handed every task back (see Drain).
  bool drained() const ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return drained_;
  }
  // The master's id for this node; 0 until registered.
  int64_t node_id() const { return node_id_.load(); }
  // The subtree of the tasks' cgroups ("tiresias/<node>-<hash of the state
  // dir>"); empty without cgroups. Set by Start.
  const std::string& cgroup_parent() const { return cgroup_parent_; }
  // Tasks started (or adopted) and not yet acknowledged as ended.
  int task_count() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using TaskKey = std::tuple<int64_t, int, int>;  // job, attempt, rank
  struct Task {
    std::optional<TaskHandle> handle;  // absent: it failed to start
    std::vector<int> gpus;
    std::unique_ptr<LeaseFile> lease;  // null: none (failed, or old record)
    bool ended = false;
    // Set once we asked it to stop (the master, or our own shutdown), or
    // its shim fenced it: it is reported PREEMPTED with this reason.
    std::optional<int> stop_reason;  // a v1::StopReason
    std::optional<int> exit_code;
    bool out_of_memory = false;        // TaskExit::out_of_memory
    // Its cgroup's latest reading (ReadTaskUsage), or the final one.
    std::optional<CgroupUsage> usage;
    std::optional<double> start_time;  // Unix seconds
    std::optional<double> end_time;
    // Started under the traffic profiler (StartTask.profile): what it
    // measured, read once the task ended; absent if nothing could be read.
    bool profiled = false;
    bool profile_read = false;  // read while it ran (ReadRunningProfiles)
    std::shared_ptr<const v1::TrafficProfile> profile;
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  void WatchLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Log(std::string_view line);
  // Waits `d`, until Stop(), or until something for the loop arrives;
  // false if stopping.
  bool Sleep(std::chrono::milliseconds d) ABSL_LOCKS_EXCLUDED(mu_);
  // false: not registered (logged, with `retry_in`).
  bool Register(std::chrono::milliseconds retry_in) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether to heartbeat again at once (it started or stopped a task, or
  // the last task of a draining agent was acknowledged); NotFound (register
  // again) or another error (master unreachable).
  absl::StatusOr<bool> Heartbeat() ABSL_LOCKS_EXCLUDED(mu_);
  // Renews every task's lease from a call sent at `sent_ns` (boot time).
  void RenewLeases(int64_t sent_ns) ABSL_LOCKS_EXCLUDED(mu_);
  // Applies `desired`, the answer to a report sent at `sent_ns` (boot
  // time), if it is of the current session and not older than the last
  // applied: a whole state replaces desired_run_, a delta against the
  // version held is applied to it (one against another version is not:
  // report again to get the whole state). True if a task was started or
  // stopped (or a start was put off because the answer is stale, or a delta
  // could not be applied: report again).
  bool ApplyDesired(const v1::DesiredState& desired, int64_t sent_ns)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool StartTask(const v1::StartTask& start) ABSL_LOCKS_EXCLUDED(mu_);
  // An interactive task's session (StartTask.io); null for a batch task.
  absl::StatusOr<std::shared_ptr<class TaskIoSession>> MakeTaskIo(
      const v1::StartTask& start, const std::string& name);
  // The process group of a task running here (TaskIoHooks::running_pgid).
  std::optional<pid_t> RunningPgid(const TaskKey& key) ABSL_LOCKS_EXCLUDED(mu_);
  void RequestStop(const TaskKey& key, Task& task, int reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops every task not already being stopped, for a shutdown.
  void StopAllForShutdown() ABSL_LOCKS_EXCLUDED(mu_);
  void Acknowledge(const TaskKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool PollExits() ABSL_LOCKS_EXCLUDED(mu_);  // true if a task ended
  // Reads the profile of each profiled task still running once its
  // recording has stopped (the profiler's time limit, plus a margin), so
  // that a long job is placed by its skew before it ends; true if one was
  // read (report it).
  bool ReadRunningProfiles() ABSL_LOCKS_EXCLUDED(mu_);
  // Every kUsageReadInterval, what each running task used so far (its
  // cgroup), for the next report; never a report of its own.
  void ReadTaskUsage() ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr std::chrono::seconds kUsageReadInterval{5};
  std::chrono::steady_clock::time_point next_usage_read_{};  // Loop's own
  void AdoptRecorded() ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveStaleFiles() ABSL_LOCKS_EXCLUDED(mu_);
  // Cgroups (agent_cgroups.cc): whether tasks get them (options_.cgroups),
  // set in `launcher` if so; and at Start, the groups a previous agent
  // left for tasks no longer running removed. The parent folder is
  // "tiresias/<node>-<hash of the state dir>".
  absl::Status SetUpCgroups(PosixLauncherOptions& launcher);
  // InvalidArgument unless --spare-cpus leaves the GPUs (if any) at least
  // one of the CPUs this agent may use.
  absl::Status CheckSpareCpus() const;
  absl::StatusOr<std::map<std::string, std::string>> ChooseCgroupHierarchy()
      const;
  // The CPUs and memory told to the master (RegisterRequest.cpus,
  // memory_mib), from what SetUpCgroups chose: the CPUs of the GPUs'
  // blocks when tasks are bound, else those the agent may use; --memory,
  // else the machine's. With cgroups and no --mem-per-gpu, a task that
  // asks no memory is held to its GPUs' equal shares of it (so that no
  // job takes what another was promised): launcher.memory_per_gpu.
  void MeasureResources(PosixLauncherOptions& launcher);
  void RemoveStaleCgroups() ABSL_LOCKS_EXCLUDED(mu_);
  // At Stop: the parent folder, if no task's groups are left in it (tasks
  // kept running for the next agent keep it).
  void RemoveCgroupParent();
  void SaveSession() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether an answer with leader epoch `epoch` may be acted on (0: a
  // master before epochs); a higher one is followed from now on (saved
  // with the session). Says why when not.
  absl::Status AcceptEpoch(uint64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);
  void LoadSession() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status LoadOrCreateToken();
  // Holds <state>/lock (flock) for the agent's life: one agent per dir.
  absl::Status LockStateDir();
  // When a lease that lapses at `deadline_ns` has certainly been fenced.
  int64_t FencedBy(int64_t deadline_ns) const;
  std::string LeasePath(const TaskKey& key) const;
  // Where a profiled task's traffic records go:
  // <state>/profiles/job-J-attempt-A-rank-R.prof.
  std::string ProfilePath(const TaskKey& key) const;
  // Adds the profiler's variables to `spec` (a task the master asked to
  // profile); false (logged) if the library cannot be found: the task runs
  // unprofiled.
  bool AddProfiler(const TaskKey& key, TaskSpec& spec);
  std::vector<v1::TaskStatus> Statuses() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  AgentOptions options_;
  std::unique_ptr<AgentDependencies> deps_;  // never null
  std::vector<GpuInfo> gpus_;
  // The hierarchies and subtree of the tasks' cgroups (SetUpCgroups);
  // empty mounts: none. Written by Start before the threads, constant
  // after.
  std::map<std::string, std::string> cgroup_mounts_;
  std::string cgroup_parent_;
  int report_cpus_ = 0;  // MeasureResources; constant after Start
  int64_t report_memory_mib_ = 0;
  int report_spare_cpus_ = 0;  // for CPU-only jobs; constant after Start
  int64_t report_spare_memory_mib_ = 0;
  // False on a v2 hierarchy without the memory controller: no memory is
  // offered to jobs (MeasureResources). Set by SetUpCgroups.
  bool memory_limited_ = true;
  std::unique_ptr<ProcessLauncher> launcher_;
  std::optional<TaskRecord> record_;
  std::unique_ptr<class AgentStub> stub_;
  std::unique_ptr<class AgentLogServer> log_server_;
  // Interactive tasks' I/O (task_io.h), served by log_server_.
  std::unique_ptr<class TaskIoRegistry> io_sessions_;
  // Container images prepared on this node (image_store.h); made at Start.
  std::unique_ptr<class ImageStore> images_;
  std::string log_address_;  // what Register and Heartbeat advertise
  std::string token_;        // this agent's identity (agent-token)
  std::string boot_id_;      // this machine's boot; empty if unknown
  int lock_fd_ = -1;         // <state>/lock, flock'ed
  // The report_seq of the last report built (RegisterRequest.report_seq).
  // Only the Loop thread builds reports.
  uint64_t last_report_seq_ = 0;
  uint64_t NextReportSeq();

  mutable Mutex mu_;
  SteadyCondVar cv_;  // signalled when what the loops wait on changes
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  // The master acknowledged every end while draining.
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);  // see fatal()
  std::map<TaskKey, Task> tasks_ ABSL_GUARDED_BY(mu_);
  // As the launcher's: whom tasks run as. Not guarded: set by Start before
  // the threads, constant after.
  RunAsPolicy run_as_;
  // Acknowledged ends remembered, and their order (oldest first, to forget).
  std::set<TaskKey> ended_keys_ ABSL_GUARDED_BY(mu_);
  std::deque<TaskKey> ended_order_ ABSL_GUARDED_BY(mu_);
  uint64_t session_ ABSL_GUARDED_BY(mu_) = 0;  // of the current registration
  // The highest leader epoch a master answered with (RegisterResponse.
  // epoch), kept in session.json: an answer of a lower one comes from a
  // master that lost the lead, and is refused whole.
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // The master answered a call of this session since this agent started
  // (a saved session is not confirmed until then).
  bool session_confirmed_ ABSL_GUARDED_BY(mu_) = false;
  // A heartbeat with leaving=true succeeded.
  bool leaving_told_ ABSL_GUARDED_BY(mu_) = false;
  // Of the last desired state applied.
  uint64_t applied_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The tasks that should run here as of applied_version_ (a delta is
  // applied to it; a whole state replaces it).
  std::map<TaskKey, v1::StartTask> desired_run_ ABSL_GUARDED_BY(mu_);
  // The stream said the desired state changed.
  bool poked_ ABSL_GUARDED_BY(mu_) = false;
  // The open stream's.
  grpc::ClientContext* watch_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The lease length told at Register (0: unknown), and the deadline of
  // the last renewal.
  int64_t lease_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t lease_deadline_ns_ ABSL_GUARDED_BY(mu_) = kNoLease;

  std::atomic<int64_t> node_id_{0};
  // Not guarded: only the Loop thread reads and writes it (Register and
  // Heartbeat, and LoadSession in Start before the threads).
  std::chrono::milliseconds heartbeat_interval_{2000};
  std::thread thread_;
  std::thread watch_thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_AGENT_DAEMON_H_
