// Shared by the report pages (report_page.js, sweep_page.js), inlined before
// them: number formatting that mirrors html_format.cc.
var TiresiasFormat = (function () {
  'use strict';
  // Mirrors FormatDuration in html_format.cc.
  function formatDuration(seconds) {
    if (!isFinite(seconds) || seconds < 0) return '\u2014';
    if (seconds === 0) return '0 s';
    function withUnit(amount, unit) {
      return (amount < 9.95 ? amount.toFixed(1) : amount.toFixed(0)) + ' ' +
             unit;
    }
    if (seconds < 59.5) return withUnit(seconds, 's');
    if (seconds < 59.5 * 60) return withUnit(seconds / 60, 'min');
    if (seconds < 48 * 3600) return withUnit(seconds / 3600, 'h');
    return withUnit(seconds / 86400, 'd');
  }
  return {formatDuration: formatDuration};
})();
