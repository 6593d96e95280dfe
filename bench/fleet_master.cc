#include "fleet_master.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tiresias::fleet {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("fleet_bench: no free port"), std::exit(1);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

void Master::Start() {
  const std::string log = dir + "/master.log";
  pid = fork();
  if (pid < 0) std::perror("fleet_bench: fork"), std::exit(1);
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "a", stdout);
    FILE* err = std::freopen(log.c_str(), "a", stderr);
    (void)out;
    (void)err;
    const std::string listen = absl::StrCat("127.0.0.1:", port);
    const std::string http = absl::StrCat("127.0.0.1:", http_port);
    const std::string state = dir + "/state";
    const std::string tls = dir + "/state/tls";
    execl(binary.c_str(), binary.c_str(), "master", "--state-dir",
          state.c_str(), "--init-ca", tls.c_str(), "--listen", listen.c_str(),
          "--http-listen", http.c_str(), nullptr);
    std::perror("exec");
    _exit(127);
  }
}

void Master::Kill() {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  pid = -1;
}

void Master::Stop() {
  if (pid < 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  pid = -1;
}

double Master::CpuSeconds() const {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) {
      stime = std::atof(f.c_str());
      break;
    }
  }
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

std::string Master::ThreadNames() const {
  std::map<std::string, int> names;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(
           absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    ++names[name];
  }
  std::string out;
  for (const auto& [name, n] : names) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", name, " x", n);
  }
  return out;
}

long Master::Status(const std::string& key) const {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return std::atol(line.c_str() + key.size() + 1);
    }
  }
  return -1;
}

std::map<std::string, double> Metrics(int port, const std::string& token) {
  std::map<std::string, double> out;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return out;
  }
  const std::string request = absl::StrCat(
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ",
      token, "\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return out;
  }
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, n);
  close(fd);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(space + 1), &value)) {
      out[line.substr(0, space)] = value;
    }
  }
  return out;
}

}  // namespace tiresias::fleet
