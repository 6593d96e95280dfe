// The control channel's frames (control_channel.h): EncodeRequest,
// DecodeRequest, EncodeResponse, DecodeResponse.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/control_channel.h"

namespace tiresias::cli::control {
namespace {

constexpr char kFrameVersion = 1;

void PutString(std::string* out, absl::string_view value) {
  const uint32_t n = static_cast<uint32_t>(value.size());
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(n >> (8 * i)));
  out->append(value.data(), value.size());
}

// Reads the strings PutString wrote, in order.
class Reader {
 public:
  explicit Reader(absl::string_view frame) : rest_(frame) {}
  bool Byte(char* c) {
    if (rest_.empty()) return false;
    *c = rest_[0];
    rest_.remove_prefix(1);
    return true;
  }
  bool String(std::string* value) {
    if (rest_.size() < 4) return false;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) {
      n |= static_cast<uint32_t>(static_cast<unsigned char>(rest_[i]))
           << (8 * i);
    }
    rest_.remove_prefix(4);
    if (rest_.size() < n) return false;
    value->assign(rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  bool Done() const { return rest_.empty(); }

 private:
  absl::string_view rest_;
};

std::string Frame(const std::string& payload) {
  std::string frame;
  PutString(&frame, payload);
  return frame;
}

// A frame of the version byte and `fields` as length-prefixed strings.
std::string EncodeFields(std::initializer_list<absl::string_view> fields) {
  std::string payload(1, kFrameVersion);
  for (absl::string_view field : fields) PutString(&payload, field);
  return Frame(payload);
}

// The `count` fields of a payload EncodeFields made (its frame's length
// already taken off); nullopt if the version differs, a field is cut
// short, or bytes are left over.
std::optional<std::vector<std::string>> DecodeFields(absl::string_view payload,
                                                     size_t count) {
  Reader reader(payload);
  char version = 0;
  if (!reader.Byte(&version) || version != kFrameVersion) return std::nullopt;
  std::vector<std::string> fields(count);
  for (std::string& field : fields) {
    if (!reader.String(&field)) return std::nullopt;
  }
  if (!reader.Done()) return std::nullopt;
  return fields;
}

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("control channel: malformed ", what, " frame"));
}

}  // namespace

std::string EncodeRequest(const Request& request) {
  return EncodeFields({request.method, request.token,
                       absl::StrCat(request.timeout_seconds), request.body});
}

absl::StatusOr<Request> DecodeRequest(absl::string_view payload) {
  std::optional<std::vector<std::string>> fields = DecodeFields(payload, 4);
  Request request;
  if (!fields || !absl::SimpleAtod((*fields)[2], &request.timeout_seconds)) {
    return Malformed("request");
  }
  request.method = std::move((*fields)[0]);
  request.token = std::move((*fields)[1]);
  request.body = std::move((*fields)[3]);
  return request;
}

std::string EncodeResponse(const Response& response) {
  return EncodeFields(
      {absl::StrCat(response.code), response.message, response.body});
}

absl::StatusOr<Response> DecodeResponse(absl::string_view payload) {
  std::optional<std::vector<std::string>> fields = DecodeFields(payload, 3);
  Response response;
  if (!fields || !absl::SimpleAtoi((*fields)[0], &response.code) ||
      response.code < 0 || response.code > 16) {
    return Malformed("response");
  }
  response.message = std::move((*fields)[1]);
  response.body = std::move((*fields)[2]);
  return response;
}

}  // namespace tiresias::cli::control
