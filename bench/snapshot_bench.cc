// What a snapshot of the replicated store costs (master/etcd_snapshot.h),
// and what it saves a new master: a leader's copy filled with --jobs jobs
// through the etcd log (--batch jobs a transaction), then
//   - a new copy brought up by replaying the whole log,
//   - the leader's snapshot (copy, compress, upload, compact the log),
//   - a new copy brought up from the snapshot instead,
// each timed, with the sizes. Against a running etcd (bench/snapshot_bench.sh
// starts one on loopback); everything goes under a prefix of its own.
//
//   snapshot_bench --etcd 127.0.0.1:2379 --state-dir DIR [--jobs 100000]
//                  [--batch 500]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/etcd_snapshot.h"
#include "master/etcd_store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t FileBytes(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  std::fseek(f, 0, SEEK_END);
  const int64_t size = std::ftell(f);
  std::fclose(f);
  return size;
}

absl::Status Run(const std::string& endpoint, const std::string& dir, int jobs,
                 int batch) {
  using namespace tiresias;
  ASSIGN_OR_RETURN(std::shared_ptr<EtcdClient> client,
                   EtcdClient::Connect({.endpoints = {endpoint}}));
  const std::string prefix = absl::StrCat("/snapshot-bench-", getpid(), "/");
  ASSIGN_OR_RETURN(std::string id, EtcdClusterId(*client, prefix));
  const SqliteStoreOptions options = {.sync_every_commit = false,
                                      .cluster_id = id};
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> leader,
                   SqliteStore::Open(dir + "/leader.db", options));
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLead> lead,
                   EtcdLead::Join(client, prefix, {}));
  ASSIGN_OR_RETURN(bool led, lead->TryLead());
  if (!led) return absl::InternalError("another leads the bench's prefix");
  EtcdLog log(client, prefix, {.snapshot_every = 0});
  RETURN_IF_ERROR(log.StartLeading(*leader, lead.get()));

  Clock::time_point start = Clock::now();
  for (int made = 0; made < jobs; made += batch) {
    std::vector<NewJob> some;
    for (int i = made; i < std::min(jobs, made + batch); ++i) {
      JobRequest r;
      r.name = absl::StrCat("train-resnet50-", i);
      r.user = absl::StrCat("user", i % 40);
      r.num_gpus = 1 << (i % 4);
      r.command = {"/usr/bin/python3", "train.py", "--epochs",
                   absl::StrCat(10 + i % 90)};
      r.env = {{"LR", "0.1"}, {"BATCH", absl::StrCat(32 << (i % 3))}};
      some.push_back({r, absl::StrCat("req-", i)});
    }
    RETURN_IF_ERROR(leader->CreateJobs(some, Seconds{1000.0 + made}).status());
  }
  const double fill_s = Since(start);
  const int64_t entries = log.last_index();
  std::printf("filled: %d jobs in %lld log entries, %.1f s (%.0f jobs/s)\n",
              jobs, static_cast<long long>(entries), fill_s, jobs / fill_s);

  EtcdLog reader(client, prefix);
  {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> replayed,
                     SqliteStore::Open(dir + "/replayed.db", options));
    start = Clock::now();
    ASSIGN_OR_RETURN(int64_t applied, reader.CatchUp(*replayed));
    std::printf("a new copy from the whole log: %lld entries in %.2f s\n",
                static_cast<long long>(applied), Since(start));
  }

  start = Clock::now();
  ASSIGN_OR_RETURN(int64_t index, log.Snapshot());
  const double snapshot_s = Since(start);
  ASSIGN_OR_RETURN(std::optional<storelog::Snapshot> record,
                   ReadSnapshotRecord(*client, prefix));
  std::printf(
      "snapshot at entry %lld: %.2f s; the file %.1f MiB, compressed %.1f "
      "MiB in %lld chunks\n",
      static_cast<long long>(index), snapshot_s,
      record->file_bytes() / 1048576.0, record->compressed_bytes() / 1048576.0,
      static_cast<long long>(record->chunks()));

  ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> fresh,
                   SqliteStore::Open(dir + "/fresh.db", options));
  start = Clock::now();
  ASSIGN_OR_RETURN(int64_t installed,
                   reader.ReplaceBySnapshot(&fresh, options));
  ASSIGN_OR_RETURN(int64_t after, reader.CatchUp(*fresh));
  std::printf(
      "a new copy from the snapshot: entry %lld (+%lld after) in %.2f s, "
      "%.1f MiB on disk\n",
      static_cast<long long>(installed), static_cast<long long>(after),
      Since(start), FileBytes(dir + "/fresh.db") / 1048576.0);
  ASSIGN_OR_RETURN(JobTotals totals, fresh->Totals());
  if (totals.max_id != jobs) {
    return absl::DataLossError(absl::StrCat(
        "the new copy holds ", totals.max_id, " jobs, not ", jobs));
  }
  // Nothing of the bench left in etcd.
  return client->Delete(prefix, PrefixEnd(prefix)).status();
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint, dir;
  int jobs = 100000, batch = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--etcd") {
      endpoint = argv[i + 1];
    } else if (flag == "--state-dir") {
      dir = argv[i + 1];
    } else if (flag == "--jobs") {
      jobs = std::atoi(argv[i + 1]);
    } else if (flag == "--batch") {
      batch = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "snapshot_bench: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (endpoint.empty() || dir.empty() || jobs < 1 || batch < 1) {
    std::fprintf(stderr,
                 "usage: snapshot_bench --etcd HOST:PORT --state-dir DIR "
                 "[--jobs N] [--batch N]\n");
    return 2;
  }
  absl::Status s = Run(endpoint, dir, jobs, batch);
  if (!s.ok()) {
    std::fprintf(stderr, "snapshot_bench: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
