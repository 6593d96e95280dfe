#include "master_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace tiresias::cluster_test {

namespace {

std::vector<std::string> MasterArgv(const std::string& binary,
                                    const std::string& state_dir,
                                    const std::vector<std::string>& extra) {
  // Root's test jobs checkpoint in the test's folder, not in root's home.
  std::vector<std::string> argv = {
      binary,        "master",    "--listen",   "127.0.0.1:0",
      "--state-dir", state_dir,   "--checkpoint-base",
      state_dir + "/checkpoints"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  // Plain text unless the test sets up TLS itself.
  const bool tls = std::any_of(extra.begin(), extra.end(), [](const auto& a) {
    return a == "--tls-dir" || a == "--init-ca" || a == "--insecure";
  });
  if (!tls) argv.push_back("--insecure");
  return argv;
}

}  // namespace

MasterProcess::MasterProcess(const std::string& binary,
                             const std::string& state_dir,
                             const std::vector<std::string>& extra,
                             const std::string& stderr_path)
    : DaemonProcess(MasterArgv(binary, state_dir, extra), "listening on ",
                    stderr_path) {}

DaemonProcess::DaemonProcess(std::vector<std::string> argv,
                             const std::string& marker,
                             const std::string& stderr_path) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (!stderr_path.empty()) {
      const int err = open(stderr_path.c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (err >= 0) dup2(err, STDERR_FILENO);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  out_fd_ = out[0];
  if (pid_ < 0) return;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) break;  // it exited
    output_.append(buf, static_cast<size_t>(n));
    const size_t at = output_.find(marker);
    if (at == std::string::npos) continue;
    const size_t end = output_.find_first_of(" /\n", at + marker.size());
    if (end == std::string::npos) continue;
    address_ = output_.substr(at + marker.size(), end - at - marker.size());
    return;
  }
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

int DaemonProcess::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

cli_test::ProcessResult RunClient(const std::string& binary,
                                  const MasterProcess& master,
                                  const std::string& command,
                                  const std::vector<std::string>& args) {
  std::vector<std::string> argv = {binary, command, "--master",
                                   master.address()};
  argv.insert(argv.end(), args.begin(), args.end());
  return cli_test::RunProcess(argv);
}

int MetricsPort(const DaemonProcess& master) {
  const std::string marker = "metrics on http://";
  const std::string& out = master.output();
  const size_t at = out.find(marker);
  if (at == std::string::npos) return 0;
  const size_t start = at + marker.size();
  const std::string address = out.substr(start, out.find('/', start) - start);
  return std::atoi(address.substr(address.rfind(':') + 1).c_str());
}

}  // namespace tiresias::cluster_test
