// What the preloaded traffic profiler (src/profiler, libtiresias_profiler.so)
// costs a job: the same sends timed without the library, with it preloaded
// but off (no TIRESIAS_PROFILE_OUT), and recording.
//
//   BM_SendSmall: send() of 64 bytes on a Unix socket pair, and recv() of
//     them in the same thread: the per-call cost, which the library adds to.
//   BM_WriteSocket: write() of 4 KiB on a socket, read back.
//   BM_WriteNull: write() of 64 bytes to /dev/null: a descriptor that is
//     not a socket (looked up, ignored).
//   BM_PsIteration: one worker's push in a parameter-server iteration of
//     ResNet-50: its 161 parameter tensors (97.5 MiB), one send each, to a
//     reader thread that drains the socket: the sending side's CPU time of
//     an iteration's messages (copying them into the kernel), the least an
//     iteration can cost, against which the per-message cost is compared.
//
// Run without arguments (from the build folder: bench/profiler_bench) it
// runs itself in each mode, interleaved (plain, off, recording, plain, ...)
// for $TIRESIAS_PROFILER_BENCH_ROUNDS rounds (default 3), and prints the
// comparison: the minimum CPU time over every run of a mode. Google
// Benchmark flags (e.g. --benchmark_repetitions=3, --benchmark_filter=Ps)
// are passed on. The recording runs write their records to a temporary
// file, removed at the end.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"

extern char** environ;

namespace {

constexpr char kModeEnv[] = "TIRESIAS_PROFILER_BENCH_MODE";

// ResNet-50's parameter tensors, in elements (torchvision).
const std::vector<uint64_t>& ResNet50() {
  static const auto* const kTensors = new std::vector<uint64_t>{
      9408,    64,   64,   4096,    64,   64,   36864,   64,   64,
      16384,   256,  256,  16384,   256,  256,  16384,   64,   64,
      36864,   64,   64,   16384,   256,  256,  16384,   64,   64,
      36864,   64,   64,   16384,   256,  256,  32768,   128,  128,
      147456,  128,  128,  65536,   512,  512,  131072,  512,  512,
      65536,   128,  128,  147456,  128,  128,  65536,   512,  512,
      65536,   128,  128,  147456,  128,  128,  65536,   512,  512,
      65536,   128,  128,  147456,  128,  128,  65536,   512,  512,
      131072,  256,  256,  589824,  256,  256,  262144,  1024, 1024,
      524288,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 262144,  256,  256,  589824,  256,  256,
      262144,  1024, 1024, 524288,  512,  512,  2359296, 512,  512,
      1048576, 2048, 2048, 2097152, 2048, 2048, 1048576, 512,  512,
      2359296, 512,  512,  1048576, 2048, 2048, 1048576, 512,  512,
      2359296, 512,  512,  1048576, 2048, 2048, 2048000, 1000};
  return *kTensors;
}

struct SocketPair {
  SocketPair() {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) abort();
  }
  ~SocketPair() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2];
};

void ReadExactly(int fd, char* buf, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) abort();
    got += static_cast<size_t>(r);
  }
}

void BM_SendSmall(benchmark::State& state) {
  SocketPair pair;
  char buf[64] = {};
  for (auto _ : state) {
    if (send(pair.fds[0], buf, sizeof buf, 0) != sizeof buf) abort();
    ReadExactly(pair.fds[1], buf, sizeof buf);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SendSmall);

void BM_WriteSocket(benchmark::State& state) {
  SocketPair pair;
  std::vector<char> buf(4096);
  for (auto _ : state) {
    if (write(pair.fds[0], buf.data(), buf.size()) !=
        static_cast<ssize_t>(buf.size())) {
      abort();
    }
    ReadExactly(pair.fds[1], buf.data(), buf.size());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WriteSocket);

void BM_WriteNull(benchmark::State& state) {
  const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  char buf[64] = {};
  for (auto _ : state) {
    if (write(fd, buf, sizeof buf) != sizeof buf) abort();
  }
  close(fd);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WriteNull);

void BM_PsIteration(benchmark::State& state) {
  SocketPair pair;
  std::thread reader([fd = pair.fds[1]] {
    std::vector<char> buf(1 << 20);
    while (read(fd, buf.data(), buf.size()) > 0) {
    }
  });
  uint64_t largest = 0;
  for (uint64_t n : ResNet50()) largest = std::max(largest, n * 4);
  std::vector<char> tensor(largest, 1);
  for (auto _ : state) {
    for (uint64_t n : ResNet50()) {
      const size_t bytes = n * 4;
      for (size_t sent = 0; sent < bytes;) {
        const ssize_t r =
            send(pair.fds[0], tensor.data() + sent, bytes - sent, 0);
        if (r <= 0) abort();
        sent += static_cast<size_t>(r);
      }
    }
  }
  shutdown(pair.fds[0], SHUT_WR);
  reader.join();
  state.counters["messages"] = static_cast<double>(ResNet50().size());
}
BENCHMARK(BM_PsIteration)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// --- the driver: this program in each mode ----------------------------------

struct Mode {
  const char* name;
  bool preload;
  bool record;
};

// Runs this program in `mode`; its results (JSON) go to `out`.
bool RunChild(const Mode& mode, const std::string& library,
              const std::string& records, const std::string& out, int argc,
              char** argv) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("LD_PRELOAD=", 0) == 0 ||
        var.rfind("TIRESIAS_PROFILE", 0) == 0) {
      continue;
    }
    env.push_back(var);
  }
  env.push_back(std::string(kModeEnv) + "=" + mode.name);
  if (mode.preload) env.push_back("LD_PRELOAD=" + library);
  if (mode.record) {
    env.push_back("TIRESIAS_PROFILE_OUT=" + records);
    env.push_back("TIRESIAS_PROFILE_MAX_MESSAGES=1000000000000");
    env.push_back("TIRESIAS_PROFILE_SECONDS=100000");
  }
  std::vector<std::string> args = {"/proc/self/exe"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back("--benchmark_out=" + out);
  args.push_back("--benchmark_out_format=json");
  std::vector<char*> c_args, c_env;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  for (auto& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);
  printf("--- %s ---\n", mode.name);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    execve("/proc/self/exe", c_args.data(), c_env.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// name -> the minimum CPU time per iteration (ns) over its repetitions. CPU
// time, not wall time: on a shared machine the wall time of a system call
// mostly measures the other tenants.
std::map<std::string, double> MinTimes(const std::string& path) {
  std::map<std::string, double> times;
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object()) return times;
  for (const auto& b : doc["benchmarks"]) {
    if (b.value("run_type", "") != "iteration") continue;
    std::string name = b["run_name"];
    name = name.substr(0, name.find('/'));
    double ns = b["cpu_time"].get<double>();
    const std::string unit = b.value("time_unit", "ns");
    if (unit == "us") ns *= 1e3;
    if (unit == "ms") ns *= 1e6;
    if (unit == "s") ns *= 1e9;
    auto [it, inserted] = times.emplace(name, ns);
    if (!inserted) it->second = std::min(it->second, ns);
  }
  return times;
}

int Drive(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path library = (self.parent_path() / ".." / "src" / "profiler" /
                            "libtiresias_profiler.so")
                               .lexically_normal();
  const char* env_library = getenv("TIRESIAS_PROFILER_LIB");
  const std::string lib =
      env_library != nullptr ? env_library : library.string();
  if (!fs::exists(lib)) {
    fprintf(stderr,
            "profiler_bench: %s not found (set TIRESIAS_PROFILER_LIB)\n",
            lib.c_str());
    return 1;
  }
  char dir_pattern[] = "/tmp/tiresias-profiler-bench-XXXXXX";
  if (mkdtemp(dir_pattern) == nullptr) return 1;
  const fs::path dir = dir_pattern;
  const Mode modes[] = {
      {"plain", false, false}, {"off", true, false}, {"recording", true, true}};
  const char* rounds_env = getenv("TIRESIAS_PROFILER_BENCH_ROUNDS");
  const int rounds = rounds_env != nullptr ? std::max(1, atoi(rounds_env)) : 3;
  std::map<std::string, std::map<std::string, double>> results;
  bool ok = true;
  uintmax_t record_bytes = 0;
  std::error_code error;
  for (int round = 0; round < rounds; ++round) {
    for (const Mode& mode : modes) {
      const std::string out =
          (dir / (std::string(mode.name) + ".json")).string();
      const fs::path records = dir / "records.txt";
      ok &= RunChild(mode, lib, records.string(), out, argc, argv);
      for (const auto& [name, ns] : MinTimes(out)) {
        auto [it, inserted] = results[mode.name].emplace(name, ns);
        if (!inserted) it->second = std::min(it->second, ns);
      }
      if (mode.record) {
        record_bytes = fs::file_size(records, error);
        fs::remove(records, error);
      }
    }
  }
  fs::remove_all(dir, error);
  printf("\nCPU time per iteration, minimum over repetitions (library: %s)\n",
         lib.c_str());
  printf("%-16s %12s %12s %12s %12s %12s\n", "benchmark", "plain", "off",
         "recording", "off-plain", "rec-plain");
  for (const auto& [name, plain] : results["plain"]) {
    const double off = results["off"][name];
    const double rec = results["recording"][name];
    printf("%-16s %10.1f ns %10.1f ns %10.1f ns %+10.1f ns %+10.1f ns\n",
           name.c_str(), plain, off, rec, off - plain, rec - plain);
  }
  if (results["plain"].count("BM_PsIteration") != 0) {
    const double plain = results["plain"]["BM_PsIteration"];
    const double rec = results["recording"]["BM_PsIteration"];
    printf(
        "BM_PsIteration: %.3f ms plain, %.3f ms recording (%+.2f%%), "
        "161 messages\n",
        plain / 1e6, rec / 1e6, 100 * (rec - plain) / plain);
  }
  printf("records written by one recording run: %.1f MiB\n",
         static_cast<double>(record_bytes) / (1 << 20));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (getenv(kModeEnv) == nullptr) return Drive(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  printf("mode: %s\n", getenv(kModeEnv));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
