// Keys of the webhooks the master sends (`submit --notify`): a job's is
// signed under its owner's key, derived from the cluster's notify key (the
// master's <state-dir>/notify-key), so that a user's key verifies their own
// jobs' webhooks and forges nothing another user's receiver accepts. The
// cluster's key itself signs the admin notices (--notify-admin).
//
//   std::string alice = security::UserNotifyKey(cluster_key, "alice");
#ifndef TIRESIAS_SECURITY_NOTIFY_KEY_H_
#define TIRESIAS_SECURITY_NOTIFY_KEY_H_

#include <string>
#include <string_view>

namespace tiresias::security {

// The cluster's notify key file: `key_file` if given (master
// --notify-key-file), else <state_dir>/notify-key.
std::string NotifyKeyPath(const std::string& state_dir,
                          const std::string& key_file);

// The lowercase hex HMAC-SHA256 of `message` under `key`.
std::string HexHmacSha256(std::string_view key, std::string_view message);

// `user`'s webhook key: HexHmacSha256(cluster_key, "tiresias-notify-user:"
// + user). It tells nothing of the cluster's key or of another user's.
std::string UserNotifyKey(std::string_view cluster_key, std::string_view user);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_NOTIFY_KEY_H_
