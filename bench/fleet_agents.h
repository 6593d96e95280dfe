// The emulated agents of bench/fleet_bench.cc: N agents in one process,
// each with its own TLS connection and certificate (signed by the master's
// CA, as `admin agent-cert issue` makes them), speaking the agent protocol
// as `tiresias agent` does: Register with every task held, Heartbeat at the
// interval the master tells and at once on a change, one WatchDesiredState
// stream, reconnection after 0.2-1 s, the lease (a task is fenced when no
// heartbeat succeeded for it), report order (boot id, sequence). Tasks are
// not processes: one "runs" until the seconds of its command `sleep S`
// have passed (others until stopped), then reports EXITED 0. Everything is
// asynchronous (gRPC's callback API) and one thread ticks them all: no
// thread per agent.
#ifndef TIRESIAS_BENCH_FLEET_AGENTS_H_
#define TIRESIAS_BENCH_FLEET_AGENTS_H_

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "security/pki.h"

namespace tiresias::fleet {

// Steady seconds (the phases' clock).
double Now();

using Key = std::tuple<int64_t, int, int>;  // job, attempt, rank

// What the agents saw, all of them together.
struct Counters {
  std::atomic<long> registers{0}, register_failures{0};
  std::atomic<long> heartbeats{0}, heartbeat_failures{0};
  std::atomic<long> started{0}, exited{0};
  std::atomic<long> stopped{0};  // by the master: stop or left out
  std::atomic<long> fenced{0};   // by the agent's lapsed lease
  std::atomic<long> rejected{0};
};

class Fleet {
 public:
  // `agents` agents of `gpus` GPUs for the master at `address`, their
  // certificates signed by `ca` (exits naming the error if it cannot).
  // Given several addresses, a connection attempt may take `attempt_ms`
  // (security::DialOptions::several_masters_attempt_ms; agents ask 5000).
  Fleet(const std::string& address, const security::PemPair& ca, int agents,
        int gpus, int attempt_ms);
  ~Fleet();

  void StartTicking();
  void StopTicking();  // and ends the watch streams
  Counters& counters();
  // When each agent registered with a session begun at or after `since`
  // (Now()), and how many did.
  std::vector<double> RegistrationTimes(double since);
  int RegisteredSince(double since);
  std::set<Key> Running();  // tasks running now

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tiresias::fleet

#endif  // TIRESIAS_BENCH_FLEET_AGENTS_H_
