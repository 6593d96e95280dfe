#include "dashboard/dashboard_page.h"

#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "dashboard/api_params.h"
#include "dashboard/dashboard_assets.h"
#include "report/embedded_assets.h"
#include "report/html_format.h"

namespace tiresias {
namespace {

// <!DOCTYPE> to the end of <header>'s first part: the title, the
// stylesheet and the master's address.
std::string PageHead(const std::string& master, const std::string& title,
                     const std::string& nonce,
                     const std::string& body_attributes) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<title>Tiresias \xe2\x80\x94 ",
      title, "</title><style nonce=\"", nonce, "\">", ToAbsl(DashboardCss()),
      "</style></head>\n<body", body_attributes,
      "><header><h1>Tiresias</h1><span class=\"sub\">master ", master,
      "</span>");
}

// The jobs table's filters (state, user, name) and page size; the script
// keeps them in the page's URL (?state=...), so a reload keeps them.
std::string JobsFilterForm() {
  std::string states = "<option value=\"\">any state</option>";
  for (const std::string& state : JobStateNames()) {
    absl::StrAppend(&states, "<option value=\"", state, "\">", state,
                    "</option>");
  }
  return absl::StrCat(
      "<form id=\"jobs-filter\" class=\"filter\">"
      "<select id=\"filter-state\" name=\"state\" aria-label=\"state\">",
      states,
      "</select><input id=\"filter-user\" name=\"user\" "
      "placeholder=\"user\" aria-label=\"user\">"
      "<input id=\"filter-name\" name=\"name\" placeholder=\"name\" "
      "aria-label=\"name\">"
      "<input id=\"filter-vc\" name=\"vc\" placeholder=\"VC\" "
      "aria-label=\"virtual cluster\">"
      "<select id=\"filter-page-size\" name=\"page_size\" "
      "aria-label=\"jobs per page\"><option>20</option>"
      "<option selected>50</option><option>200</option></select>"
      "<button type=\"submit\">Filter</button>"
      "<button type=\"button\" id=\"filter-clear\">Clear</button></form>");
}

}  // namespace

std::string DashboardPage(const std::string& master_address, int refresh_ms,
                          const PageViewer& viewer, const std::string& nonce) {
  const std::string master = EscapeHtml(master_address);
  std::string who;
  if (viewer.logged_in) {
    who = absl::StrCat(
        "<span class=\"who\"><span id=\"who\">", EscapeHtml(viewer.user),
        viewer.admin ? " (admin)" : "",
        "</span><form method=\"post\" action=\"/logout\" class=\"logout\">"
        "<button type=\"submit\">Log out</button></form></span>");
  }
  // Only a master without authentication has nobody logged in.
  const std::string banner =
      viewer.logged_in
          ? ""
          : absl::StrCat("<div id=\"insecure-banner\" class=\"banner\"",
                         viewer.insecure ? "" : " hidden",
                         ">insecure: no TLS and no authentication: anyone "
                         "who reaches the master may do anything</div>");
  return absl::StrCat(
      PageHead(master, master, nonce,
               absl::StrCat(" data-refresh-ms=\"", refresh_ms,
                            "\" data-master=\"", master, "\"",
                            viewer.logged_in ? " data-session=\"1\"" : "",
                            " data-csrf=\"", EscapeHtml(viewer.csrf), "\"")),
      "<span class=\"sub\" id=\"updated\"></span>", who, "</header>", banner,
      "<main>"
      "<div id=\"error\"></div><div id=\"cards\"></div>"
      "<section class=\"panel\"><h2>Busy GPUs and waiting jobs</h2>"
      "<div id=\"history-box\"><canvas id=\"history\" role=\"img\" "
      "aria-label=\"Busy GPUs and waiting jobs over time\"></canvas></div>"
      "</section>"
      "<section class=\"panel\"><h2>Jobs</h2>",
      JobsFilterForm(),
      "<div id=\"action-result\" role=\"status\"></div>"
      "<table id=\"jobs\"><thead><tr>"
      "<th class=\"num\">ID</th><th>Name</th><th>User</th><th>State</th>"
      "<th class=\"num\">Queue</th><th class=\"num\">GPUs</th>"
      "<th class=\"num\">Attained (GPU-s)</th><th class=\"num\">Wait</th>"
      "<th class=\"num\">Run</th><th class=\"num\">Preempted</th>"
      "<th>VC</th><th>QOS</th><th>Actions</th><th>Array</th>"
      "<th>Nodes (reason)</th></tr></thead><tbody></tbody></table>"
      "<p id=\"jobs-empty\" class=\"muted\">No jobs yet.</p>"
      "<div class=\"pager\"><button type=\"button\" id=\"jobs-prev\" "
      "disabled>&larr; Previous</button><span id=\"jobs-page\"></span>"
      "<button type=\"button\" id=\"jobs-next\" disabled>Next &rarr;"
      "</button></div></section>"
      "<section class=\"panel\" id=\"job-detail\"><h2 id=\"job-title\"></h2>"
      "<code id=\"job-command\"></code><code id=\"job-env\"></code>"
      "<p id=\"job-profile\"></p><p id=\"job-usage\"></p>"
      "<h3>Log <span id=\"job-log-status\" class=\"muted\"></span></h3>"
      "<pre id=\"job-log\"></pre>"
      "<table id=\"events\"><thead><tr>"
      "<th>Time</th><th>Event</th><th>Detail</th></tr></thead><tbody>"
      "</tbody></table></section>"
      "<section class=\"panel\" id=\"vcs-panel\" hidden><h2>Virtual "
      "clusters</h2><table id=\"vcs\"><thead><tr><th>VC</th><th>quota</th>"
      "<th class=\"num\">GPUs</th><th class=\"num\">on quota</th>"
      "<th class=\"num\">borrowed</th><th class=\"num\">running</th>"
      "<th class=\"num\">waiting</th><th>members</th></tr></thead><tbody>"
      "</tbody></table></section>"
      "<section class=\"panel\"><h2>Nodes</h2><table id=\"nodes\"><thead><tr>"
      "<th>Node</th><th>State</th><th class=\"num\">GPUs</th>"
      "<th class=\"num\">Free</th><th>Jobs</th><th>Drain</th>"
      "<th>Last heartbeat</th></tr>"
      "</thead><tbody></tbody></table>"
      "<p id=\"nodes-empty\" class=\"muted\">No nodes yet.</p></section>"
      "</main><script nonce=\"",
      nonce, "\">", ToAbsl(ChartJs()), "</script><script nonce=\"", nonce,
      "\">", ToAbsl(DashboardJs()), "</script></body></html>\n");
}

std::string LoginPage(const std::string& master_address,
                      const std::string& error, const std::string& nonce) {
  const std::string master = EscapeHtml(master_address);
  return absl::StrCat(
      PageHead(master, "log in", nonce, " data-login=\"1\""), "</header><main>",
      "<section class=\"panel login\"><h2>Log in</h2>",
      error.empty() ? ""
                    : absl::StrCat("<p id=\"login-error\" class=\"error\">",
                                   EscapeHtml(error), "</p>"),
      "<form method=\"post\" action=\"/login\">"
      "<label for=\"token\">Token</label> "
      "<input id=\"token\" name=\"token\" type=\"password\" "
      "autocomplete=\"off\" spellcheck=\"false\" required autofocus> "
      "<button type=\"submit\">Log in</button></form>"
      "<p class=\"muted\">A token from <code>tiresias admin token create "
      "--user YOU</code> (the first admin's is in the master's state folder, "
      "<code>admin-token</code>). The dashboard keeps it in its memory for "
      "your session and sends it with every request it makes to the master "
      "for you; your browser holds only a session cookie.</p>"
      "</section></main></body></html>\n");
}

}  // namespace tiresias
