// Metadata keys of the master's streams, for the master and its clients.
#ifndef TIRESIAS_CORE_STREAM_KEYS_H_
#define TIRESIAS_CORE_STREAM_KEYS_H_

#include <string_view>

namespace tiresias {

// In a WatchEvents stream's initial metadata: the master follows the event
// log from the stream's cursor (no event written after it is missed). A
// refused stream's answer has no such key.
inline constexpr std::string_view kWatchFollowing = "tiresias-following";

}  // namespace tiresias

#endif  // TIRESIAS_CORE_STREAM_KEYS_H_
