// Snapshots of the replicated store on a real etcd (etcd_snapshot.h): the
// log is compacted into a snapshot, a copy behind it is replaced by it and
// then agrees with the leader, a deposed leader's snapshot never becomes
// the store's, and a damaged or foreign one replaces nothing.
#include "master/etcd_snapshot.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/etcd_chunks.h"
#include "master/etcd_store_fixture.h"

namespace tiresias {
namespace {

using master_testing::EtcdStoreTest;
using master_testing::Request;
using ::testing::HasSubstr;

class EtcdSnapshotTest : public EtcdStoreTest {
 protected:
  // Keys under `<prefix><dir>`.
  int64_t Keys(const std::string& dir) {
    const std::string from = std::string(kPrefix) + dir;
    auto got = Client()->Range(from, PrefixEnd(from));
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? got->kvs_size() : -1;
  }
  void CreateJobs(SqliteStore& store, int n, const std::string& name) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(
          store.CreateJob(Request(absl::StrCat(name, i)), Seconds{1}).ok());
    }
  }
};

TEST_F(EtcdSnapshotTest, ACopyBehindTheSnapshotIsReplacedByItAndAgrees) {
  std::atomic<int> lost{0};
  // Small chunks: a snapshot of several.
  Leader l = Lead("a.db", &lost, std::chrono::seconds(5),
                  {.snapshot_every = 0, .chunk_bytes = 4096});
  CreateJobs(*l.store, 60, "j");
  EtcdLog reader(Client(), kPrefix);
  std::unique_ptr<SqliteStore> kept_up = Copy("kept.db");
  ASSERT_EQ(*reader.CatchUp(*kept_up), 60);

  absl::StatusOr<int64_t> index = l.log->Snapshot();
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 60);
  EXPECT_EQ(l.log->snapshots(), 1);
  EXPECT_EQ(Keys("log/"), 0);  // the log to 60 is gone
  auto record = ReadSnapshotRecord(*Client(), kPrefix);
  ASSERT_TRUE(record.ok() && record->has_value()) << record.status();
  EXPECT_EQ((*record)->index(), 60);
  EXPECT_GT((*record)->chunks(), 1);
  EXPECT_EQ(Keys("snapshot/"), (*record)->chunks());
  EXPECT_EQ((*record)->epoch(), l.lead->epoch());
  CreateJobs(*l.store, 5, "k");  // entries 61..65
  EXPECT_EQ(Keys("log/"), 5);

  // A new copy cannot replay the log from its start: it is replaced by
  // the snapshot, then replays the 5 entries after it.
  std::unique_ptr<SqliteStore> late = Copy("late.db");
  absl::StatusOr<int64_t> behind = reader.CatchUp(*late);
  ASSERT_FALSE(behind.ok());
  EXPECT_TRUE(absl::IsOutOfRange(behind.status())) << behind.status();
  EXPECT_THAT(behind.status().message(), HasSubstr("snapshot at entry 60"));
  absl::StatusOr<int64_t> replaced =
      reader.ReplaceBySnapshot(&late, CopyOptions());
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(*replaced, 60);
  EXPECT_EQ(*late->log_index(), 60);
  EXPECT_EQ(*reader.CatchUp(*late), 5);
  EXPECT_EQ(late->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);
  EXPECT_EQ(late->cluster_id(), l.store->cluster_id());
  // A copy that kept up replays only what is new.
  EXPECT_EQ(*reader.CatchUp(*kept_up), 5);
  EXPECT_EQ(kept_up->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);

  // A second snapshot replaces the first: its chunks go too.
  ASSERT_EQ(*l.log->Snapshot(), 65);
  record = ReadSnapshotRecord(*Client(), kPrefix);
  EXPECT_EQ(Keys("snapshot/"), (*record)->chunks());
  EXPECT_EQ(Keys("log/"), 0);
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdSnapshotTest, TheLeaderSnapshotsEveryNEntriesOnItsOwn) {
  std::atomic<int> lost{0};
  Leader l =
      Lead("a.db", &lost, std::chrono::seconds(5), {.snapshot_every = 20});
  CreateJobs(*l.store, 19, "j");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(l.log->snapshots(), 0);  // not yet 20 entries
  // Writes go on while a snapshot is taken; each one past 20 entries since
  // the last snapshot asks for the next.
  int written = 19;
  for (; written < 400 && l.log->snapshots() < 2; ++written) {
    CreateJobs(*l.store, 1, absl::StrCat("k", written, "-"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(l.log->snapshots(), 2);
  EXPECT_GE(written, 40);
  auto record = ReadSnapshotRecord(*Client(), kPrefix);
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_GE((*record)->index(), 40);
  EXPECT_EQ(Keys("log/"), written - (*record)->index());
  std::unique_ptr<SqliteStore> late = Copy("late.db");
  EtcdLog reader(Client(), kPrefix);
  ASSERT_TRUE(reader.ReplaceBySnapshot(&late, CopyOptions()).ok());
  ASSERT_TRUE(reader.CatchUp(*late).ok());
  EXPECT_EQ(late->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);
  // Closing the leader's copy waits for its snapshot thread.
  l.store.reset();
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdSnapshotTest, ADeposedLeadersSnapshotIsNeverTheStores) {
  std::atomic<int> lost_a{0}, lost_b{0};
  Leader a =
      Lead("a.db", &lost_a, std::chrono::seconds(5), {.snapshot_every = 0});
  CreateJobs(*a.store, 10, "a");
  std::unique_ptr<SqliteStore> store_b = Copy("b.db");
  std::unique_ptr<EtcdLead> b = Join(&lost_b);
  // A's lead ends behind its back; B takes over and writes on.
  ASSERT_TRUE(Client()->Delete(a.lead->leader_key()).ok());
  ASSERT_TRUE(*b->TryLead());
  EtcdLog log_b(Client(), kPrefix, {.snapshot_every = 0});
  ASSERT_TRUE(log_b.StartLeading(*store_b, b.get()).ok());
  CreateJobs(*store_b, 3, "b");

  absl::StatusOr<int64_t> refused = a.log->Snapshot();
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no longer leads"));
  EXPECT_FALSE(ReadSnapshotRecord(*Client(), kPrefix)->has_value());
  EXPECT_EQ(Keys("log/"), 13);      // nothing compacted
  EXPECT_EQ(Keys("snapshot/"), 0);  // its first chunk was refused
  // Chunks a deposed leader left (its put landed, its record did not),
  // before and after B's: gone with B's snapshot.
  const std::string all = std::string(kPrefix) + "snapshot/";
  ASSERT_TRUE(Client()
                  ->Put(absl::StrFormat("%s%020d.%020d/000000", all, 5,
                                        a.lead->epoch()),
                        "x")
                  .ok());
  ASSERT_TRUE(Client()
                  ->Put(absl::StrFormat("%s%020d.%020d/000000", all, 99,
                                        a.lead->epoch()),
                        "x")
                  .ok());
  ASSERT_EQ(*log_b.Snapshot(), 13);
  auto record = ReadSnapshotRecord(*Client(), kPrefix);
  EXPECT_EQ((*record)->epoch(), b->epoch());
  EXPECT_EQ(Keys("snapshot/"), (*record)->chunks());
  // Nothing new since: no second snapshot.
  EXPECT_EQ(*log_b.Snapshot(), 13);
  EXPECT_EQ(log_b.snapshots(), 1);
}

// A try of a publish that etcd applies late (the call moved on from a
// member that did not answer in time; the member applied it after a newer
// snapshot was published) must not put the older record back: the newer
// one's chunks would go with it, and no copy could be made again.
TEST_F(EtcdSnapshotTest, APublishThatLandsLateChangesNothing) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost, std::chrono::seconds(5),
                  {.snapshot_every = 0, .chunk_bytes = 4096});
  CreateJobs(*l.store, 20, "j");
  absl::StatusOr<SnapshotImage> first =
      TakeSnapshotImage(*l.store, dir_.File("first.out"));
  ASSERT_TRUE(first.ok()) << first.status();
  // What the first publish sends, before any record exists.
  const etcdserverpb::TxnRequest late = SnapshotRecordTxn(
      kPrefix, l.lead->leader_key(), l.lead->epoch(), *first, 4096, 0);
  ASSERT_TRUE(PublishSnapshot(*Client(), kPrefix, *l.lead, *first, 4096).ok());
  CreateJobs(*l.store, 5, "k");
  ASSERT_EQ(*l.log->Snapshot(), 25);

  // The first publish's duplicate lands now.
  auto applied = Client()->Txn(late);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_FALSE(applied->succeeded());
  auto record = ReadSnapshotRecord(*Client(), kPrefix);
  ASSERT_TRUE(record.ok() && record->has_value()) << record.status();
  EXPECT_EQ((*record)->index(), 25);
  EXPECT_EQ(Keys("snapshot/"), (*record)->chunks());
  std::unique_ptr<SqliteStore> late_copy = Copy("late.db");
  EtcdLog reader(Client(), kPrefix);
  absl::StatusOr<int64_t> replaced =
      reader.ReplaceBySnapshot(&late_copy, CopyOptions());
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(*replaced, 25);
  EXPECT_EQ(late_copy->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);

  EXPECT_EQ(lost.load(), 0);
}

// The record moves under a publish (its `stop` callback, asked before each
// chunk and before the record, stands in for the moment): after its chunks
// are up, by its own record's transaction (a try the etcd client gave up
// on, applied by its member before the next try), the publish is done;
// while its chunks go up, by another snapshot, which deletes the chunks
// already up, it publishes nothing (Aborted). Either way the record's
// snapshot can be installed.
TEST_F(EtcdSnapshotTest, APublishSeesWhoMovedTheRecordMeanwhile) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost, std::chrono::seconds(5),
                  {.snapshot_every = 0, .chunk_bytes = 4096});
  const std::string key = l.lead->leader_key();
  const uint64_t epoch = l.lead->epoch();
  auto take = [&](const std::string& name) {
    absl::StatusOr<SnapshotImage> image =
        TakeSnapshotImage(*l.store, dir_.File(name));
    EXPECT_TRUE(image.ok()) << image.status();
    return *image;
  };
  auto installs = [&](const std::string& name, int64_t index) {
    std::unique_ptr<SqliteStore> copy = Copy(name);
    EtcdLog reader(Client(), kPrefix);
    absl::StatusOr<int64_t> replaced =
        reader.ReplaceBySnapshot(&copy, CopyOptions());
    ASSERT_TRUE(replaced.ok()) << replaced.status();
    EXPECT_EQ(*replaced, index);
  };
  CreateJobs(*l.store, 30, "j");
  const SnapshotImage own = take("own.out");
  const int64_t chunks = ChunkCount(own.compressed.size(), 4096);
  ASSERT_GT(chunks, 1);
  int64_t asked = 0;
  absl::Status done =
      PublishSnapshot(*Client(), kPrefix, *l.lead, own, 4096, [&] {
        if (++asked == chunks + 1) {  // its chunks up: its own try lands
          auto early = Client()->Txn(
              SnapshotRecordTxn(kPrefix, key, epoch, own, 4096, 0));
          EXPECT_TRUE(early.ok() && early->succeeded());
        }
        return false;
      });
  EXPECT_TRUE(done.ok()) << done;
  EXPECT_EQ(asked, chunks + 1);
  EXPECT_EQ((**ReadSnapshotRecord(*Client(), kPrefix)).index(), 30);
  installs("own.db", 30);

  CreateJobs(*l.store, 5, "k");
  const SnapshotImage other = take("other.out");  // entry 35
  CreateJobs(*l.store, 3, "m");
  const SnapshotImage mine = take("mine.out");  // entry 38
  asked = 0;
  absl::Status refused =
      PublishSnapshot(*Client(), kPrefix, *l.lead, mine, 4096, [&] {
        if (asked++ == 1) {
          EXPECT_TRUE(
              PublishSnapshot(*Client(), kPrefix, *l.lead, other, 4096).ok());
        }
        return false;
      });
  EXPECT_TRUE(absl::IsAborted(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("another snapshot"));
  EXPECT_EQ((**ReadSnapshotRecord(*Client(), kPrefix)).index(), 35);
  installs("other.db", 35);
  // The next one goes on, and its chunks alone are left.
  ASSERT_EQ(*l.log->Snapshot(), 38);
  EXPECT_EQ(Keys("snapshot/"),
            (**ReadSnapshotRecord(*Client(), kPrefix)).chunks());
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdSnapshotTest, ADamagedOrForeignSnapshotReplacesNothing) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost, std::chrono::seconds(5),
                  {.snapshot_every = 0, .chunk_bytes = 4096});
  CreateJobs(*l.store, 30, "j");
  ASSERT_EQ(*l.log->Snapshot(), 30);
  EtcdLog reader(Client(), kPrefix);
  std::unique_ptr<SqliteStore> copy = Copy("copy.db");
  ASSERT_TRUE(copy->CreateJob(Request("mine"), Seconds{1}).ok());

  // A chunk changed in etcd: the CRC does not match. (Chunks are read at
  // the record's revision, so the record is written again after it.)
  const std::string chunk = absl::StrFormat("%ssnapshot/%020d.%020d/%06d",
                                            kPrefix, 30, l.lead->epoch(), 1);
  const std::string record_key = std::string(kPrefix) + "snapshot";
  auto original = Client()->Range(chunk);
  ASSERT_TRUE(original.ok() && original->kvs_size() == 1);
  ASSERT_TRUE(Client()->Put(chunk, "damaged").ok());
  auto record_value = Client()->Range(record_key);
  ASSERT_TRUE(record_value.ok() && record_value->kvs_size() == 1);
  ASSERT_TRUE(Client()->Put(record_key, record_value->kvs(0).value()).ok());
  absl::StatusOr<int64_t> replaced =
      reader.ReplaceBySnapshot(&copy, CopyOptions());
  ASSERT_FALSE(replaced.ok());
  EXPECT_TRUE(absl::IsDataLoss(replaced.status())) << replaced.status();
  ASSERT_NE(copy, nullptr);  // the old file, open again
  EXPECT_EQ(copy->QueryJobs({})->jobs.size(), 1u);
  EXPECT_EQ(copy->QueryJobs({})->jobs[0].spec.name, "mine");

  // Whole again, but another cluster's copy asks for it: refused.
  ASSERT_TRUE(Client()->Put(chunk, original->kvs(0).value()).ok());
  ASSERT_TRUE(Client()->Put(record_key, record_value->kvs(0).value()).ok());
  SqliteStoreOptions other = CopyOptions();
  other.cluster_id = "another-cluster";
  std::unique_ptr<SqliteStore> foreign =
      std::move(*SqliteStore::Open(dir_.File("foreign.db"), other));
  replaced = reader.ReplaceBySnapshot(&foreign, other);
  ASSERT_FALSE(replaced.ok());
  EXPECT_THAT(replaced.status().message(), HasSubstr("another-cluster"));
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(*foreign->log_index(), 0);

  // And a record of another schema is refused before anything is read.
  storelog::Snapshot record = **ReadSnapshotRecord(*Client(), kPrefix);
  record.set_schema_version(SqliteStore::kSchemaVersion + 1);
  ASSERT_TRUE(Client()->Put(record_key, record.SerializeAsString()).ok());
  replaced = reader.ReplaceBySnapshot(&copy, CopyOptions());
  EXPECT_TRUE(absl::IsFailedPrecondition(replaced.status()))
      << replaced.status();
  EXPECT_THAT(replaced.status().message(), HasSubstr("same build"));
  EXPECT_EQ(copy->QueryJobs({})->jobs.size(), 1u);
}

}  // namespace
}  // namespace tiresias
