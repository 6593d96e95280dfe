// The masters' store in words, for `tiresias status`: where it is and, on
// etcd, the log entry the leader holds and each member as the leader last
// asked it.
//
//   "etcd://a:2379,b:2379/tiresias/ at log entry 1234, 1 of 2 members up:
//    a:2379 (in use, raft leader, etcd 3.4.23, 20K); b:2379 DOWN
//    (connection refused)"
#ifndef TIRESIAS_CLI_STORE_TEXT_H_
#define TIRESIAS_CLI_STORE_TEXT_H_

#include <string>

#include "proto/tiresias.pb.h"

namespace tiresias::cli {

// One line; "" for a store of no known kind (an older master).
std::string DescribeStore(const v1::StoreHealth& store);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_STORE_TEXT_H_
