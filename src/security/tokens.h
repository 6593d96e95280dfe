// Bearer tokens: what a user or a script presents to the master instead of
// (or besides) a client certificate. The master issues a token once, shows
// its text once, and keeps only a salted hash, so that a copy of its state
// cannot be replayed.
//
// Token text: "tsk_<id>_<secret>", <id> the store's positive row id (which
// lets the master find the row without a search), <secret> 32 random bytes
// from the OS as 64 lowercase hex digits. The "tsk_" prefix makes a leaked
// token easy to spot and to redact from logs (RedactTokens).
//
// Pure apart from drawing randomness from the OS; thread-safe.
#ifndef TIRESIAS_SECURITY_TOKENS_H_
#define TIRESIAS_SECURITY_TOKENS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tiresias::security {

inline constexpr std::string_view kTokenPrefix = "tsk_";
inline constexpr int kTokenSecretBytes = 32;
inline constexpr int kTokenSaltBytes = 16;

struct IssuedToken {
  std::string text;  // "tsk_<id>_<secret>": shown to the user once
  std::string salt;  // 32 lowercase hex digits: stored
  std::string hash;  // HashSecret(secret, salt): stored
};

// A fresh token for row `id`. Requires id > 0.
IssuedToken NewToken(int64_t id);

// Lowercase hex SHA-256 of the salt's text followed by the secret's text.
std::string HashSecret(std::string_view secret, std::string_view salt);

struct ParsedToken {
  int64_t id = 0;
  std::string secret;
};

// The id and secret of a token's text. InvalidArgument saying which part is
// wrong ("token: ...") for anything else; the message never repeats the
// text, which may be a real secret typed into the wrong place.
absl::StatusOr<ParsedToken> ParseToken(std::string_view text);

// Whether HashSecret(secret, salt) == hash, compared in constant time
// (CRYPTO_memcmp), so that response times do not leak the hash.
bool SecretMatches(std::string_view secret, std::string_view salt,
                   std::string_view hash);

// A lifetime as people write it: a positive whole number and a unit, "30d",
// "12h", "45m" or "90s". InvalidArgument naming `field` (a flag, say) and
// quoting the text otherwise (a duration is no secret).
absl::StatusOr<std::chrono::seconds> ParseDuration(
    std::string_view text, std::string_view field = "duration");

// `bytes` bytes from the OS's cryptographic random source as 2 x `bytes`
// lowercase hex digits: an id nobody can guess (a dashboard session).
std::string RandomHex(size_t bytes);

// `text` with the secret of every token-shaped run ("tsk_<digits>_<hex>")
// replaced: "tsk_12_<redacted>". For log lines and error messages.
std::string RedactTokens(std::string_view text);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_TOKENS_H_
