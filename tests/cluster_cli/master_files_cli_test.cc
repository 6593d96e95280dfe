// `tiresias master` and its open-file limit (issue 27): a connection per
// agent and per client, so a shell's default limit would refuse agents past
// it, silently. The master raises its soft limit to the hard one, warns at
// start when even that is small, says so while the limit is nearly used
// up, and exports both numbers on /metrics. A real master under prlimit,
// real TCP connections to its gRPC port, its own log and /metrics.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_process.h"

namespace tiresias::cluster_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class MasterFilesTest : public ::testing::Test {
 protected:
  // `tiresias master` under `prlimit --nofile=SOFT:HARD`, insecure, with
  // /metrics on a port of its own.
  void Start(int soft, int hard) {
    log_ = dir_.path() / "master.log";
    master_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{
            "/usr/bin/prlimit",
            "--nofile=" + std::to_string(soft) + ":" + std::to_string(hard),
            TIRESIAS_BINARY, "master", "--insecure", "--listen", "127.0.0.1:0",
            "--state-dir", (dir_.path() / "state").string(), "--http-listen",
            "127.0.0.1:0"},
        "listening on ", log_.string());
    ASSERT_FALSE(master_->address().empty()) << master_->output();
    const std::string address = master_->address();
    port_ = std::stoi(address.substr(address.rfind(':') + 1));
    metrics_port_ = MetricsPort(*master_);
    ASSERT_GT(metrics_port_, 0) << master_->output();
  }

  // name -> value of /metrics' samples without labels.
  std::map<std::string, double> Metrics() {
    httplib::Client client("127.0.0.1", metrics_port_);
    auto res = client.Get("/metrics");
    EXPECT_TRUE(res && res->status == 200);
    std::map<std::string, double> values;
    if (!res) return values;
    for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
      double value;
      if (parts.size() == 2 && absl::SimpleAtod(parts[1], &value)) {
        values[std::string(parts[0])] = value;
      }
    }
    return values;
  }

  // A TCP connection to the master's gRPC port, held open (closed by the
  // fixture): one descriptor in the master once it has accepted it.
  void Connect() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    connections_.push_back(fd);
  }

  void TearDown() override {
    for (int fd : connections_) close(fd);
  }

  static bool WaitFor(const std::function<bool()>& done,
                      std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }

  test_support::TestDir dir_{"tiresias-master-files"};
  std::filesystem::path log_;
  std::unique_ptr<DaemonProcess> master_;
  int port_ = 0;
  int metrics_port_ = 0;
  std::vector<int> connections_;
};

// A shell's soft limit under a roomy hard one: raised, said on /metrics,
// and no warning.
TEST_F(MasterFilesTest, TheSoftLimitIsRaisedToTheHardOne) {
  ASSERT_NO_FATAL_FAILURE(Start(256, 8192));
  const std::map<std::string, double> m = Metrics();
  EXPECT_EQ(m.at("tiresias_master_open_files_limit"), 8192);
  EXPECT_GT(m.at("tiresias_master_open_files"), 3);
  EXPECT_LT(m.at("tiresias_master_open_files"), 256);
  EXPECT_THAT(ReadFile(log_), Not(HasSubstr("open files")));
}

// A hard limit of 160: a warning at start; then, with the limit nearly
// used up by connections, a warning in the log within the 10 s check, and
// /metrics counting them.
TEST_F(MasterFilesTest, ALimitNearlyUsedUpIsSaid) {
  ASSERT_NO_FATAL_FAILURE(Start(160, 160));
  EXPECT_THAT(ReadFile(log_),
              HasSubstr("WARNING: at most 160 open files (its hard limit)"));
  const double before = Metrics().at("tiresias_master_open_files");
  for (int i = 0; i < 150 - static_cast<int>(before); ++i) {
    ASSERT_NO_FATAL_FAILURE(Connect());
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(log_).find("of 160 open files in use") !=
               std::string::npos;
      },
      std::chrono::seconds(25)))
      << ReadFile(log_);
  const std::map<std::string, double> m = Metrics();
  EXPECT_GE(m.at("tiresias_master_open_files"), 145);
  EXPECT_EQ(m.at("tiresias_master_open_files_limit"), 160);
}

}  // namespace
}  // namespace tiresias::cluster_test
