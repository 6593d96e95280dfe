// Virtual clusters in the SQLite store: durable across reopening, replaced
// by name, removed; a row that does not decode names the file and row.
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::QueryValue;
using master_testing::RawSql;
using master_testing::TestDir;

// Each job's VC is a column for listings to filter on; a file written
// before it had one (schema 17, the VC in the spec alone) gets it from
// the spec when opened.
TEST(StoreVcsTest, JobsAreListedByVcAlsoFromAFileOfSchema17) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  JobRequest spec;
  spec.name = "j";
  spec.user = "bob";
  spec.num_gpus = 1;
  spec.command = {"true"};
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<NewJob> jobs = {{spec, ""}, {spec, ""}, {spec, ""}};
    jobs[0].spec.vc = "vision";
    jobs[2].spec.vc = "vision";
    auto created = (*store)->CreateJobs(jobs, Seconds{1});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  // Back to schema 17, as an older master left it.
  RawSql(path,
         "DROP INDEX jobs_by_vc; ALTER TABLE jobs DROP COLUMN vc; DROP TABLE "
         "qos; DROP TABLE settings; DROP INDEX jobs_splitting_arrays; "
         "ALTER TABLE jobs DROP COLUMN array_count; ALTER TABLE jobs DROP "
         "COLUMN array_split; ALTER TABLE jobs DROP COLUMN array_spec; ALTER "
         "TABLE jobs DROP COLUMN array_gpus; ALTER TABLE jobs DROP COLUMN "
         "live_attempt; UPDATE meta SET value = '17' "
         "WHERE key = 'schema_version'");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto ids = [&](std::optional<std::string> vc) {
      JobQuery query;
      query.vc = std::move(vc);
      absl::StatusOr<JobPage> page = (*store)->QueryJobs(query);
      EXPECT_TRUE(page.ok()) << page.status();
      std::vector<JobId> out;
      for (const JobRecord& job : page->jobs) out.push_back(job.id);
      return out;
    };
    EXPECT_EQ(ids("vision"), (std::vector<JobId>{1, 3}));
    EXPECT_EQ(ids(""), (std::vector<JobId>{2}));
    EXPECT_EQ(ids("speech"), (std::vector<JobId>{}));
    EXPECT_EQ(ids(std::nullopt).size(), 3u);
  }
  EXPECT_EQ(QueryValue(path,
                       "SELECT value FROM meta WHERE key = "
                       "'schema_version'"),
            absl::StrCat(SqliteStore::kSchemaVersion));
}

TEST(StoreVcsTest, VcsAreDurableReplacedByNameAndRemoved) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  VcRecord vision{.name = "vision",
                  .quota = "2x8,4x1",
                  .weight = 2,
                  .borrow_limit = 8,
                  .lend_limit = -1,
                  .fair_per_user = true,
                  .fair_quantum = 300,
                  .members = {"alice", "bob"},
                  .default_for = {"alice"}};
  VcRecord speech{.name = "speech", .quota = "1x8", .members = {"*"}};
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutVc(vision).ok());
    ASSERT_TRUE((*store)->PutVc(speech).ok());
    speech.quota = "2x8";  // replaces the first
    ASSERT_TRUE((*store)->PutVc(speech).ok());
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto vcs = (*store)->ListVcs();
  ASSERT_TRUE(vcs.ok()) << vcs.status();
  EXPECT_EQ(*vcs, (std::vector<VcRecord>{speech, vision}));  // by name
  ASSERT_TRUE((*store)->RemoveVc("speech").ok());
  const absl::Status again = (*store)->RemoveVc("speech");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "virtual cluster \"speech\": no such VC");
  EXPECT_EQ(*(*store)->ListVcs(), (std::vector<VcRecord>{vision}));
}

}  // namespace
}  // namespace tiresias
