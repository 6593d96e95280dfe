// The store line of `tiresias status`, by hand-made healths.
#include "cli/store_text.h"

#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

TEST(StoreTextTest, SaysWhereTheStoreIsAndEachMembersHealth) {
  v1::StoreHealth s;
  EXPECT_EQ(DescribeStore(s), "");  // an older master says nothing
  s.set_kind("sqlite");
  s.set_where("/var/lib/tiresias");
  EXPECT_EQ(DescribeStore(s), "SQLite in /var/lib/tiresias");

  s.set_kind("etcd");
  s.set_where("etcd://a:1,b:2,c:3/t/");
  s.set_log_index(1234);
  EXPECT_EQ(DescribeStore(s),
            "etcd://a:1,b:2,c:3/t/ at log entry 1234, members not asked yet");
  s.set_checked(1500);
  v1::StoreMember* a = s.add_members();
  a->set_endpoint("a:1");
  a->set_in_use(true);
  a->set_raft_leader(true);
  a->set_has_leader(true);
  a->set_version("3.4.23");
  a->set_db_size(20480);
  v1::StoreMember* b = s.add_members();
  b->set_endpoint("b:2");
  b->set_error("connection refused");
  v1::StoreMember* c = s.add_members();
  c->set_endpoint("c:3");
  c->set_has_leader(true);
  c->set_version("3.4.23");
  c->set_db_size(3 << 20);
  EXPECT_EQ(DescribeStore(s),
            "etcd://a:1,b:2,c:3/t/ at log entry 1234, 2 of 3 members up: "
            "a:1 (in use, raft leader, etcd 3.4.23, 20K); "
            "b:2 DOWN (connection refused); "
            "c:3 (etcd 3.4.23, 3.0M)");
  // Without a quorum a member answers but knows no raft leader; an alarm
  // (a full disk) is said too: neither counts as up.
  a->set_raft_leader(false);
  a->set_has_leader(false);
  c->add_alarms("NOSPACE");
  EXPECT_EQ(DescribeStore(s),
            "etcd://a:1,b:2,c:3/t/ at log entry 1234, 0 of 3 members up: "
            "a:1 (in use, NO QUORUM, etcd 3.4.23, 20K); "
            "b:2 DOWN (connection refused); "
            "c:3 (etcd 3.4.23, 3.0M, ALARM NOSPACE)");
}

}  // namespace
}  // namespace tiresias::cli
