// Virtual clusters in the SQLite store: durable across reopening, replaced
// by name, removed; a row that does not decode names the file and row.
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::TestDir;

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
