#include "headless_browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace tiresias::cluster_test {

using nlohmann::json;

HeadlessBrowser::HeadlessBrowser(const std::filesystem::path& profile_dir) {
  std::filesystem::create_directories(profile_dir);
  std::vector<std::string> argv = HeadlessChromiumArgv(profile_dir);
  argv.push_back("--remote-debugging-pipe");
  argv.push_back("about:blank");
  const std::string log = (profile_dir / "chromium.log").string();
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int commands[2];  // we write [1], Chromium reads fd 3
  int answers[2];   // Chromium writes fd 4, we read [0]
  if (pipe2(commands, O_CLOEXEC) != 0 || pipe2(answers, O_CLOEXEC) != 0) {
    error_ = "pipe failed";
    return;
  }
  signal(SIGPIPE, SIG_IGN);  // a browser gone is an error, not our end
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);  // its helpers too go with the group
    const int in = dup(commands[0]);
    const int out = dup(answers[1]);
    dup2(in, 3);
    dup2(out, 4);
    const int null_in = open("/dev/null", O_RDONLY);
    dup2(null_in, STDIN_FILENO);
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(err, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    for (int fd = 5; fd < 1024; ++fd) close(fd);
    execv(args[0], args.data());
    _exit(127);
  }
  close(commands[0]);
  close(answers[1]);
  to_browser_ = commands[1];
  from_browser_ = answers[0];
  if (pid_ < 0) error_ = "fork failed";
}

HeadlessBrowser::~HeadlessBrowser() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
}

std::optional<json> HeadlessBrowser::Call(const std::string& method,
                                          json params, bool in_session) {
  const int id = next_id_++;
  json message = {
      {"id", id}, {"method", method}, {"params", std::move(params)}};
  if (in_session && !session_id_.empty()) message["sessionId"] = session_id_;
  std::string text = message.dump();
  text.push_back('\0');
  for (size_t sent = 0; sent < text.size();) {
    const ssize_t n =
        write(to_browser_, text.data() + sent, text.size() - sent);
    if (n <= 0) {
      error_ = "the browser closed its pipe";
      return std::nullopt;
    }
    sent += static_cast<size_t>(n);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    for (size_t end; (end = buffer_.find('\0')) != std::string::npos;) {
      json answer = json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      if (answer.is_object() && answer.value("id", -1) == id) return answer;
    }
    pollfd p{from_browser_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_browser_, chunk, sizeof chunk);
    if (n <= 0) {
      error_ = "the browser exited";
      return std::nullopt;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  error_ = method + ": no answer from the browser in 30 s";
  return std::nullopt;
}

bool HeadlessBrowser::Open(const std::string& url) {
  if (!started()) return false;
  std::optional<json> target =
      Call("Target.createTarget", {{"url", url}}, /*in_session=*/false);
  if (!target || !target->contains("result")) {
    if (target) error_ = target->dump();
    return false;
  }
  std::optional<json> attached =
      Call("Target.attachToTarget",
           {{"targetId", (*target)["result"]["targetId"]}, {"flatten", true}},
           /*in_session=*/false);
  if (!attached || !attached->contains("result")) {
    if (attached) error_ = attached->dump();
    return false;
  }
  session_id_ = (*attached)["result"]["sessionId"].get<std::string>();
  return true;
}

std::optional<json> HeadlessBrowser::Evaluate(const std::string& expression) {
  std::optional<json> answer =
      Call("Runtime.evaluate", {{"expression", expression},
                                {"awaitPromise", true},
                                {"returnByValue", true}});
  if (!answer) return std::nullopt;
  if (!answer->contains("result")) {  // e.g. between two documents
    error_ = answer->dump();
    return std::nullopt;
  }
  const json& result = (*answer)["result"];
  if (result.contains("exceptionDetails")) {
    error_ = result["exceptionDetails"].dump();
    return std::nullopt;
  }
  return result["result"].value("value", json());
}

bool HeadlessBrowser::WaitFor(const std::string& expression,
                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    std::optional<json> value = Evaluate(expression);
    if (value && *value == true) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  error_ = "timed out waiting for " + expression + " (" + error_ + ")";
  return false;
}

}  // namespace tiresias::cluster_test
