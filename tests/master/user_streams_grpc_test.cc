// Streams per user (MasterOptions::max_streams_per_user, user_streams.h),
// over real gRPC with TLS and tokens and real SQLite: a user who holds the
// most open streams is refused one more WatchEvents stream, and a JobIo
// call (attach, port-forward: three master threads each), with
// RESOURCE_EXHAUSTED naming the flag, while another user's watches open
// and get their events; once one of the first user's streams ends, they
// may open another. Before the limit, any user could open streams without
// end, each holding a connection and memory, a JobIo three master threads.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "master/metrics.h"
#include "master/user_streams.h"
#include "secure_master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class UserStreamsTest : public SecureMasterTest {
 protected:
  static constexpr int kLimit = 3;

  void SetUp() override {
    options_.max_streams_per_user = kLimit;
    SecureMasterTest::SetUp();
  }

  // An open WatchEvents stream of every job, live from now.
  struct Watch {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<v1::Tiresias::Stub> stub;
    std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader;
  };
  // Opens a stream as `token`'s user; it is open on the master once its
  // initial metadata came (sent when the cursor is fixed). A refused one
  // ends at once: its status in *refused.
  Watch Open(const std::string& token, grpc::Status* refused = nullptr) {
    Watch w;
    w.ctx = Ctx(token);
    w.ctx->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(30));
    w.stub = Client();
    v1::WatchEventsRequest req;
    w.reader = w.stub->WatchEvents(w.ctx.get(), req);
    w.reader->WaitForInitialMetadata();
    if (refused != nullptr) {
      v1::JobEvent event;
      EXPECT_FALSE(w.reader->Read(&event));
      *refused = w.reader->Finish();
    }
    return w;
  }
  static void End(Watch& w) {
    w.ctx->TryCancel();
    v1::JobEvent event;
    while (w.reader->Read(&event)) {
    }
    EXPECT_EQ(w.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Whether the master counts `user`'s streams at `count`, within 10 s (a
  // stream's end reaches the master after the client's).
  bool OpenOf(const std::string& user, int count) {
    for (int i = 0; i < 200; ++i) {
      if (server_->open_streams_of(user) == count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // A 1-GPU job of `token`'s user: pending (no node registered).
  JobId Submit(const std::string& token) {
    v1::SubmitJobRequest submit;
    submit.mutable_spec()->set_gpus(1);
    submit.mutable_spec()->add_command("true");
    v1::SubmitJobResponse submitted;
    grpc::Status s = Client()->SubmitJob(Ctx(token).get(), submit, &submitted);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return submitted.job_id();
  }
  // JobIo, read-only, on `job` as `token`'s user: how the call ended.
  // `before_open` runs once the call started, before its `open` is sent.
  grpc::Status Attach(const std::string& token, JobId job,
                      const std::function<void()>& before_open = {}) {
    auto ctx = Ctx(token);
    auto io = Client()->JobIo(ctx.get());
    if (before_open) before_open();
    v1::IoRequest open;
    open.mutable_open()->set_job_id(job);
    open.mutable_open()->set_read_only(true);
    io->Write(open);
    io->WritesDone();
    v1::IoResponse response;
    while (io->Read(&response)) {
    }
    return io->Finish();
  }
};

TEST_F(UserStreamsTest, AUserPastTheLimitIsRefusedAnotherUserIsNot) {
  const JobId mallorys = Submit(mallory_);
  std::vector<Watch> mallory;
  for (int i = 0; i < kLimit; ++i) mallory.push_back(Open(mallory_));
  ASSERT_TRUE(OpenOf("mallory", kLimit));

  // One more watch is refused at once, saying why and which flag.
  grpc::Status refused;
  Open(mallory_, &refused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("mallory holds 3 streams open"));
  EXPECT_THAT(refused.error_message(), HasSubstr("--max-streams-per-user"));
  // So is a session joined to her own job, before the master asks whether
  // it runs.
  refused = Attach(mallory_, mallorys);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  EXPECT_TRUE(OpenOf("mallory", kLimit));  // the refused ones not counted

  // Alice's own streams are untouched: her watch opens and gets the event
  // of the job she submits; her attach gets as far as the job's state
  // (pending).
  Watch alice = Open(alice_);
  const JobId alices = Submit(alice_);
  v1::JobEvent event;
  ASSERT_TRUE(alice.reader->Read(&event));
  EXPECT_EQ(event.job_id(), alices);
  refused = Attach(alice_, alices);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("has not started yet"));
  EXPECT_EQ(server_->open_streams_of("alice"), 1);  // the attach let go
  // /metrics: what each holds, and mallory's two refusals.
  const std::string page = RenderUserStreams(server_->stream_counts());
  EXPECT_THAT(page, HasSubstr("tiresias_user_streams{user=\"mallory\"} 3\n"));
  EXPECT_THAT(page, HasSubstr("tiresias_user_streams{user=\"alice\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("tiresias_user_streams_refused_total{user="
                              "\"mallory\"} 2\n"));
  EXPECT_THAT(page, Not(HasSubstr("refused_total{user=\"alice\"}")));

  // One of mallory's ends: she may hold another, and no more.
  End(mallory[0]);
  ASSERT_TRUE(OpenOf("mallory", kLimit - 1));
  refused = Attach(mallory_, mallorys);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(server_->open_streams_of("mallory"), kLimit - 1);
  mallory[0] = Open(mallory_);
  ASSERT_TRUE(OpenOf("mallory", kLimit));
  Open(mallory_, &refused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(server_->stream_counts()["mallory"].refused, 3);

  // Every stream that ends is let go of.
  for (Watch& w : mallory) End(w);
  End(alice);
  EXPECT_TRUE(OpenOf("mallory", 0));
  EXPECT_TRUE(OpenOf("alice", 0));
  // Mallory's refusals stay counted (a /metrics counter never falls);
  // alice, with nothing open or refused, is no longer listed.
  const std::map<std::string, UserStreams::Count> after =
      server_->stream_counts();
  ASSERT_TRUE(after.contains("mallory"));
  EXPECT_EQ(after.at("mallory").open, 0);
  EXPECT_EQ(after.at("mallory").refused, 3);
  EXPECT_FALSE(after.contains("alice"));
}

// A JobIo call holds a master thread from its start, before the client's
// `open`: it is authenticated and counted first. Without a credential it
// is refused at once (it used to wait for an `open` that never came, a
// master thread held by nobody's count); a user's silent call counts.
TEST_F(UserStreamsTest, AJobIoCountsBeforeItsOpenAndNeedsACredential) {
  auto anonymous = Ctx();
  auto unauthenticated = Client()->JobIo(anonymous.get());
  v1::IoResponse response;
  EXPECT_FALSE(unauthenticated->Read(&response));
  EXPECT_EQ(unauthenticated->Finish().error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  auto silent_ctx = Ctx(mallory_);
  auto silent = Client()->JobIo(silent_ctx.get());
  EXPECT_TRUE(OpenOf("mallory", 1));
  std::vector<Watch> watches;
  for (int i = 1; i < kLimit; ++i) watches.push_back(Open(mallory_));
  grpc::Status refused;
  Open(mallory_, &refused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  silent_ctx->TryCancel();
  EXPECT_FALSE(silent->Read(&response));
  silent->Finish();
  EXPECT_TRUE(OpenOf("mallory", kLimit - 1));
  for (Watch& w : watches) End(w);
  EXPECT_TRUE(OpenOf("mallory", 0));
}

// The token is checked again at `open`: a client may wait before it, and a
// token revoked meanwhile attaches to nothing (a valid one would get as
// far as the job's state: pending).
TEST_F(UserStreamsTest, AJobIoWhoseTokenIsRevokedBeforeItsOpenIsRefused) {
  auto token = master_->CreateToken("mallory", false, std::nullopt, "");
  ASSERT_TRUE(token.ok()) << token.status();
  const JobId job = Submit(token->text);
  grpc::Status refused = Attach(token->text, job, [&] {
    EXPECT_TRUE(OpenOf("mallory", 1));  // authenticated at its start
    EXPECT_TRUE(master_->RevokeToken(token->id).ok());
  });
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << refused.error_message();
  EXPECT_EQ(Attach(mallory_, job).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);  // her other token
}

}  // namespace
}  // namespace tiresias::master_testing
