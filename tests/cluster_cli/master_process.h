// Daemons of the `tiresias` binary running as child processes for the length
// of a test: started on 127.0.0.1 port 0, ready once they printed the address
// they serve on, stopped with a signal (SIGKILL from the destructor if still
// running).
#ifndef TIRESIAS_TESTS_CLUSTER_CLI_MASTER_PROCESS_H_
#define TIRESIAS_TESTS_CLUSTER_CLI_MASTER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "subprocess.h"

namespace tiresias::cluster_test {

// Any long-running child that announces where it serves on stdout.
class DaemonProcess {
 public:
  // Runs argv[0] with `argv` and waits (up to 30 s) for `marker` on its
  // stdout: address() is what follows it, up to a space, '/' or newline.
  // stderr goes to `stderr_path` when given (to read back what it logged),
  // else stays the test's. On failure address() is empty and output() says
  // what it printed.
  DaemonProcess(std::vector<std::string> argv, const std::string& marker,
                const std::string& stderr_path = "");
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  const std::string& address() const { return address_; }
  // What it printed on stdout until it was ready.
  const std::string& output() const { return output_; }
  bool running() const { return pid_ > 0; }

  // Sends `signal` and waits up to 30 s for the exit. Returns the exit
  // status, or -1 if it died of a signal or did not exit (then killed).
  int Stop(int signal);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string address_;
  std::string output_;
};

// `tiresias master` as a DaemonProcess.
class MasterProcess : public DaemonProcess {
 public:
  // Runs `binary master --listen 127.0.0.1:0 --state-dir state_dir extra...`
  // (plus --insecure unless `extra` sets up TLS with --tls-dir or
  // --init-ca) and waits for its "listening on HOST:PORT" line.
  MasterProcess(const std::string& binary, const std::string& state_dir,
                const std::vector<std::string>& extra = {},
                const std::string& stderr_path = "");
};

// A 127.0.0.1 port nothing listens on (bound, then closed).
int UnusedPort();

// The port of the master's /metrics, from its "metrics on http://HOST:PORT/"
// line (--http-listen); 0 if it printed none.
int MetricsPort(const DaemonProcess& master);

// Runs `binary command --master <master's address> args...` to its end.
cli_test::ProcessResult RunClient(const std::string& binary,
                                  const MasterProcess& master,
                                  const std::string& command,
                                  const std::vector<std::string>& args = {});

}  // namespace tiresias::cluster_test

#endif  // TIRESIAS_TESTS_CLUSTER_CLI_MASTER_PROCESS_H_
