// Draws the plots of sweep.html (report/sweep_report.h): one chart per
// metric, the swept value on the x axis, a line per series (policy and the
// other swept keys) at the mean over seeds, and a band from min to max when
// seeds were swept. Lines differ by colour, dash and marker. Reads the
// JSON block #report-data; sets body.dataset.chartsRendered to the number
// of charts built, or body.dataset.chartsError.
(function () {
  'use strict';

  var PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
                 '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  var DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4], [3, 5]];
  var MARKERS = ['circle', 'rect', 'triangle', 'rectRot', 'star', 'crossRot'];

  var formatDuration = TiresiasFormat.formatDuration;  // report_format.js

  function withAlpha(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) +
           ',' + alpha + ')';
  }

  function datasets(chart, bands) {
    var out = [];
    chart.series.forEach(function (s, i) {
      var colour = PALETTE[i % PALETTE.length];
      if (bands) {
        out.push({label: s.label + ' (min)', data: s.min, borderWidth: 0,
                  pointRadius: 0, fill: false, bandEdge: true,
                  borderColor: 'transparent'});
        out.push({label: s.label + ' (max)', data: s.max, borderWidth: 0,
                  pointRadius: 0, fill: '-1', bandEdge: true,
                  borderColor: 'transparent',
                  backgroundColor: withAlpha(colour, 0.18)});
      }
      out.push({label: s.label, data: s.mean, borderColor: colour,
                backgroundColor: colour, borderWidth: 2,
                borderDash: DASHES[i % DASHES.length],
                pointStyle: MARKERS[i % MARKERS.length], pointRadius: 4,
                fill: false, spanGaps: true});
    });
    return out;
  }

  function draw() {
    var data = JSON.parse(document.getElementById('report-data').textContent);
    var plot = data.plot || {};
    var bands = (plot.seeds || 1) > 1;
    var built = 0;
    (plot.charts || []).forEach(function (chart, index) {
      var canvas = document.getElementById('sweep-' + index);
      if (!canvas) return;
      var seconds = chart.seconds;
      new Chart(canvas, {
        type: 'line',
        data: {labels: plot.x || [], datasets: datasets(chart, bands)},
        options: {
          animation: false,
          maintainAspectRatio: false,
          interaction: {mode: 'index', intersect: false},
          scales: {
            x: {title: {display: true, text: plot.x_key || ''}},
            // Durations on a log axis: policies differ by orders of
            // magnitude on a loaded cluster.
            y: seconds ? {type: 'logarithmic', ticks: {callback: function (v) {
              return formatDuration(v);
            }}} : {beginAtZero: true}
          },
          plugins: {
            legend: {labels: {usePointStyle: true, filter: function (item, d) {
              return !d.datasets[item.datasetIndex].bandEdge;
            }}},
            tooltip: {callbacks: {label: function (ctx) {
              var v = ctx.parsed.y;
              return ctx.dataset.label + ': ' +
                     (seconds ? formatDuration(v) : v.toPrecision(4));
            }}}
          }
        }
      });
      built++;
    });
    document.body.dataset.chartsRendered = String(built);
  }

  try {
    draw();
  } catch (e) {
    document.body.dataset.chartsError = String(e && e.message || e);
  }
})();
