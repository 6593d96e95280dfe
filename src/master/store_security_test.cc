// Tokens and the audit log in the SQLite store: durable, revocation kept,
// impossible values refused.
#include <cmath>

#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::TestDir;

TokenRecord Token(std::string user, bool admin = false) {
  TokenRecord t;
  t.user = std::move(user);
  t.admin = admin;
  t.salt = "00ff";
  t.hash = "abcd";
  t.created = Seconds{100};
  return t;
}

TEST(StoreSecurityTest, TokensAreDurableAndRevocationIsKept) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    TokenRecord alice = Token("alice");
    alice.expires = Seconds{5000};
    alice.description = "laptop";
    EXPECT_EQ(*(*store)->CreateToken(alice), 1);
    EXPECT_EQ(*(*store)->CreateToken(Token("root", true)), 2);
    ASSERT_TRUE((*store)->RevokeToken(1, Seconds{200}).ok());
    ASSERT_TRUE((*store)->RevokeToken(1, Seconds{300}).ok());  // keeps 200
    EXPECT_EQ((*store)->RevokeToken(7, Seconds{300}).code(),
              absl::StatusCode::kNotFound);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto tokens = (*store)->ListTokens();
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 2u);
  const TokenRecord& alice = (*tokens)[0];
  EXPECT_EQ(alice.id, 1);
  EXPECT_EQ(alice.user, "alice");
  EXPECT_FALSE(alice.admin);
  EXPECT_EQ(alice.salt, "00ff");
  EXPECT_EQ(alice.hash, "abcd");
  EXPECT_EQ(alice.expires, Seconds{5000});
  EXPECT_EQ(alice.revoked, Seconds{200});
  EXPECT_EQ(alice.description, "laptop");
  EXPECT_TRUE((*tokens)[1].admin);
  EXPECT_FALSE((*tokens)[1].revoked.has_value());
  // Ids are never reused, even after a revocation.
  EXPECT_EQ(*(*store)->CreateToken(Token("carol")), 3);
}

TEST(StoreSecurityTest, AuditLogAppendsInOrder) {
  TestDir dir;
  auto store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 5; ++i) {
    AuditRecord r;
    r.time = Seconds{100.0 + i};
    r.principal = "alice";
    r.peer = "ipv4:127.0.0.1:1234";
    r.action = "CancelJob job " + std::to_string(i);
    r.outcome = i % 2 ? "denied" : "ok";
    r.detail = "detail";
    ASSERT_TRUE((*store)->AppendAudit(r).ok());
  }
  auto all = (*store)->AuditAfter(0, 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].sequence, 1);
  EXPECT_EQ((*all)[4].action, "CancelJob job 4");
  EXPECT_EQ((*all)[1].outcome, "denied");
  auto tail = (*store)->AuditAfter(3, 1);
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->size(), 1u);
  EXPECT_EQ((*tail)[0].sequence, 4);
}

// "A row with invalid UTF-8 made the audit log unreadable": rows written
// raw by an older master (or by hand) are read back escaped and bounded,
// and the rows after them are read too; new rows are stored escaped.
TEST(StoreSecurityTest, PoisonedAuditRowsAreReadBackEscaped) {
  TestDir dir;
  const std::string path = dir.File("state.db");
  { ASSERT_TRUE(SqliteStore::Open(path).ok()); }
  master_testing::RawSql(
      path,
      "INSERT INTO audit (time, principal, peer, action, outcome, detail) "
      "VALUES (100, CAST(X'6d616cff' AS TEXT), 'ipv4:127.0.0.1:1', "
      "'UpdateJobs cancel', 'denied', "
      "CAST(X'616c696365ff0a1b5b324a' AS TEXT) || printf('%.5000c', 'x'))");
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  AuditRecord later;
  later.time = Seconds{101};
  later.principal = "ops";
  later.action = "CreateToken 2";
  later.outcome = "ok";
  later.detail = "for carol\x01\x7f";
  ASSERT_TRUE((*store)->AppendAudit(later).ok());
  auto all = (*store)->AuditAfter(0, 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].principal, "mal\\xff");
  EXPECT_EQ((*all)[0].detail.rfind("alice\\xff\\n\\x1b[2Jxxx", 0), 0u)
      << (*all)[0].detail;
  EXPECT_LT((*all)[0].detail.size(), 2100u);
  EXPECT_EQ((*all)[1].detail, "for carol\\x01\\x7f");
  // Stored escaped: the file holds clean text whoever reads it.
  store->reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT detail FROM audit WHERE sequence = 2",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(
                sqlite3_column_text(stmt, 0))),
            "for carol\\x01\\x7f");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(StoreSecurityTest, NonFiniteTimesAreRefused) {
  TestDir dir;
  auto store = SqliteStore::Open(dir.File("state.db"));
  ASSERT_TRUE(store.ok());
  TokenRecord t = Token("a");
  t.expires = Seconds{std::nan("")};
  EXPECT_EQ((*store)->CreateToken(t).status().code(),
            absl::StatusCode::kInvalidArgument);
  AuditRecord r;
  r.time = Seconds{INFINITY};
  EXPECT_EQ((*store)->AppendAudit(r).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*store)->ListTokens()->empty());
}

}  // namespace
}  // namespace tiresias
