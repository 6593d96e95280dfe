#include "security/notify_key.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace tiresias::security {

std::string NotifyKeyPath(const std::string& state_dir,
                          const std::string& key_file) {
  return key_file.empty()
             ? (std::filesystem::path(state_dir) / "notify-key").string()
             : key_file;
}

std::string HexHmacSha256(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
       mac, &len);
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", mac[i]);
    hex += byte;
  }
  return hex;
}

std::string UserNotifyKey(std::string_view cluster_key, std::string_view user) {
  return HexHmacSha256(
      cluster_key, absl::StrCat("tiresias-notify-user:", std::string(user)));
}

}  // namespace tiresias::security
