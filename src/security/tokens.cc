#include "security/tokens.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cassert>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "security/openssl_util.h"

namespace tiresias::security {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }
bool IsHex(char c) { return IsLowerHex(c) || (c >= 'A' && c <= 'F'); }

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("token: ", ToAbsl(what), " (expected tsk_<id>_<",
                   kTokenSecretBytes * 2, " lowercase hex digits>)"));
}

}  // namespace

IssuedToken NewToken(int64_t id) {
  assert(id > 0);
  const std::string secret =
      internal::Hex(internal::RandomBytes(kTokenSecretBytes));
  IssuedToken token;
  token.text = absl::StrCat(ToAbsl(kTokenPrefix), id, "_", secret);
  token.salt = internal::Hex(internal::RandomBytes(kTokenSaltBytes));
  token.hash = HashSecret(secret, token.salt);
  return token;
}

std::string RandomHex(size_t bytes) {
  return internal::Hex(internal::RandomBytes(bytes));
}

std::string HashSecret(std::string_view secret, std::string_view salt) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr &&
                  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, salt.data(), salt.size()) == 1 &&
                  EVP_DigestUpdate(ctx, secret.data(), secret.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, digest, &length) == 1;
  EVP_MD_CTX_free(ctx);
  // SHA-256 of memory cannot fail short of memory exhaustion; an empty hash
  // matches nothing, so a failure refuses rather than admits.
  if (!ok) return "";
  return internal::Hex(
      std::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::StatusOr<ParsedToken> ParseToken(std::string_view text) {
  if (!text.starts_with(kTokenPrefix)) {
    return Malformed("does not start with tsk_");
  }
  text.remove_prefix(kTokenPrefix.size());
  const size_t underscore = text.find('_');
  if (underscore == std::string_view::npos) {
    return Malformed("no '_' between the id and the secret");
  }
  const std::string_view id_text = text.substr(0, underscore);
  const std::string_view secret = text.substr(underscore + 1);
  ParsedToken parsed;
  bool id_ok = !id_text.empty() && id_text.size() <= 19 && id_text[0] != '0';
  for (char c : id_text) id_ok = id_ok && IsDigit(c);
  if (!id_ok || !absl::SimpleAtoi(ToAbsl(id_text), &parsed.id) ||
      parsed.id <= 0) {
    return Malformed("the id is not a positive integer");
  }
  bool secret_ok = secret.size() == 2 * kTokenSecretBytes;
  for (char c : secret) secret_ok = secret_ok && IsLowerHex(c);
  if (!secret_ok) {
    return Malformed(absl::StrCat("the secret is not ", 2 * kTokenSecretBytes,
                                  " lowercase hex digits"));
  }
  parsed.secret = std::string(secret);
  return parsed;
}

bool SecretMatches(std::string_view secret, std::string_view salt,
                   std::string_view hash) {
  const std::string computed = HashSecret(secret, salt);
  // The length of a SHA-256 hex digest is public; only the bytes are not.
  return !computed.empty() && computed.size() == hash.size() &&
         CRYPTO_memcmp(computed.data(), hash.data(), hash.size()) == 0;
}

absl::StatusOr<std::chrono::seconds> ParseDuration(std::string_view text,
                                                   std::string_view field) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field),
        ": expected a positive whole number followed by d, h, m or s "
        "(e.g. 30d, 12h, 45m, 90s), got \"",
        ToAbsl(text.substr(0, 40)), text.size() > 40 ? "...\"" : "\""));
  };
  if (text.size() < 2) return bad();
  int64_t unit_seconds = 0;
  switch (text.back()) {
    case 'd':
      unit_seconds = 86400;
      break;
    case 'h':
      unit_seconds = 3600;
      break;
    case 'm':
      unit_seconds = 60;
      break;
    case 's':
      unit_seconds = 1;
      break;
    default:
      return bad();
  }
  const std::string_view number = text.substr(0, text.size() - 1);
  int64_t count = 0;
  for (char c : number) {
    if (!IsDigit(c)) return bad();
  }
  if (!absl::SimpleAtoi(ToAbsl(number), &count) || count <= 0 ||
      count > std::numeric_limits<int64_t>::max() / unit_seconds) {
    return bad();
  }
  return std::chrono::seconds(count * unit_seconds);
}

std::string RedactTokens(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find(kTokenPrefix, pos);
    if (start == std::string_view::npos) break;
    // tsk_ <digits> _ <hex>: redact the hex run, whatever its length, so
    // that a truncated or mistyped secret is hidden too.
    size_t i = start + kTokenPrefix.size();
    const size_t digits = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    const bool shaped = i > digits && i + 1 < text.size() && text[i] == '_' &&
                        IsHex(text[i + 1]);
    if (!shaped) {
      out.append(text.substr(pos, start + kTokenPrefix.size() - pos));
      pos = start + kTokenPrefix.size();
      continue;
    }
    out.append(text.substr(pos, i + 1 - pos));
    out.append("<redacted>");
    i += 1;
    while (i < text.size() && IsHex(text[i])) ++i;
    pos = i;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace tiresias::security
