// The replicated store and the lead on a real etcd (etcd_test_server.h):
// copies that replay the leader's log agree with it, a deposed leader
// writes nothing, one leader at a time with rising epochs. Over TLS with
// client certificates too (--etcd-ca/--etcd-cert/--etcd-key). The lease
// against etcd's outages: etcd_lead_test.cc.
#include "master/etcd_store.h"

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/etcd_chunks.h"
#include "master/etcd_store_fixture.h"
#include "security/pem_files.h"

namespace tiresias {
namespace {

using master_testing::EtcdStoreTest;
using master_testing::EtcdStoreTlsTest;
using master_testing::Request;
using ::testing::HasSubstr;

TEST_F(EtcdStoreTlsTest, ALeaderWithItsCertificateAppendsAndACopyReplays) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost);
  ASSERT_TRUE(l.store->CreateJob(Request("a"), Seconds{1}).ok());
  ASSERT_TRUE(l.store->CreateJob(Request("b"), Seconds{2}).ok());
  EXPECT_EQ(l.log->appended(), 2);
  std::unique_ptr<SqliteStore> standby = Copy("b.db");
  EXPECT_EQ(*l.log->CatchUp(*standby), 2);
  EXPECT_EQ(standby->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);
  EXPECT_TRUE(l.lead->Holds());
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdStoreTlsTest, AClientWithoutTheRightCredentialsIsRefused) {
  const std::string d = dir_.path().string();
  EtcdClient::Options plain = {.endpoints = {etcd_.endpoint()}};
  EtcdClient::Options no_cert = plain;
  no_cert.ca_file = tls_.ca_file;
  EtcdClient::Options stranger = no_cert;  // a certificate etcd did not sign
  stranger.cert_file = security::CertPath(d, "stranger");
  stranger.key_file = security::KeyPath(d, "stranger");
  EtcdClient::Options distrusting = ClientOptions();  // trusts another CA
  distrusting.ca_file = security::CertPath(d, "other-ca");
  for (EtcdClient::Options options : {plain, no_cert, stranger, distrusting}) {
    options.timeout = std::chrono::milliseconds(500);
    auto client = EtcdClient::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();  // channels connect lazily
    absl::Status put = (*client)->Put("/t/intruder", "x").status();
    EXPECT_TRUE(absl::IsUnavailable(put)) << put;
    EXPECT_THAT(put.message(), HasSubstr(etcd_.endpoint())) << put;
  }
  // Nothing was written, as the right client sees.
  auto seen = Client()->Range("/t/intruder");
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_TRUE(seen->kvs().empty());
  // Half a client certificate, or one without TLS: refused at once.
  EtcdClient::Options half = ClientOptions();
  half.key_file.clear();
  EXPECT_THAT(EtcdClient::Connect(half).status().message(),
              HasSubstr("both or neither"));
  EtcdClient::Options no_ca = ClientOptions();
  no_ca.ca_file.clear();
  EXPECT_THAT(EtcdClient::Connect(no_ca).status().message(),
              HasSubstr("needs --etcd-ca"));
  // A missing file is named, before any connection.
  EtcdClient::Options missing = ClientOptions();
  missing.key_file = d + "/nope-key.pem";
  auto refused = EtcdClient::Connect(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("nope-key.pem"));
  // A file of the wrong kind is named with its flag: a key given as the CA,
  // a certificate given as the key.
  EtcdClient::Options swapped = ClientOptions();
  swapped.ca_file = ClientOptions().key_file;
  refused = EtcdClient::Connect(swapped);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              HasSubstr("--etcd-ca: " + swapped.ca_file +
                        ": not a PEM certificate"));
  swapped = ClientOptions();
  swapped.key_file = ClientOptions().cert_file;
  refused = EtcdClient::Connect(swapped);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--etcd-key: "));
  EXPECT_THAT(refused.status().message(), HasSubstr("not a PEM private key"));
}

TEST_F(EtcdStoreTest, ACopyThatReplaysTheLogAgreesWithTheLeader) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost);
  SqliteStore* leader = l.store.get();
  EtcdLog& log = *l.log;
  std::unique_ptr<SqliteStore> standby = Copy("b.db");

  // Every kind of write: jobs, an update with events, nodes, a drain, a
  // token, a VC, an audit record.
  auto created = leader->CreateJobs(
      {{Request("a"), "req-1"}, {Request("b", 4), ""}}, Seconds{100});
  ASSERT_TRUE(created.ok()) << created.status();
  const JobId a = (*created)[0]->id;
  absl::StatusOr<JobRecord> rec = leader->GetJob(a);
  ASSERT_TRUE(rec.ok());
  rec->state = JobRecordState::kRunning;
  rec->first_start_time = Seconds{105};
  StoreWrite write;
  write.jobs.push_back(*rec);
  write.events.push_back({a, 0, Seconds{105}, "started", "on n1"});
  write.launches.push_back({a, 1, {"n1"}});
  ASSERT_TRUE(leader->Write(write).ok());
  absl::StatusOr<int64_t> node =
      leader->UpsertNode({.name = "n1",
                          .address = "10.0.0.1",
                          .gpus = 8,
                          .last_heartbeat = Seconds{104}});
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_TRUE(leader->SetNodeDrain(*node, true, "disk").ok());
  absl::StatusOr<int64_t> token = leader->CreateToken(
      {.user = "bob", .salt = "00", .hash = "ab", .created = Seconds{1}});
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(leader->RevokeToken(*token, Seconds{3}).ok());
  ASSERT_TRUE(leader->PutQos({.name = "high", .priority = 10}).ok());
  ASSERT_TRUE(leader
                  ->PutSetting("tuning", std::string("\xff"
                                                     "\0"
                                                     "ab",
                                                     4))
                  .ok());
  ASSERT_TRUE(leader->PutVc({.name = "vc1", .quota = "1x8"}).ok());
  ASSERT_TRUE(leader
                  ->AppendAudit({.time = Seconds{2},
                                 .principal = "bob",
                                 .action = "submit",
                                 .outcome = "ok"})
                  .ok());
  EXPECT_EQ(log.appended(), 10);  // one entry per committed transaction

  absl::StatusOr<int64_t> applied = log.CatchUp(*standby);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 10);
  EXPECT_EQ(*standby->log_index(), 10);
  EXPECT_EQ(*leader->log_index(), 10);
  EXPECT_EQ(standby->cluster_id(), leader->cluster_id());
  EXPECT_EQ(standby->QueryJobs({})->jobs, leader->QueryJobs({})->jobs);
  EXPECT_EQ(*standby->Events(a), *leader->Events(a));
  EXPECT_EQ(*standby->ListNodes(), *leader->ListNodes());
  EXPECT_TRUE(standby->ListNodes()->at(0).drained);
  EXPECT_EQ(*standby->ListTokens(), *leader->ListTokens());
  EXPECT_EQ(standby->ListVcs()->size(), 1u);
  EXPECT_EQ(standby->ListQos()->size(), 1u);
  EXPECT_EQ(*standby->GetSetting("tuning"), *leader->GetSetting("tuning"));
  EXPECT_TRUE(standby->ListTokens()->at(0).revoked.has_value());
  EXPECT_EQ(standby->AuditAfter(0, 10)->size(), 1u);
  EXPECT_EQ(*standby->LaunchNodes(a, 1), std::vector<std::string>{"n1"});
  // The request id is the copy's too: a retry finds the job.
  auto again = standby->CreateJobs({{Request("a"), "req-1"}}, Seconds{200});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)[0]->existing);
  // Nothing more to apply.
  EXPECT_EQ(*log.CatchUp(*standby), 0);
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdStoreTest, ANewCopyReplaysTheWholeLog) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost);
  SqliteStore* leader = l.store.get();
  EtcdLog& log = *l.log;
  for (int i = 0; i < 300; ++i) {  // more than one range of entries
    ASSERT_TRUE(
        leader->CreateJob(Request(absl::StrCat("j", i)), Seconds{1}).ok());
  }
  std::unique_ptr<SqliteStore> late = Copy("late.db");
  EXPECT_EQ(*log.CatchUp(*late), 300);
  EXPECT_EQ(late->QueryJobs({})->jobs, leader->QueryJobs({})->jobs);
  EXPECT_EQ(late->Totals()->max_id, 300);
}

TEST_F(EtcdStoreTest, OneLeaderAtATimeEachWithALargerEpoch) {
  std::atomic<int> lost{0};
  std::unique_ptr<EtcdLead> a = Join(&lost);
  std::unique_ptr<EtcdLead> b = Join(&lost);
  ASSERT_TRUE(*a->TryLead());
  EXPECT_FALSE(*b->TryLead());
  EXPECT_TRUE(a->Holds());
  EXPECT_FALSE(b->Holds());
  ASSERT_TRUE(a->SetAddress("10.0.0.1:50051").ok());
  auto seen = b->ReadLeader();
  ASSERT_TRUE(seen.ok() && seen->has_value()) << seen.status();
  EXPECT_EQ((*seen)->epoch, a->epoch());
  EXPECT_EQ((*seen)->address, "10.0.0.1:50051");
  a->RefreshHealth();
  EXPECT_EQ(a->Standbys().size(), 1u);
  const uint64_t first = a->epoch();
  a.reset();  // revokes its lease: the lead is free at once
  ASSERT_TRUE(*b->TryLead());
  EXPECT_GT(b->epoch(), first);
  b->RefreshHealth();
  EXPECT_TRUE(b->Standbys().empty());
  EXPECT_EQ(lost.load(), 0);
}

TEST_F(EtcdStoreTest, TheLeaderKnowsTheStoresHealthWithoutAsking) {
  std::atomic<int> lost{0};
  std::atomic<int64_t> index{41};
  auto joined =
      EtcdLead::Join(Client(), kPrefix,
                     {.ttl = std::chrono::seconds(5),
                      .on_lost = [&lost](const std::string&) { ++lost; },
                      .where = "etcd://" + etcd_.endpoint() + kPrefix,
                      .log_index = [&index] { return index.load(); },
                      .health_period = std::chrono::milliseconds(200)});
  ASSERT_TRUE(joined.ok()) << joined.status();
  std::unique_ptr<EtcdLead> lead = std::move(*joined);
  std::unique_ptr<EtcdLead> standby = Join(&lost);
  EXPECT_EQ(lead->Store().checked, 0);  // a standby asks nothing
  ASSERT_TRUE(*lead->TryLead());
  // Asked at once on taking the lead, by its own thread.
  // A refresh begun after now (one under way may have asked before).
  auto asked = [&] {
    const double after = absl::ToUnixMicros(absl::Now()) / 1e6 + 0.01;
    for (int i = 0; i < 100 && lead->Store().checked < after; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return lead->Store();
  };
  StoreHealth h = asked();
  EXPECT_EQ(h.kind, "etcd");
  EXPECT_EQ(h.where, "etcd://" + etcd_.endpoint() + "/t/");
  EXPECT_EQ(h.log_index, 41);
  ASSERT_EQ(h.members.size(), 1u);
  const StoreMemberHealth& m = h.members[0];
  EXPECT_EQ(m.endpoint, etcd_.endpoint());
  EXPECT_TRUE(m.in_use);
  EXPECT_EQ(m.error, "");
  EXPECT_THAT(m.version, ::testing::StartsWith("3."));
  EXPECT_GT(m.db_size, 0);
  EXPECT_TRUE(m.raft_leader);
  EXPECT_TRUE(m.has_leader);
  EXPECT_GT(m.raft_index, 0u);
  // The standbys are asked after the members: soon.
  for (int i = 0; i < 100 && lead->Standbys().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(lead->Standbys().size(), 1u);

  // A member that stops answering is seen so within a period and its ask;
  // what was last known of the standbys is kept.
  index = 42;
  etcd_.Freeze();
  h = asked();
  etcd_.Thaw();
  ASSERT_EQ(h.members.size(), 1u);
  EXPECT_NE(h.members[0].error, "");
  EXPECT_EQ(h.members[0].version, "");
  EXPECT_EQ(h.log_index, 42);
  EXPECT_EQ(lead->Standbys().size(), 1u);
  standby.reset();
  for (int i = 0; i < 100 && !lead->Standbys().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(lead->Standbys().empty());
}

TEST_F(EtcdStoreTest, ADeposedLeaderWritesNothing) {
  std::atomic<int> lost_a{0}, lost_b{0};
  std::unique_ptr<SqliteStore> store_a = Copy("a.db");
  std::unique_ptr<SqliteStore> store_b = Copy("b.db");
  std::unique_ptr<EtcdLead> a = Join(&lost_a);
  std::unique_ptr<EtcdLead> b = Join(&lost_b);
  ASSERT_TRUE(*a->TryLead());
  EtcdLog log_a(Client(), kPrefix);
  ASSERT_TRUE(log_a.StartLeading(*store_a, a.get()).ok());
  ASSERT_TRUE(store_a->CreateJob(Request("before"), Seconds{1}).ok());
  // A's lead ends behind its back (its lease lapsed while it was cut off);
  // B takes over.
  ASSERT_TRUE(Client()->Delete(a->leader_key()).ok());
  ASSERT_TRUE(*b->TryLead());
  EtcdLog log_b(Client(), kPrefix);
  ASSERT_TRUE(log_b.StartLeading(*store_b, b.get()).ok());
  EXPECT_EQ(store_b->QueryJobs({})->jobs.size(), 1u);

  // A's next write is refused by etcd, rolled back in A's copy, and A
  // steps down.
  absl::StatusOr<JobId> refused =
      store_a->CreateJob(Request("late"), Seconds{2});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no longer leads"));
  EXPECT_EQ(lost_a.load(), 1);
  EXPECT_EQ(store_a->QueryJobs({})->jobs.size(), 1u);
  EXPECT_FALSE(store_a->CreateJob(Request("later"), Seconds{3}).ok());
  // B's writes go on from the same log.
  ASSERT_TRUE(store_b->CreateJob(Request("after"), Seconds{4}).ok());
  EXPECT_EQ(*store_b->log_index(), 2);
  std::unique_ptr<SqliteStore> store_c = Copy("c.db");
  ASSERT_EQ(*log_b.CatchUp(*store_c), 2);
  auto names = store_c->QueryJobs({});
  ASSERT_EQ(names->jobs.size(), 2u);
  EXPECT_EQ(names->jobs[0].spec.name, "before");
  EXPECT_EQ(names->jobs[1].spec.name, "after");
  EXPECT_EQ(lost_b.load(), 0);
}

TEST_F(EtcdStoreTest, AnAppendWhoseAnswerWasLostCountsAsWritten) {
  // etcd frozen past the client's 3 s deadline: the first try's answer
  // is lost; the write must still be judged by what the log holds, once.
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost, std::chrono::seconds(15));
  SqliteStore* leader = l.store.get();
  EtcdLog& log = *l.log;
  etcd_.Freeze();
  absl::StatusOr<JobId> id;
  std::thread writer(
      [&] { id = leader->CreateJob(Request("frozen"), Seconds{1}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  etcd_.Thaw();
  writer.join();
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(*leader->log_index(), 1);
  std::unique_ptr<SqliteStore> copy = Copy("b.db");
  EXPECT_EQ(*log.CatchUp(*copy), 1);
  EXPECT_EQ(copy->QueryJobs({})->jobs.size(), 1u);
  // And the log goes on from there.
  ASSERT_TRUE(leader->CreateJob(Request("after"), Seconds{2}).ok());
  EXPECT_EQ(*log.CatchUp(*copy), 1);
}

TEST_F(EtcdStoreTest, ACopyThatDriftedFromTheLogStopsReplaying) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost);
  SqliteStore* leader = l.store.get();
  EtcdLog& log = *l.log;
  absl::StatusOr<JobId> id = leader->CreateJob(Request("a"), Seconds{1});
  ASSERT_TRUE(id.ok());
  {
    std::unique_ptr<SqliteStore> copy = Copy("b.db");
    ASSERT_EQ(*log.CatchUp(*copy), 1);
  }
  // Someone edits the copy by hand; the leader then changes the job.
  master_testing::RawSql(dir_.File("b.db"), "DELETE FROM jobs");
  absl::StatusOr<JobRecord> rec = leader->GetJob(*id);
  rec->state = JobRecordState::kRunning;
  ASSERT_TRUE(leader->Write({.jobs = {*rec}}).ok());
  std::unique_ptr<SqliteStore> copy = Copy("b.db");
  absl::StatusOr<int64_t> applied = log.CatchUp(*copy);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(applied.status().message(), HasSubstr("drifted"));
  EXPECT_EQ(*copy->log_index(), 1);  // the entry was not half applied
}

TEST(EtcdLogEntryTest, KeepsAnyBytesAndEachSqlOnceAndRefusesAnotherSchema) {
  std::vector<SqliteWrite> writes;
  for (int i = 0; i < 100; ++i) {
    SqliteWrite w;
    w.sql = "UPDATE jobs SET state = ?, detail = ? WHERE id = ?";
    w.binds = {
        {.kind = SqliteValue::Kind::kText, .bytes = "\xff\xfe not utf-8"},
        {.kind = SqliteValue::Kind::kNull},
        {.kind = SqliteValue::Kind::kInteger, .integer = i}};
    w.changes = 1;
    writes.push_back(w);
  }
  writes.push_back({.sql = "INSERT INTO meta VALUES (?, ?)",
                    .binds = {{.kind = SqliteValue::Kind::kReal, .real = 0.5},
                              {.kind = SqliteValue::Kind::kBlob,
                               .bytes = std::string("\0\1", 2)}}});
  const std::string bytes = EncodeLogEntry(7, 22, writes);
  // 100 statements of one SQL text: the text once, and compressed.
  EXPECT_LT(bytes.size(), 1000u);
  absl::StatusOr<std::vector<SqliteWrite>> back = DecodeLogEntry(3, 22, bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    EXPECT_EQ((*back)[i].sql, writes[i].sql);
    EXPECT_EQ((*back)[i].changes, writes[i].changes);
    ASSERT_EQ((*back)[i].binds.size(), writes[i].binds.size());
    for (size_t b = 0; b < writes[i].binds.size(); ++b) {
      EXPECT_EQ((*back)[i].binds[b].kind, writes[i].binds[b].kind);
      EXPECT_EQ((*back)[i].binds[b].bytes, writes[i].binds[b].bytes);
      EXPECT_EQ((*back)[i].binds[b].integer, writes[i].binds[b].integer);
    }
  }
  absl::StatusOr<std::vector<SqliteWrite>> other = DecodeLogEntry(3, 23, bytes);
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("schema 22"));
  absl::StatusOr<std::vector<SqliteWrite>> cut =
      DecodeLogEntry(3, 22, bytes.substr(0, bytes.size() / 2));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(cut.status().message(), HasSubstr("log entry 3"));
}

TEST_F(EtcdStoreTest, ACopyOfAnotherClusterIsRefused) {
  auto other = SqliteStore::Open(dir_.File("other.db"));
  ASSERT_TRUE(other.ok());
  other->reset();
  auto id = EtcdClusterId(*Client(), kPrefix);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*EtcdClusterId(*Client(), kPrefix), *id);  // made once
  auto refused = SqliteStore::Open(dir_.File("other.db"), {.cluster_id = *id});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("not of cluster " + *id));
}

TEST_F(EtcdStoreTest, AWriteWhileNotLeadingIsRefusedAndRolledBack) {
  EtcdLog log(Client(), kPrefix);  // outlives the store it is given
  std::unique_ptr<SqliteStore> store = Copy("a.db");
  store->SetReplicator(&log);  // never led
  EXPECT_FALSE(store->CreateJob(Request("x"), Seconds{1}).ok());
  EXPECT_TRUE(store->QueryJobs({})->jobs.empty());
}

TEST(EtcdUrlTest, ParsesMembersAndPrefix) {
  auto url = ParseEtcdUrl("etcd://a:2379,10.0.0.2:2379/team1");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->endpoints,
            (std::vector<std::string>{"a:2379", "10.0.0.2:2379"}));
  EXPECT_EQ(url->prefix, "/team1/");
  EXPECT_EQ(ParseEtcdUrl("etcd://a:1")->prefix, "/tiresias/");
  EXPECT_FALSE(ParseEtcdUrl("http://a:1").ok());
  EXPECT_FALSE(ParseEtcdUrl("etcd://a").ok());
  EXPECT_FALSE(ParseEtcdUrl("etcd://a:1,").ok());
  EXPECT_EQ(PrefixEnd("/t/log/"), "/t/log0");
}

// A request as large as `bytes`, compressed: an environment variable of
// random letters (6 bits of 8 each).
JobRequest LargeRequest(const std::string& name, size_t bytes, uint32_t seed) {
  std::mt19937 random(seed);
  const std::string letters =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string big(bytes * 4 / 3, ' ');
  for (char& c : big) c = letters[random() % letters.size()];
  JobRequest r = Request(name);
  r.env["BIG"] = big;
  return r;
}

TEST_F(EtcdStoreTest, AnEntryTooLargeForOneRequestIsWrittenInParts) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost, std::chrono::seconds(5),
                  {.snapshot_every = 0, .part_bytes = 4096});
  std::shared_ptr<EtcdClient> client = Client();
  const auto parts = [&] {
    std::vector<std::string> keys;
    auto got = client->Range(std::string(kPrefix) + "part/",
                             PrefixEnd(std::string(kPrefix) + "part/"));
    EXPECT_TRUE(got.ok()) << got.status();
    for (const auto& kv : got->kvs()) keys.push_back(kv.key());
    return keys;
  };
  // 1: about 15,000 bytes compressed, in 4 parts; 2: small, in one entry.
  ASSERT_TRUE(
      l.store->CreateJob(LargeRequest("big", 15000, 1), Seconds{1}).ok());
  ASSERT_TRUE(l.store->CreateJob(Request("small"), Seconds{2}).ok());
  EXPECT_EQ(l.log->appended(), 2);
  const uint64_t epoch = l.lead->epoch();
  const std::string dir = LogPartsDir(kPrefix, 1, epoch, 1);  // first try
  EXPECT_THAT(parts(), ::testing::ElementsAre(dir + "000000", dir + "000001",
                                              dir + "000002", dir + "000003"));
  // A dead leader's parts at the next index, with no entry, and a late put
  // of a failed try of this leader's: never read.
  ASSERT_TRUE(
      client->Put(LogPartsDir(kPrefix, 3, epoch - 1, 1) + "000000", "junk")
          .ok());
  ASSERT_TRUE(
      client->Put(LogPartsDir(kPrefix, 3, epoch, 7) + "000000", "junk").ok());
  ASSERT_TRUE(
      l.store->CreateJob(LargeRequest("big2", 9000, 2), Seconds{3}).ok());
  EXPECT_EQ(parts().size(), 4u + 2 + 3);

  // A copy replays them all, whole.
  std::unique_ptr<SqliteStore> copy = Copy("b.db");
  ASSERT_EQ(*l.log->CatchUp(*copy), 3);
  EXPECT_EQ(copy->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);
  EXPECT_EQ(copy->QueryJobs({})->jobs[0].spec.env.at("BIG").size(), 20000u);

  // A missing part: the copy stops there, saying so.
  ASSERT_TRUE(
      l.store->CreateJob(LargeRequest("big3", 9000, 3), Seconds{4}).ok());
  ASSERT_TRUE(
      client->Delete(LogPartsDir(kPrefix, 4, epoch, 3) + "000001").ok());
  absl::StatusOr<int64_t> replayed = l.log->CatchUp(*copy);
  ASSERT_FALSE(replayed.ok());
  EXPECT_TRUE(absl::IsDataLoss(replayed.status())) << replayed.status();
  EXPECT_THAT(replayed.status().message(),
              HasSubstr("log entry 4's parts: chunk 1 of 3 is missing"));
  EXPECT_EQ(*copy->log_index(), 3);

  // A snapshot drops the parts with the log.
  ASSERT_EQ(*l.log->Snapshot(), 4);
  EXPECT_THAT(parts(), ::testing::IsEmpty());

  // A deposed leader writes no part.
  ASSERT_TRUE(client->Delete(l.lead->leader_key()).ok());
  absl::StatusOr<JobId> refused =
      l.store->CreateJob(LargeRequest("late", 9000, 4), Seconds{5});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no longer leads"));
  EXPECT_EQ(lost.load(), 1);
  EXPECT_THAT(parts(), ::testing::IsEmpty());
  EXPECT_EQ(l.store->QueryJobs({})->jobs.size(), 4u);
}

// Past etcd's own limit on a request (1.5 MiB by default), as a large
// commit (a whole queue cancelled at once) can be.
TEST_F(EtcdStoreTest, AWriteLargerThanEtcdTakesInOneRequestCommits) {
  std::atomic<int> lost{0};
  Leader l = Lead("a.db", &lost);
  absl::StatusOr<JobId> big =
      l.store->CreateJob(LargeRequest("big", 3 << 20, 5), Seconds{1});
  ASSERT_TRUE(big.ok()) << big.status();
  std::unique_ptr<SqliteStore> copy = Copy("b.db");
  ASSERT_EQ(*l.log->CatchUp(*copy), 1);
  EXPECT_EQ(copy->QueryJobs({})->jobs, l.store->QueryJobs({})->jobs);
  EXPECT_EQ(lost.load(), 0);
}

}  // namespace
}  // namespace tiresias
