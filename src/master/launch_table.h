// The master's agent-protocol table: every launch (attempt) of a job with
// its parts (one task per node), every node the master knows with its
// registration, and the tasks agents report that no launch names
// (orphans). It knows nothing of jobs, the scheduler or the store: it keeps
// what was placed where, what each agent said, and what each node's desired
// state version is, and it classifies each reported end (PartEnd) so that
// MasterState can apply it to the job in one place (MasterState::ApplyEnd).
//
// Three state machines, each an enum with one transition function and a
// table of legal moves (LegalMove); an illegal move is a bug, reported as
// an error by the Move functions (tests) and fatal inside the master
// (MoveOrDie: a table that contradicts itself must not go on deciding):
//
//   Part   kPlaced -> kRunning -> kEnded;  kPlaced -> kEnded (never ran).
//   Launch kDeferred -> kActive -> kStopping (-> kStopping: a new reason).
//   Node   kKnown (loaded from the store, not registered since the master
//          started) -> kUp <-> kLeaving; kUp/kLeaving -> kDown (lost or
//          gone cleanly) -> kUp (registered again); kKnown -> kDown (never
//          came back within the node timeout).
//
// Not thread-safe: MasterState holds it under its mutex.
#ifndef TIRESIAS_MASTER_LAUNCH_TABLE_H_
#define TIRESIAS_MASTER_LAUNCH_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/time.h"
#include "master/job_record.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// (job, attempt) of a launch; (job, attempt, rank) of a task.
using LaunchKey = std::pair<JobId, int>;
using TaskKey = std::tuple<JobId, int, int>;

// Where a part (one rank's task) is.
//   kPlaced   in its launch, not reported running yet;
//   kRunning  reported RUNNING (or later) at some point;
//   kEnded    reported ended, or its node was lost (`ran` says whether it
//             had been running).
enum class PartState { kPlaced, kRunning, kEnded };
// Where a launch is:
//   kDeferred  decided; waits for its GPUs and for the job's earlier
//              attempts to end; nothing was sent to any agent;
//   kActive    released: its parts are in their nodes' desired states
//              (once durable) until they end;
//   kStopping  its parts that have not ended are being stopped
//              (stop_reason says why).
// kDeferred launches are erased when preempted or cancelled, the others
// once every part has ended.
enum class LaunchPhase { kDeferred, kActive, kStopping };
// Where a node's agent is (see the file comment).
enum class NodeLife { kKnown, kUp, kLeaving, kDown };

std::string_view PartStateName(PartState state);      // "placed", ...
std::string_view LaunchPhaseName(LaunchPhase phase);  // "deferred", ...
std::string_view NodeLifeName(NodeLife life);         // "known", ...
bool LegalMove(PartState from, PartState to);
bool LegalMove(LaunchPhase from, LaunchPhase to);
bool LegalMove(NodeLife from, NodeLife to);
// FailedPrecondition "<what>: illegal move <from> -> <to>" unless legal;
// on OK, `state` is `to`.
absl::Status Move(PartState& state, PartState to, std::string_view what);
absl::Status Move(LaunchPhase& state, LaunchPhase to, std::string_view what);
absl::Status Move(NodeLife& state, NodeLife to, std::string_view what);

class LaunchTable {
 public:
  // One part of a launch: the task of one rank, on one node.
  struct Part {
    int64_t node_id = 0;  // 0: not known yet (being re-adopted)
    std::vector<int> local_gpus;
    PartState state = PartState::kPlaced;
    bool ran = false;  // reached kRunning at some point
    // It ended on its own (exited with a code, before any stop reached it;
    // the agent judges that by the task's end time against the stop's
    // delivery), not by a stop of ours or the system's.
    bool own_end = false;
    std::optional<int> exit_code;
    std::optional<Seconds> start_time;  // agent's clock
    std::optional<Seconds> end_time;    // agent's clock
    // Its task's latest usage reading (TaskStatus.cpu_seconds,
    // memory_peak_bytes); added to the job's record as it ends.
    double cpu_seconds = 0;
    int64_t memory_peak_bytes = 0;

    bool running() const { return ran; }  // reported running at some point
    bool ended() const { return state == PartState::kEnded; }
    // kRunning at `start` (a no-op once running or ended).
    void MarkRunning(Seconds start);
    // kEnded (a no-op once ended).
    void MarkEnded();
  };

  // One launch (attempt) of a job.
  struct Launch {
    JobId job = 0;
    int attempt = 0;
    std::vector<Part> parts;  // rank order
    LaunchPhase phase = LaunchPhase::kDeferred;
    v1::StopReason stop_reason = v1::STOP_REASON_UNSPECIFIED;
    bool all_running = false;  // every part reported RUNNING at some point
    // The write that released it (its attempt and nodes) is on disk: only
    // then is it in its nodes' desired states.
    bool durable = false;
    Seconds stop_decided{0};  // when a preemption was decided
    // Its stop counted a preemption in the job's record: taken back if
    // every task turns out to have ended on its own first.
    bool preemption_counted = false;
    // A gang whose rank exited non-zero while others ran: they are being
    // stopped, and the job's fate waits until every rank has ended. It is
    // a preemption if a rank was stopped by the system (its peers may have
    // failed because of it), else a failure with the first exit code.
    std::optional<std::pair<int, int>> first_failure;  // rank, exit code
    bool system_stopped = false;  // a rank ended by a system stop
    // Its tasks run under the traffic profiler (StartTask.profile).
    bool profile = false;
    // The ports its processes listen on, on each of its nodes: MASTER_PORT
    // is first_port, and process p's worker address first_port + p. Chosen
    // when it is decided (ChoosePorts), in memory only: a launch re-adopted
    // after a restart is taken to hold its default ones
    // (MasterState::AdoptOrOrphan). 0: none known (skipped by ChoosePorts).
    int first_port = 0;
    int port_span = 0;
    // The best profile a rank of it reported (BetterProfile): its run for
    // PACKLIMIT learning.
    std::optional<JobProfile> measured;

    LaunchKey key() const { return {job, attempt}; }
    bool AllEnded() const;
    bool AllOwnEnds() const;  // every part ended on its own
    // The latest end_time any part reported; nullopt if none.
    std::optional<Seconds> LatestEnd() const;
    void SetPhase(LaunchPhase next);  // MoveOrDie
  };

  struct Node {
    NodeRecord record;
    std::string log_address;  // its AgentLogs service (Register, Heartbeat)
    // Its GPUs' model and features, as its agent last registered them
    // (what jobs' node filters are matched against).
    std::string gpu_model;
    std::vector<std::string> features;
    int cpus = 0;            // RegisterRequest.cpus
    int64_t memory_mib = 0;  // RegisterRequest.memory_mib
    int spare_cpus = 0;      // RegisterRequest.spare_cpus
    int64_t spare_memory_mib = 0;
    NodeLife life = NodeLife::kKnown;
    uint64_t session = 0;  // of its current registration; 0: none
    Seconds lease{0};      // its agent's lease (RegisterResponse), this session
    uint64_t version = 0;  // of its desired state, within the session
    // The newest report applied: its agent's boot and sequence (see
    // RegisterRequest.report_seq).
    std::string report_boot_id;
    uint64_t report_seq = 0;
    // When the master last heard from it (monotonic: see clock.h); the
    // node timeout counts from here. record.last_heartbeat is for people.
    Seconds last_heard{0};
    // Live tasks its agent reports that no launch part names: being
    // stopped, and holding their GPUs until they end.
    std::map<TaskKey, std::vector<int>> orphans;
    // What its agent was last answered (Register, Heartbeat): the version
    // and the tasks of `run` at that version. A heartbeat naming this
    // version (HeartbeatRequest.desired_version) is answered with a delta
    // against it; 0: nothing answered in this session yet.
    uint64_t told_version = 0;
    std::set<TaskKey> told_run;

    // Registered since this master started and not lost.
    bool up() const {
      return life == NodeLife::kUp || life == NodeLife::kLeaving;
    }
    // Its agent is shutting down: no new launches.
    bool leaving() const { return life == NodeLife::kLeaving; }
    void SetLife(NodeLife next);  // MoveOrDie
  };

  // ---- Launches ----
  const std::map<LaunchKey, Launch>& launches() const { return launches_; }
  Launch* Find(LaunchKey key);
  const Launch* Find(LaunchKey key) const;
  // Adds `launch` (its key must be new) and returns it.
  Launch& Add(Launch launch);
  // The first of `span` ports for `launch` (placed, not yet added): from
  // `preferred` up, wrapping within [base, base + window), past the ports
  // of every launch not ended that shares a node with it, so that two
  // launches never listen on one port of a node (a job's default port is
  // a function of its id and attempt, and ids 625 apart share it).
  // `preferred` if no span is free. O(parts on its nodes).
  int ChoosePorts(const Launch& launch, int span, int preferred, int base,
                  int window) const;
  // The launch being re-adopted after a restart: made active and durable
  // with `ranks` empty parts if absent.
  Launch& Adopted(LaunchKey key, int ranks);
  // Places rank `rank` of `launch` (a part with no node yet: being
  // re-adopted) on node `node_id`.
  Part& PlacePart(Launch& launch, int rank, int64_t node_id);
  void Erase(LaunchKey key);
  // The launches still deferred, in key order: O(them + those released
  // since the last call), not O(launches).
  std::vector<LaunchKey> DeferredLaunches();
  // (launch, rank) of every part placed on node `node_id` (ended ones
  // too), in launch order: O(parts there), not O(launches). A part's node
  // is set only by Add and PlacePart, which keep this index.
  const std::set<std::pair<LaunchKey, int>>& PartsOn(int64_t node_id) const;
  // Visits every launch of `job`; `visit` may not add or erase launches.
  template <typename F>
  void ForEachLaunchOf(JobId job, F&& visit) {
    for (auto it = launches_.lower_bound({job, 0});
         it != launches_.end() && it->first.first == job; ++it) {
      visit(it->second);
    }
  }
  // Released launches of `job` with a part that has not ended.
  bool AnyLive(JobId job) const;
  // Another attempt of launch's job (released or not) with a part that has
  // not ended, or a task of the job an agent reports that no launch names.
  bool OtherAttemptLive(const Launch& launch) const;
  // Moves `launch` to kStopping for `reason`; its nodes' desired states
  // then list it as stopping.
  void Stop(Launch& launch, v1::StopReason reason);
  // A human summary: "attempt 2 on node-a GPUs 0,1; node-b GPUs 0".
  std::string Describe(const Launch& launch) const;

  // ---- Nodes ----
  const std::map<int64_t, Node>& nodes() const { return nodes_; }
  Node* FindNode(int64_t id);
  const Node* FindNode(int64_t id) const;
  Node* FindNodeByName(std::string_view name);
  // Strikes off `names` the nodes up now (a restart's nodes still to hear
  // from, of one job: a few, each found by name).
  void EraseUpNodes(std::set<std::string>* names);
  // The node with this id, added (kKnown) if absent, found by `name` from
  // now on (the caller sets its record's name to it).
  Node& NodeAt(int64_t id, std::string_view name);
  template <typename F>
  void ForEachNode(F&& visit) {
    for (auto& [id, node] : nodes_) visit(id, node);
  }
  std::string NodeName(int64_t id) const;  // empty if unknown
  // GPU -> launch (or orphan) holding it, on one node; {0,0}: free.
  std::vector<LaunchKey> BusyGpus(int64_t node_id) const;
  // Aborted if a report of this boot at least as new as (boot_id, seq)
  // was already applied for the node; else records it as the newest.
  static absl::Status CheckReportOrder(Node& node, const std::string& boot_id,
                                       uint64_t seq);
  // Replaces the node's orphans (and their count by job).
  void SetOrphans(Node& node, std::map<TaskKey, std::vector<int>> orphans);
  bool HasOrphans(JobId job) const { return orphans_by_job_.contains(job); }

  // ---- Desired states ----
  // The desired state of the node (of every node of `launch`) changed: its
  // version grows at once, so that equal versions have equal content.
  void Touch(const Launch& launch);
  void TouchNode(int64_t node_id);
  // True (and reset) if any desired state changed since the last call.
  bool TakeDesiredChanged();
  // Describes one task to start for the desired state: whether its job is
  // still wanted (known to the job side) and, if `start` is not null, its
  // StartTask filled (command, environment, GPUs, addresses, ...).
  using FillStart =
      absl::FunctionRef<bool(const Launch& launch, int rank,
                             v1::StartTask* start)>;
  // What node `node_id` should run: its session and version, a StartTask
  // for each part of an active, durable launch there (`fill` wants it),
  // and one StopTask per launch being stopped there. With `known` (the
  // tasks of `run` at the version its agent holds) a delta: `run` only the
  // tasks not in `known` (a StartTask never changes within its launch),
  // `removed` those of `known` no longer wanted. `keys` (if set) gets every
  // task that should run. O(parts on the node); a StartTask is filled only
  // for a task sent. Empty for an unknown node.
  v1::DesiredState DesiredStateOf(int64_t node_id,
                                  const std::set<TaskKey>* known,
                                  std::set<TaskKey>* keys,
                                  FillStart fill) const;
  // The answer to node `node_id`'s report naming `held` (0: none): a delta
  // against the version it was last answered with, if that is `held`, else
  // the whole state; records what it answered (Node::told_*).
  v1::DesiredState AnswerDesired(int64_t node_id, uint64_t held,
                                 FillStart fill);

  // ---- Agent reports ----
  // What one task status did to the table (Apply).
  struct Applied {
    enum class Kind {
      kNotAPart,      // no released launch has this rank on this node
      kAlreadyEnded,  // the part had ended before
      kProgress,      // the part lives (it may have just started running)
      kEnded,         // the part ended now
    };
    Kind kind = Kind::kNotAPart;
    Launch* launch = nullptr;  // kAlreadyEnded, kProgress, kEnded
    bool ack = false;          // the agent should be told it was taken
    bool started = false;      // the part moved to kRunning now
  };
  // Applies task status `task` from node `node_id` to its part: running
  // (at its reported start, or `now`), ended (own end, exit code, end
  // time). Touches the launch's nodes when a part ends. Reported profiles
  // are the caller's.
  Applied Apply(int64_t node_id, const v1::TaskStatus& task, Seconds now);
  // Whether `task` says its process ran: running or exiting, or ended with
  // a reported start and not as a failed spawn (kStartFailedExitCode). A
  // task still starting, or one stopped before it started, has not.
  static bool ShowsRun(const v1::TaskStatus& task);
  // Whether a status of (job, attempt, rank) from node `node_id` names a
  // live part of a released launch there.
  bool IsLivePart(int64_t node_id, const TaskKey& task) const;
  // Parts of `node_id` its agent did not report (absent from `present`)
  // that must count as ended: ones that ran, and ones being stopped (they
  // never will run). Key and rank of each.
  std::vector<std::pair<LaunchKey, int>> Unreported(
      int64_t node_id, const std::set<TaskKey>& present) const;
  // Every part on `node_id` that has not ended ends now (its node is lost:
  // its tasks were fenced, or it went cleanly), its launch marked
  // system-stopped and touched. Returns the launches affected (released
  // ones only: nothing of a deferred launch was sent).
  std::vector<LaunchKey> LosePartsOn(int64_t node_id, Seconds now);
  // After the post-restart adoption window: parts whose node never
  // reported in (node 0) have ended.
  void EndUnadoptedParts();

  // How a part's end (Apply gave kEnded) bears on its job: what MasterState
  // must do. `job_open`: the job is unfinished; `adopting`: it is being
  // re-adopted after a restart.
  enum class EndKind {
    kGangWaits,            // a gang failure waits for its other ranks
    kGangDecided,          // ... and every rank has now ended
    kOwnEndWhileStopping,  // being stopped, but every task ended on its own
    kStopEnded,            // a stop (ours, or the job ended) reached every part
    kStopWaits,            // ... not yet every part
    kFinished,             // every part exited 0
    kFinishWaits,          // this part exited 0, others still run
    kStartFailed,          // kStartFailedExitCode before every part ran
    kSystemStop,           // stopped by nobody here (shutdown, fence, lost)
    kRankFailed,           // a non-zero exit while other ranks still run
    kFailed,               // a non-zero exit, every part ended
  };
  // Also marks the launch system-stopped when this end was a system stop.
  static EndKind ClassifyEnd(Launch& launch, const v1::TaskStatus& task,
                             bool job_open, bool adopting);
  // A task that ended without a status from us or a recorded exit: its
  // agent shut down, was fenced or lost it.
  static bool IsSystemStop(const v1::TaskStatus& task);

  // Exit code agents report for a task whose command could not be started.
  static constexpr int kStartFailedExitCode = 127;

 private:
  std::map<LaunchKey, Launch> launches_;
  // Launches added deferred, less those seen released or erased (a launch
  // never goes back to deferred): DeferredLaunches.
  std::set<LaunchKey> deferred_;
  std::map<int64_t, Node> nodes_;
  // Node name -> id (NodeAt): a registration finds its node in O(1).
  absl::flat_hash_map<std::string, int64_t> id_of_name_;
  // Node id -> (launch, rank) of the parts placed there (PartsOn).
  std::map<int64_t, std::set<std::pair<LaunchKey, int>>> parts_by_node_;
  // How many orphans each job has over every up node (Node::orphans).
  std::map<JobId, int> orphans_by_job_;
  bool desired_changed_ = false;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_LAUNCH_TABLE_H_
