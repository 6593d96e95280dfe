// The dashboard page's script and stylesheet (dashboard.js, dashboard.css),
// compiled in by src/report/embed.cmake; Chart.js comes from the report
// library (report/embedded_assets.h).
#ifndef TIRESIAS_DASHBOARD_DASHBOARD_ASSETS_H_
#define TIRESIAS_DASHBOARD_DASHBOARD_ASSETS_H_

#include <cstddef>
#include <string_view>

namespace tiresias {

extern const char kDashboardJs[];
extern const std::size_t kDashboardJsSize;
extern const char kDashboardCss[];
extern const std::size_t kDashboardCssSize;

inline std::string_view DashboardJs() {
  return {kDashboardJs, kDashboardJsSize};
}
inline std::string_view DashboardCss() {
  return {kDashboardCss, kDashboardCssSize};
}

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_DASHBOARD_ASSETS_H_
