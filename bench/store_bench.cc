// What the master's store costs per job as it grows: writing new jobs
// (CreateJobs, in batches as the master's group commit writes them),
// reading them all back (ListJobs: a restart, `jobs` with no filter) and
// reading the unfinished ones (ListUnfinishedJobs: what a restarted master
// loads). In-process, no gRPC, no master; the file is on /dev/shm when it
// exists, so fsync costs little and the encoding and decoding show.
//
//   build/bench/store_bench [--jobs N] [--env K] [--batch B] [--rounds R]
//
// Each job has a 4-argument command and K environment variables (the CLI
// sends the caller's exported environment: 40 is a login shell's), half of
// them left pending. Prints the median over R rounds of microseconds per
// job for each operation.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "master/sqlite_store.h"

namespace {

using tiresias::JobRecord;
using tiresias::JobRecordState;
using tiresias::JobRequest;
using tiresias::NewJob;
using tiresias::Seconds;
using tiresias::SqliteStore;
using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

JobRequest Spec(int i, int env) {
  JobRequest spec;
  spec.name = absl::StrCat("train-", i % 97);
  spec.user = absl::StrCat("user", i % 20);
  spec.num_gpus = 1 << (i % 4);
  spec.command = {"/usr/bin/python3", "/home/user/exp/train.py", "--lr",
                  absl::StrCat("0.", i % 10)};
  for (int k = 0; k < env; ++k) {
    spec.env[absl::StrCat("VARIABLE_", k)] =
        absl::StrCat("/usr/local/share/value/of/", k, "/", i % 13);
  }
  spec.workdir = "/home/user/exp";
  spec.output = "out-%j.txt";
  spec.time_limit = Seconds{3600};
  return spec;
}

struct Round {
  double create_us = 0;
  double list_us = 0;
  double unfinished_us = 0;
};

int RunRound(const std::string& dir, int jobs, int env, int batch, Round& out) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = SqliteStore::Open(dir + "/state.db");
  if (!store.ok()) {
    std::fprintf(stderr, "store_bench: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }
  std::vector<std::vector<NewJob>> batches;
  for (int i = 0; i < jobs; i += batch) {
    std::vector<NewJob>& b = batches.emplace_back();
    for (int j = i; j < std::min(jobs, i + batch); ++j) {
      b.push_back({Spec(j, env), absl::StrCat("req-", j)});
    }
  }
  Clock::time_point start = Clock::now();
  for (const std::vector<NewJob>& b : batches) {
    auto created = (*store)->CreateJobs(b, Seconds{1000});
    if (!created.ok()) {
      std::fprintf(stderr, "store_bench: %s\n",
                   std::string(created.status().message()).c_str());
      return 1;
    }
  }
  out.create_us = Us(Clock::now() - start) / jobs;

  // Half of them end, so that the unfinished listing has half to read.
  {
    tiresias::StoreWrite write;
    for (int id = 1; id <= jobs; id += 2) {
      JobRecord r;
      r.id = id;
      r.spec = Spec(id - 1, env);
      r.state = JobRecordState::kCancelled;
      r.submit_time = Seconds{1000};
      r.last_stop_time = Seconds{1000};
      r.end_time = Seconds{1001};
      write.jobs.push_back(std::move(r));
    }
    absl::Status status = (*store)->Write(write);
    if (!status.ok()) {
      std::fprintf(stderr, "store_bench: %s\n",
                   std::string(status.message()).c_str());
      return 1;
    }
  }

  start = Clock::now();
  auto all = (*store)->ListJobs();
  out.list_us = Us(Clock::now() - start) / jobs;
  start = Clock::now();
  auto unfinished = (*store)->ListUnfinishedJobs();
  const double unfinished_us = Us(Clock::now() - start);
  if (!all.ok() || !unfinished.ok() || static_cast<int>(all->size()) != jobs ||
      static_cast<int>(unfinished->size()) != jobs / 2) {
    std::fprintf(stderr, "store_bench: the listings are wrong\n");
    return 1;
  }
  out.unfinished_us = unfinished_us / unfinished->size();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 20000, env = 40, batch = 500, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    int* target = nullptr;
    if (std::strcmp(argv[i], "--jobs") == 0) target = &jobs;
    if (std::strcmp(argv[i], "--env") == 0) target = &env;
    if (std::strcmp(argv[i], "--batch") == 0) target = &batch;
    if (std::strcmp(argv[i], "--rounds") == 0) target = &rounds;
    if (target == nullptr || !absl::SimpleAtoi(argv[i + 1], target) ||
        *target < (target == &env ? 0 : 1)) {
      std::fprintf(stderr,
                   "usage: store_bench [--jobs N] [--env K] [--batch B] "
                   "[--rounds R]\n");
      return 2;
    }
  }
  const std::string root =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  const std::string dir = absl::StrCat(root, "/tiresias-store-bench");
  std::vector<double> create, list, unfinished;
  for (int r = 0; r < rounds; ++r) {
    Round round;
    if (RunRound(dir, jobs, env, batch, round) != 0) return 1;
    create.push_back(round.create_us);
    list.push_back(round.list_us);
    unfinished.push_back(round.unfinished_us);
    if (isatty(2)) std::fprintf(stderr, "\rround %d/%d", r + 1, rounds);
  }
  if (isatty(2)) std::fprintf(stderr, "\n");
  std::filesystem::remove_all(dir);
  std::printf("jobs %d, env %d, batch %d, median of %d rounds (us per job)\n",
              jobs, env, batch, rounds);
  std::printf("CreateJobs          %8.2f\n", Median(create));
  std::printf("ListJobs            %8.2f\n", Median(list));
  std::printf("ListUnfinishedJobs  %8.2f\n", Median(unfinished));
  return 0;
}
