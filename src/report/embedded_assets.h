// Text assets compiled into the report library by embed.cmake, so that the
// HTML report is self-contained and the binary needs no files at run time.
//
// Each array holds the asset's bytes followed by a NUL; `...Size` excludes
// the NUL. The build guarantees none contains "</script", "</style" or
// "<!--", so each can be inlined verbatim into a <script> or <style> block.
#ifndef TIRESIAS_REPORT_EMBEDDED_ASSETS_H_
#define TIRESIAS_REPORT_EMBEDDED_ASSETS_H_

#include <cstddef>
#include <string_view>

namespace tiresias {

// Chart.js, UMD build, from third_party/chartjs/chart.umd.js (MIT licence).
extern const char kChartJs[];
extern const std::size_t kChartJsSize;

// The report page's own script and stylesheet: src/report/report_page.js
// and src/report/report_page.css.
extern const char kReportPageJs[];
extern const std::size_t kReportPageJsSize;
extern const char kReportPageCss[];
extern const std::size_t kReportPageCssSize;

// sweep.html's script: src/report/sweep_page.js; and what both pages'
// scripts share, inlined before them: src/report/report_format.js.
extern const char kSweepPageJs[];
extern const std::size_t kSweepPageJsSize;
extern const char kReportFormatJs[];
extern const std::size_t kReportFormatJsSize;

inline std::string_view ChartJs() { return {kChartJs, kChartJsSize}; }
inline std::string_view SweepPageJs() {
  return {kSweepPageJs, kSweepPageJsSize};
}
inline std::string_view ReportFormatJs() {
  return {kReportFormatJs, kReportFormatJsSize};
}
inline std::string_view ReportPageJs() {
  return {kReportPageJs, kReportPageJsSize};
}
inline std::string_view ReportPageCss() {
  return {kReportPageCss, kReportPageCssSize};
}

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_EMBEDDED_ASSETS_H_
