// A task's lease: the instant after which its task shim stops the task on
// its own (fencing: SIGTERM, the grace period, SIGKILL), because the agent
// has not heard from the master for too long. One 8-byte file per task,
// mapped shared by the agent, which renews it after every heartbeat that
// succeeds, and by the task's shim (spawn.h), which inherits the mapping
// when the agent forks it and checks it while it waits for the task. The
// shim keeps checking while the agent is stopped (SIGSTOP), partitioned
// from the master or dead, which is the point: the master gives the node's
// jobs to other nodes only after its node timeout, longer than lease +
// grace, so by then the tasks are gone.
//
// Times are CLOCK_BOOTTIME nanoseconds: the same for every process on the
// machine, never stepped, and still counting while the machine sleeps.
// kNoLease (the maximum) never expires.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<LeaseFile> lease,
//                    LeaseFile::Create(path, BootTimeNs() + lease_ns));
//   spawn.lease = lease->word();          // the shim watches this
//   ... after each successful heartbeat sent at t: lease->Renew(t + lease_ns)
#ifndef TIRESIAS_AGENT_LEASE_H_
#define TIRESIAS_AGENT_LEASE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

inline constexpr int64_t kNoLease = std::numeric_limits<int64_t>::max();

// clock_gettime(CLOCK_BOOTTIME) in nanoseconds.
int64_t BootTimeNs();

class LeaseFile {
 public:
  // Creates (or overwrites) the file at `path` holding `deadline_ns` and
  // the task's GPU indexes (after the deadline, as text: a restarted agent
  // that finds a lease it has no record of knows which GPUs its task may
  // hold), its folder too, and maps the deadline.
  static absl::StatusOr<std::unique_ptr<LeaseFile>> Create(
      const std::string& path, int64_t deadline_ns,
      const std::vector<int>& gpus = {});
  // Maps an existing lease file (a restarted agent taking over its
  // predecessor's tasks). NotFound if there is none.
  static absl::StatusOr<std::unique_ptr<LeaseFile>> Open(
      const std::string& path);
  ~LeaseFile();  // unmaps; the file stays (Remove deletes it)
  LeaseFile(const LeaseFile&) = delete;
  LeaseFile& operator=(const LeaseFile&) = delete;

  // Sets the deadline (an atomic store, seen by the shim at once).
  void Renew(int64_t deadline_ns);
  int64_t deadline_ns() const;
  // The mapped word, for the shim forked from this process.
  const int64_t* word() const { return word_; }
  const std::string& path() const { return path_; }
  // The GPU indexes written at Create (read back by Open).
  const std::vector<int>& gpus() const { return gpus_; }
  // Deletes the file (the task is over and forgotten).
  void Remove();

 private:
  LeaseFile(std::string path, int64_t* word) : path_(std::move(path)), word_(word) {}
  std::string path_;
  int64_t* word_;  // mapped, shared
  std::vector<int> gpus_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LEASE_H_
