// Test-only: a real etcd server (Debian's etcd-server, installed by
// scripts/setup.sh) on loopback ports of its own, with its data in a test
// folder; killed with the object. Freeze()/Thaw() stop and continue it
// (SIGSTOP/SIGCONT), as a stalled or cut-off member. With `tls`, clients
// speak TLS to it and must show a certificate its CA signed.
#ifndef TIRESIAS_MASTER_ETCD_TEST_SERVER_H_
#define TIRESIAS_MASTER_ETCD_TEST_SERVER_H_

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/etcd_client.h"

namespace tiresias::master_testing {

inline constexpr char kEtcdBinary[] = "/usr/bin/etcd";

// A loopback port nobody listens on now.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

// PEM files: the server's certificate and key, the CA that signs the
// clients' certificates (and the server's), and a client's, used to see
// it answer.
struct EtcdTestTls {
  std::string cert_file, key_file, ca_file;
  std::string client_cert_file, client_key_file;
};

class EtcdTestServer {
 public:
  // Starts it and waits until it answers (fails the test if it does not).
  explicit EtcdTestServer(const std::string& data_dir,
                          const EtcdTestTls& tls = {}) {
    if (access(kEtcdBinary, X_OK) != 0) {
      ADD_FAILURE() << kEtcdBinary
                    << " is missing: run scripts/setup.sh (etcd-server)";
      return;
    }
    const int client_port = FreePort();
    const int peer_port = FreePort();
    endpoint_ = absl::StrCat("127.0.0.1:", client_port);
    const std::string client =
        absl::StrCat(tls.cert_file.empty() ? "http://" : "https://", endpoint_);
    const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port);
    std::vector<std::string> args = {kEtcdBinary,
                                     "--name",
                                     "t",
                                     "--data-dir",
                                     data_dir,
                                     "--listen-client-urls",
                                     client,
                                     "--advertise-client-urls",
                                     client,
                                     "--listen-peer-urls",
                                     peer,
                                     "--initial-advertise-peer-urls",
                                     peer,
                                     "--initial-cluster",
                                     absl::StrCat("t=", peer),
                                     "--log-level",
                                     "error"};
    if (!tls.cert_file.empty()) {
      args.insert(args.end(),
                  {"--cert-file", tls.cert_file, "--key-file", tls.key_file,
                   "--trusted-ca-file", tls.ca_file, "--client-cert-auth"});
    }
    const std::string log = data_dir + ".log";
    pid_ = fork();
    if (pid_ == 0) {
      // Its chatter to a file beside its data, not the test's output.
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(kEtcdBinary, argv.data());
      _exit(127);
    }
    // A fresh channel each try: one that met the port closed waits out
    // gRPC's reconnect backoff.
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<std::unique_ptr<EtcdClient>> c =
          EtcdClient::Connect({.endpoints = {endpoint_},
                               .ca_file = tls.ca_file,
                               .cert_file = tls.client_cert_file,
                               .key_file = tls.client_key_file,
                               .timeout = std::chrono::milliseconds(300)});
      if (c.ok() && (*c)->Range("probe").ok()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "etcd did not answer at " << endpoint_;
  }
  ~EtcdTestServer() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  EtcdTestServer(const EtcdTestServer&) = delete;
  EtcdTestServer& operator=(const EtcdTestServer&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  void Freeze() { kill(pid_, SIGSTOP); }
  void Thaw() { kill(pid_, SIGCONT); }

 private:
  pid_t pid_ = -1;
  std::string endpoint_;
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_MASTER_ETCD_TEST_SERVER_H_
