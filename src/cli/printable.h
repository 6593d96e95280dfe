// Terminal-safe text for the CLI's tables and text views. A job's name,
// command, environment, an event's detail or a node's name come from
// whoever submitted the job or ran the agent: printed raw, a newline would
// forge a table row and an escape sequence would drive the terminal.
//
//   std::printf("%-16s\n", cli::Printable(job.spec().name()).c_str());
//
// --json output is JSON (escaped by its encoder) and `tiresias logs` prints
// the job's own output bytes: neither goes through this.
#ifndef TIRESIAS_CLI_PRINTABLE_H_
#define TIRESIAS_CLI_PRINTABLE_H_

#include <string>
#include <string_view>

namespace tiresias::cli {

// `text` with every control character escaped and valid printable UTF-8
// kept as is: \n, \r, \t, \\x1b (ESC) and \xNN for the other C0 bytes and
// DEL; \u0080..\u009f for C1 controls; \xNN for each byte that is not part
// of well-formed UTF-8. The result holds no byte below 0x20 and no DEL.
std::string Printable(std::string_view text);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_PRINTABLE_H_
