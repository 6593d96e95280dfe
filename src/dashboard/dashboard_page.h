// The dashboard's two HTML pages (dashboard_server.h), each self-contained
// (stylesheet and scripts inlined, nothing fetched from elsewhere). Every
// text that comes from outside (the master's address, a user name, the
// master's reason for refusing a login) is escaped. Their <style> and
// <script> elements carry `nonce`, the one the response's
// Content-Security-Policy allows (a fresh random one per response), so that
// markup slipped into a page would not run. Pure.
#ifndef TIRESIAS_DASHBOARD_DASHBOARD_PAGE_H_
#define TIRESIAS_DASHBOARD_DASHBOARD_PAGE_H_

#include <string>

namespace tiresias {

// Who the page is for.
struct PageViewer {
  // Logged in through the login form (a master with TLS): the header
  // shows `user` (and "(admin)") and a logout button.
  bool logged_in = false;
  std::string user;
  bool admin = false;
  // The master said it runs --insecure (WhoAmI): the banner "insecure: no
  // TLS and no authentication" shows. Not logged in, the page has the
  // banner hidden otherwise, for its script to show once the master says so.
  bool insecure = false;
  // The anti-forgery token the page's script sends with each POST to
  // /api/... (X-Tiresias-Csrf), as data-csrf on <body>.
  std::string csrf;
};

// The dashboard for a master at `master_address`, polling every
// `refresh_ms`: summary cards, jobs and nodes tables, the chart, a job's
// details on a click.
std::string DashboardPage(const std::string& master_address, int refresh_ms,
                          const PageViewer& viewer, const std::string& nonce);

// The login form (a token field, POSTed to /login), with `error` (the
// reason the last attempt failed, one line) above it when not empty.
std::string LoginPage(const std::string& master_address,
                      const std::string& error, const std::string& nonce);

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_DASHBOARD_PAGE_H_
