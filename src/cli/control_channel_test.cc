#include "cli/control_channel.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias::cli::control {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The payload of a frame (what follows its 4-byte length).
std::string Payload(const std::string& frame) {
  EXPECT_GE(frame.size(), 4u);
  const uint32_t n = static_cast<unsigned char>(frame[0]) |
                     static_cast<unsigned char>(frame[1]) << 8 |
                     static_cast<unsigned char>(frame[2]) << 16 |
                     static_cast<uint32_t>(static_cast<unsigned char>(frame[3]))
                         << 24;
  EXPECT_EQ(n, frame.size() - 4);
  return frame.substr(4);
}

TEST(ControlFrameTest, RequestsAndResponsesRoundTrip) {
  Request request{"/tiresias.v1.Tiresias/SubmitJob", "tsk_1_secret", 9.5,
                  std::string("\0\x01binary\xff", 9)};
  absl::StatusOr<Request> back = DecodeRequest(Payload(EncodeRequest(request)));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->method, request.method);
  EXPECT_EQ(back->token, request.token);
  EXPECT_EQ(back->timeout_seconds, 9.5);
  EXPECT_EQ(back->body, request.body);

  Response response{7, "not allowed", ""};
  absl::StatusOr<Response> got = DecodeResponse(Payload(EncodeResponse(response)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->code, 7);
  EXPECT_EQ(got->message, "not allowed");
  EXPECT_EQ(got->body, "");
}

TEST(ControlFrameTest, MalformedFramesAreRefused) {
  const std::string good =
      Payload(EncodeRequest({"/tiresias.v1.Tiresias/GetJob", "", 1, "x"}));
  // Every truncation, and one byte too many.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(DecodeRequest(good.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeRequest(good + "z").ok());
  std::string other_version = good;
  other_version[0] = 9;
  EXPECT_THAT(DecodeRequest(other_version).status().message(),
              HasSubstr("malformed request"));
  // A status code gRPC does not have.
  EXPECT_FALSE(DecodeResponse(Payload(EncodeResponse({17, "", ""}))).ok());
  EXPECT_FALSE(DecodeResponse(Payload(EncodeResponse({-1, "", ""}))).ok());
}

class ControlEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("control_endpoint_test_", getpid());
    fs::remove_all(dir_);
    setenv("TIRESIAS_CONTROL_DIR", (dir_ / "ctl").c_str(), 1);
    unsetenv("TIRESIAS_CONTROL_PERSIST");
  }
  void TearDown() override {
    unsetenv("TIRESIAS_CONTROL_DIR");
    unsetenv("TIRESIAS_CONTROL_PERSIST");
    fs::remove_all(dir_);
  }
  std::optional<Endpoint> For(const std::string& address,
                              const std::string& ca = "ca.pem") {
    return EndpointFor(address, ca, "", "", "");
  }
  fs::path dir_;
};

TEST_F(ControlEndpointTest, MakesAPrivateFolderAndOneSocketPerEndpoint) {
  fs::create_directories(dir_);
  std::optional<Endpoint> a = For("10.0.0.1:50051");
  ASSERT_TRUE(a.has_value());
  struct stat st;
  ASSERT_EQ(lstat((dir_ / "ctl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_THAT(a->socket, StartsWith((dir_ / "ctl" / "ctl-").string()));
  EXPECT_EQ(a->persist_seconds, 10);
  // The same endpoint, the same socket; another address or CA, another.
  EXPECT_EQ(For("10.0.0.1:50051")->socket, a->socket);
  EXPECT_NE(For("10.0.0.2:50051")->socket, a->socket);
  EXPECT_NE(For("10.0.0.1:50051", "other-ca.pem")->socket, a->socket);
}

TEST_F(ControlEndpointTest, OffWhenPersistIsZeroOrUnreadable) {
  fs::create_directories(dir_);
  setenv("TIRESIAS_CONTROL_PERSIST", "0", 1);
  EXPECT_FALSE(For("h:1").has_value());
  setenv("TIRESIAS_CONTROL_PERSIST", "ten", 1);
  EXPECT_FALSE(For("h:1").has_value());
  setenv("TIRESIAS_CONTROL_PERSIST", "2.5", 1);
  ASSERT_TRUE(For("h:1").has_value());
  EXPECT_EQ(For("h:1")->persist_seconds, 2.5);
}

// A socket in a folder someone else can write to, or that is not ours,
// could be a stranger's listening for our token: not used.
TEST_F(ControlEndpointTest, RefusesAFolderThatIsNotSafelyOurs) {
  fs::create_directories(dir_ / "ctl");
  chmod((dir_ / "ctl").c_str(), 0755);
  EXPECT_FALSE(For("h:1").has_value());
  chmod((dir_ / "ctl").c_str(), 0700);
  EXPECT_TRUE(For("h:1").has_value());

  fs::create_directories(dir_ / "real");
  chmod((dir_ / "real").c_str(), 0700);
  fs::create_symlink(dir_ / "real", dir_ / "link");
  setenv("TIRESIAS_CONTROL_DIR", (dir_ / "link").c_str(), 1);
  EXPECT_FALSE(For("h:1").has_value());

  if (geteuid() == 0) {  // only root can give a folder away
    fs::create_directories(dir_ / "theirs");
    chmod((dir_ / "theirs").c_str(), 0700);
    ASSERT_EQ(chown((dir_ / "theirs").c_str(), 65534, 65534), 0);
    setenv("TIRESIAS_CONTROL_DIR", (dir_ / "theirs").c_str(), 1);
    EXPECT_FALSE(For("h:1").has_value());
  }
}

TEST(ControlAnswerTest, OnlyRefusalsAndALostConnectionAreMadeDirectly) {
  EXPECT_TRUE(CallDirectly(
      {12, "the control channel does not forward /tiresias.v1.Admin/X", ""}));
  EXPECT_TRUE(
      CallDirectly({14, "the control process cannot reach the master", ""}));
  // The master's own answers stand, UNAVAILABLE and UNIMPLEMENTED included.
  EXPECT_FALSE(CallDirectly({12, "unknown method", ""}));
  EXPECT_FALSE(CallDirectly({14, "the control process went away during the "
                                 "call (the master may have carried it out)",
                             ""}));
  EXPECT_FALSE(CallDirectly({7, "not allowed", ""}));
  EXPECT_FALSE(CallDirectly({0, "", "body"}));
}

// The control process outlives the command that starts it, so its
// starting environment (readable in /proc/PID/environ) holds neither token
// variable; it keeps what its own TLS connection needs, the user
// certificate's files included, and everything else, in order. Names are
// matched whole: a variable that only begins like one is kept.
TEST(ControlEnvironmentTest, DropsEveryTokenVariableAndKeepsTheCertificate) {
  std::vector<std::string> entries = {
      "PATH=/usr/bin",
      "TIRESIAS_TOKEN=tsk_1_secret",
      "TIRESIAS_CA=/etc/tiresias/ca.pem",
      "TIRESIAS_TOKEN_FILE=/home/alice/.tiresias-token",
      "TIRESIAS_CERT=/home/alice/user.pem",
      "TIRESIAS_KEY=/home/alice/user-key.pem",
      "TIRESIAS_TOKENS=not a credential",
      "TIRESIAS_TOKEN_FILE_OLD=not a credential",
      "TIRESIAS_TOKEN",  // no '=': not a setting
      "TIRESIAS_MASTER=m:50051"};
  std::vector<char*> env;
  for (std::string& e : entries) env.push_back(e.data());
  env.push_back(nullptr);
  std::vector<char*> out = ControlProcessEnvironment(env.data());
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), nullptr);
  out.pop_back();
  std::vector<std::string> kept(out.begin(), out.end());
  EXPECT_THAT(kept, ::testing::ElementsAre(
                        "PATH=/usr/bin", "TIRESIAS_CA=/etc/tiresias/ca.pem",
                        "TIRESIAS_CERT=/home/alice/user.pem",
                        "TIRESIAS_KEY=/home/alice/user-key.pem",
                        "TIRESIAS_TOKENS=not a credential",
                        "TIRESIAS_TOKEN_FILE_OLD=not a credential",
                        "TIRESIAS_TOKEN", "TIRESIAS_MASTER=m:50051"));
  // The pointers are env's own.
  EXPECT_EQ(out[0], env[0]);
  // Every token variable of the one list, and only those, is dropped.
  for (const char* name : kClientTokenVariables) {
    for (const std::string& entry : kept) {
      EXPECT_FALSE(absl::StartsWith(entry, absl::StrCat(name, "=")))
          << entry;
    }
  }
  EXPECT_EQ(ControlProcessEnvironment(nullptr), std::vector<char*>{nullptr});
}

// A listener that is not our user never hears our token: the command
// checks who is at the other end before it writes.
TEST_F(ControlEndpointTest, AListenerOfAnotherUserGetsNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to listen as another user";
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0777);
  const std::string path = (dir_ / "stranger.sock").string();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener, 1) != 0) {
      _exit(4);
    }
    chmod(path.c_str(), 0777);
    (void)!write(ready[1], "x", 1);
    const int fd = accept(listener, nullptr, nullptr);
    char buffer[64];
    // 0: the command closed without a byte; 5: it sent us something.
    _exit(fd >= 0 && read(fd, buffer, sizeof buffer) == 0 ? 0 : 5);
  }
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  Endpoint endpoint{path, path + ".lock", path + ".last", 10};
  absl::StatusOr<Response> answer = Call(
      endpoint, {"/tiresias.v1.Tiresias/GetJob", "tsk_1_secret", 1, ""});
  EXPECT_TRUE(absl::IsUnavailable(answer.status())) << answer.status();
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the stranger heard our request";
}

TEST_F(ControlEndpointTest, ACallWithNobodyListeningIsUnavailable) {
  fs::create_directories(dir_);
  std::optional<Endpoint> endpoint = For("h:1");
  ASSERT_TRUE(endpoint.has_value());
  absl::StatusOr<Response> answer =
      Call(*endpoint, {"/tiresias.v1.Tiresias/GetJob", "", 1, ""});
  EXPECT_TRUE(absl::IsUnavailable(answer.status())) << answer.status();
}

}  // namespace
}  // namespace tiresias::cli::control
