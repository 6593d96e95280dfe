// The master process of bench/fleet_bench.cc: `tiresias master` started
// in its default (TLS made with --init-ca, tokens) on a state folder,
// killed and started again; its CPU time, threads and memory from /proc;
// its /metrics page read with a token.
#ifndef TIRESIAS_BENCH_FLEET_MASTER_H_
#define TIRESIAS_BENCH_FLEET_MASTER_H_

#include <sys/types.h>

#include <map>
#include <string>

namespace tiresias::fleet {

// A free TCP port on loopback (bound and released).
int FreePort();

struct Master {
  std::string binary,
      dir;  // `tiresias`, and the folder of state/ and master.log
  int port = 0, http_port = 0;
  pid_t pid = -1;

  void Start();  // forks `tiresias master`, its output in dir/master.log
  void Kill();   // SIGKILL, reaped
  void Stop();   // SIGTERM, reaped
  double CpuSeconds() const;        // utime + stime (/proc/PID/stat)
  std::string ThreadNames() const;  // "name xN, ..." (/proc/PID/task)
  // A number of /proc/PID/status ("Threads", "VmRSS" in kB); -1: none.
  long Status(const std::string& key) const;
};

// GET /metrics on loopback `port` with the bearer token: each sample
// line's value by its text before the value; empty on failure.
std::map<std::string, double> Metrics(int port, const std::string& token);

}  // namespace tiresias::fleet

#endif  // TIRESIAS_BENCH_FLEET_MASTER_H_
