// Test-only: what the tests of the replicated store share: a real etcd
// (etcd_test_server.h, over TLS with client certificates when asked), a
// master's client of it, copies of the state, leads, and a leader.
#ifndef TIRESIAS_MASTER_ETCD_STORE_FIXTURE_H_
#define TIRESIAS_MASTER_ETCD_STORE_FIXTURE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "master/etcd_store.h"
#include "master/etcd_test_server.h"
#include "master/test_dir.h"
#include "security/pem_files.h"
#include "security/pki.h"

namespace tiresias::master_testing {

inline JobRequest Request(std::string name, int gpus = 2) {
  return AliceTrainRequest(std::move(name), gpus);
}

// A cluster CA in `dir`; etcd's certificate (for 127.0.0.1) and a
// master's client certificate, signed by it; another CA, signing nothing
// etcd trusts ("other-ca.pem", "stranger.pem").
inline EtcdTestTls WriteTls(const TestDir& dir) {
  using security::CertRequest;
  const std::string d = dir.path().string();
  auto ca = security::CreateCa("etcd test CA");
  auto other = security::CreateCa("another CA");
  EXPECT_TRUE(ca.ok() && other.ok());
  auto server =
      security::IssueCertificate(*ca, CertRequest{.common_name = "etcd",
                                                  .ip_addresses = {"127.0.0.1"},
                                                  .server_auth = true,
                                                  .client_auth = true});
  auto master = security::IssueCertificate(
      *ca, CertRequest{.common_name = "tiresias-master", .client_auth = true});
  auto stranger = security::IssueCertificate(
      *other,
      CertRequest{.common_name = "tiresias-master", .client_auth = true});
  EXPECT_TRUE(server.ok() && master.ok() && stranger.ok());
  for (const auto& [base, pair] : {std::pair{"ca", &*ca},
                                   {"other-ca", &*other},
                                   {"etcd", &*server},
                                   {"master", &*master},
                                   {"stranger", &*stranger}}) {
    EXPECT_TRUE(security::WritePemFiles(d, base, *pair).ok()) << base;
  }
  return {.cert_file = security::CertPath(d, "etcd"),
          .key_file = security::KeyPath(d, "etcd"),
          .ca_file = security::CertPath(d, "ca"),
          .client_cert_file = security::CertPath(d, "master"),
          .client_key_file = security::KeyPath(d, "master")};
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  explicit EtcdStoreTest(bool tls = false)
      : tls_(tls ? WriteTls(dir_) : EtcdTestTls{}),
        etcd_(dir_.File("etcd"), tls_) {}

  // A client as a master is given: over TLS, with the CA and its own
  // certificate, when etcd speaks TLS.
  EtcdClient::Options ClientOptions() const {
    return {.endpoints = {etcd_.endpoint()},
            .ca_file = tls_.ca_file,
            .cert_file = tls_.client_cert_file,
            .key_file = tls_.client_key_file};
  }
  std::shared_ptr<EtcdClient> Client() {
    auto c = EtcdClient::Connect(ClientOptions());
    EXPECT_TRUE(c.ok()) << c.status();
    return std::shared_ptr<EtcdClient>(std::move(*c));
  }
  // A master's copy, `name` in the test folder, of the cluster in etcd.
  std::unique_ptr<SqliteStore> Copy(const std::string& name) {
    auto store = SqliteStore::Open(dir_.File(name), CopyOptions());
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }
  // How a master opens its copy.
  SqliteStoreOptions CopyOptions() {
    auto id = EtcdClusterId(*Client(), kPrefix);
    EXPECT_TRUE(id.ok()) << id.status();
    return {.sync_every_commit = false, .cluster_id = id.value_or("")};
  }
  std::unique_ptr<EtcdLead> Join(
      std::atomic<int>* lost,
      std::chrono::seconds ttl = std::chrono::seconds(5)) {
    auto lead = EtcdLead::Join(
        Client(), kPrefix,
        {.ttl = ttl, .on_lost = [lost](const std::string&) { ++*lost; }});
    EXPECT_TRUE(lead.ok()) << lead.status();
    return std::move(*lead);
  }

  // A master leading the store, with its copy `name`.
  struct Leader {
    std::unique_ptr<SqliteStore> store;
    std::unique_ptr<EtcdLead> lead;
    std::unique_ptr<EtcdLog> log;
  };
  Leader Lead(const std::string& name, std::atomic<int>* lost,
              std::chrono::seconds ttl = std::chrono::seconds(5),
              EtcdLog::Options log_options = {}) {
    Leader l{Copy(name), Join(lost, ttl),
             std::make_unique<EtcdLog>(Client(), kPrefix, log_options)};
    EXPECT_TRUE(*l.lead->TryLead());
    EXPECT_TRUE(l.log->StartLeading(*l.store, l.lead.get()).ok());
    return l;
  }

  static constexpr char kPrefix[] = "/t/";
  TestDir dir_{"etcd_store"};
  EtcdTestTls tls_;
  EtcdTestServer etcd_;
};

class EtcdStoreTlsTest : public EtcdStoreTest {
 protected:
  EtcdStoreTlsTest() : EtcdStoreTest(/*tls=*/true) {}
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_MASTER_ETCD_STORE_FIXTURE_H_
