// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status, which the abseil of
// Debian 12 (20220623) does not ship.
#ifndef TIRESIAS_CORE_STATUS_MACROS_H_
#define TIRESIAS_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TIRESIAS_CONCAT_INNER_(a, b) a##b
#define TIRESIAS_CONCAT_(a, b) TIRESIAS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status tiresias_status_ = (expr);      \
    if (!tiresias_status_.ok()) return tiresias_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(TIRESIAS_CONCAT_(tiresias_or_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(*tmp)

#endif  // TIRESIAS_CORE_STATUS_MACROS_H_
