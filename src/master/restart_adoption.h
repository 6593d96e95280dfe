// RestartAdoption: what a master restart leaves to settle, as bookkeeping.
// A restarted master does not start again what was running when it
// stopped: it adopts those jobs from what re-registering agents report,
// within an adoption window (the node timeout, moved on by the master's
// own stalls). Until that window ends:
//   - the jobs being adopted, and by node name the ones with a part there
//     (each registration looks at its own), and those whose GPUs a
//     rebuild found taken (tried again at each registration);
//   - the fences: waiting jobs whose last launch may still be stopping on
//     nodes not heard from since, which get no new launch until those
//     nodes reported in or the window closed;
//   - the jobs cancelled before the restart while their tasks ran, with
//     their nodes not heard from: they end once those reported in.
//
// It decides nothing and touches no launch, record or scheduler:
// MasterState (master_adoption.cc and the agent protocol) tells it what
// it loaded, heard and did, and asks it. Node names it is handed are
// crossed off by the master's launch table (LaunchTable::EraseUpNodes),
// through the sets FenceOf and CancelNodesOf give.
//
//   RestartAdoption restart;
//   restart.Open(now + node_timeout);
//   restart.Adopt(7, {"n1", "n2"});
//   for (JobId id : restart.AdoptingOn("n1")) { ... }  // 7
//   restart.StopAdopting(7);  // adopted (or given up)
//   if (restart.Due(now)) for (JobId id : restart.Close()) { ... }
//
// Not thread-safe: MasterState holds it under its mutex.
#ifndef TIRESIAS_MASTER_RESTART_ADOPTION_H_
#define TIRESIAS_MASTER_RESTART_ADOPTION_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/time.h"

namespace tiresias {

class RestartAdoption {
 public:
  // The window opens (at a start): it ends at `deadline` (monotonic).
  void Open(Seconds deadline) {
    deadline_ = deadline;
    closed_ = false;
  }
  // The master stood still for `stall`: an open window ends that much
  // later, so that the reports that waited for the master come first.
  void Stall(Seconds stall) { deadline_ += stall; }
  // Whether the window is open and its deadline has come at `now`.
  bool Due(Seconds now) const { return !closed_ && now >= deadline_; }
  // Whether the window closed (only Close closes it: the clock alone
  // never does).
  bool closed() const { return closed_; }
  // Closes the window. Returns the jobs still being adopted, in id order
  // (the master gives each up); the per-node lists and conflicts go. The
  // fences and cancels stay, each lifted at its next look.
  std::vector<JobId> Close();

  // Job `id`, live at the restart with parts on `nodes`, is being adopted.
  void Adopt(JobId id, const std::vector<std::string>& nodes);
  bool Adopting(JobId id) const { return adopting_.contains(id); }
  // Every job being adopted, in id order.
  std::vector<JobId> AdoptingJobs() const;
  // The jobs still being adopted with a part on `node`, in the order
  // they were adopted (those no longer adopted leave its list here).
  std::vector<JobId> AdoptingOn(const std::string& node);
  // Job `id` is adopted no more (adopted whole, given up, or stopped).
  void StopAdopting(JobId id) {
    adopting_.erase(id);
    conflicts_.erase(id);
  }
  // A rebuild found the GPUs of job `id` (being adopted) taken: it is
  // tried again at each registration until adopted or given up.
  void Conflict(JobId id) {
    if (adopting_.contains(id)) conflicts_.insert(id);
  }
  // Those, in id order.
  std::vector<JobId> Conflicts() const {
    return {conflicts_.begin(), conflicts_.end()};
  }

  // Job `id` (waiting) may still have a launch stopping on `nodes` (not
  // empty), not heard from since the restart: its next launch waits.
  void Fence(JobId id, std::set<std::string> nodes);
  bool Fenced(JobId id) const { return fences_.contains(id); }
  // Its nodes not heard from yet (the master crosses off those heard
  // from), or null when it has no fence.
  std::set<std::string>* FenceOf(JobId id);
  void Unfence(JobId id) { fences_.erase(id); }

  // Job `id` was cancelled before the restart while its tasks ran on
  // `nodes`: it ends once they reported in (or the window closed) and
  // nothing of it runs.
  void CancelAfterRestart(JobId id, std::set<std::string> nodes);
  bool CancellingAfterRestart(JobId id) const { return cancels_.contains(id); }
  // Those jobs, in id order.
  std::vector<JobId> CancellingJobs() const;
  // Its nodes not heard from yet, or null when it is not one of them.
  std::set<std::string>* CancelNodesOf(JobId id);
  void EndCancel(JobId id) { cancels_.erase(id); }

  // Job `id` ended or was cancelled: nothing of the restart's is left for
  // it.
  void Forget(JobId id) {
    StopAdopting(id);
    fences_.erase(id);
    cancels_.erase(id);
  }

 private:
  Seconds deadline_{0};
  bool closed_ = false;
  std::set<JobId> adopting_;
  std::map<std::string, std::vector<JobId>> adopting_on_;
  std::set<JobId> conflicts_;
  std::map<JobId, std::set<std::string>> fences_;
  std::map<JobId, std::set<std::string>> cancels_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_RESTART_ADOPTION_H_
