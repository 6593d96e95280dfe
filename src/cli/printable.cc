#include "cli/printable.h"

#include "core/utf8.h"

namespace tiresias::cli {

// One escaping for every place that shows caller text (the master's audit
// log uses it too).
std::string Printable(std::string_view text) { return PrintableText(text); }

}  // namespace tiresias::cli
