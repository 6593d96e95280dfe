// Draws the charts of a Tiresias HTML report; html_report.h states the page
// contract. Runs after Chart.js and reads the report's data from the JSON
// block #report-data. Once every chart is built it sets
// body.dataset.chartsRendered to their number; on failure it sets
// body.dataset.chartsError (an inline handler before Chart.js does the same
// for uncaught errors).
(function () {
  'use strict';

  // Tableau 10: distinct, and readable on white.
  var PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
                 '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  // Log axes start at 1 s: zero queueing delays would be off the axis.
  var MIN_LOG_SECONDS = 1;
  // Tick marks of the log duration axes: 1 s, 10 s, 1 min, 10 min, 1 h,
  // 10 h, 1 d, 10 d, 100 d, 1000 d.
  var NICE_SECONDS = [1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000,
                      86400000];
  var NICE_LABELS = ['1 s', '10 s', '1 min', '10 min', '1 h', '10 h', '1 d',
                     '10 d', '100 d', '1000 d'];

  var formatDuration = TiresiasFormat.formatDuration;  // report_format.js

  function isNumber(v) { return typeof v === 'number' && isFinite(v); }

  // [[x, y], ...] to [{x, y}, ...], skipping malformed points. x is
  // multiplied by xScale, then raised to minX if given.
  function toPoints(series, xScale, minX) {
    var out = [];
    if (!Array.isArray(series)) return out;
    for (var i = 0; i < series.length; i++) {
      var p = series[i];
      if (!Array.isArray(p) || !isNumber(p[0]) || !isNumber(p[1])) continue;
      var x = p[0] * xScale;
      if (minX !== undefined && x < minX) x = minX;
      out.push({x: x, y: p[1]});
    }
    return out;
  }

  // Line patterns by policy, so lines that lie on top of each other (e.g.
  // srtf and srsf) still show: colour, dash and width differ.
  var DASHES = [[], [8, 4], [2, 3], [10, 3, 2, 3], [14, 5], [4, 4],
                [1, 4], [12, 3, 3, 3, 3, 3]];

  function makeDatasets(data, key, xScale, minX) {
    var policies = Array.isArray(data.policies) ? data.policies : [];
    return policies.map(function (policy, i) {
      var name = policy && typeof policy.name === 'string' ?
          policy.name : 'policy ' + (i + 1);
      var points = toPoints(policy ? policy[key] : null, xScale, minX);
      var color = PALETTE[i % PALETTE.length];
      var isBaseline = name === data.baseline;
      return {
        label: isBaseline ? name + ' (baseline)' : name,
        data: points,
        borderColor: color,
        backgroundColor: color,
        borderWidth: i < 2 ? 2.5 : 2,
        borderDash: DASHES[i % DASHES.length],
        pointRadius: points.length <= 40 ? 2.5 : 0,
        pointHoverRadius: 4,
        fill: false,
        tension: 0
      };
    });
  }

  function extent(datasets) {
    var lo = Infinity, hi = -Infinity;
    datasets.forEach(function (d) {
      d.data.forEach(function (p) {
        if (p.x < lo) lo = p.x;
        if (p.x > hi) hi = p.x;
      });
    });
    return {lo: lo, hi: hi};
  }

  // A log x axis in seconds, labelled with durations at NICE_SECONDS, its
  // ends on the nice values around the data.
  function logDurationAxis(datasets, title) {
    var e = extent(datasets);
    var axis = {
      type: 'logarithmic',
      title: {display: true, text: title},
      ticks: {
        callback: function (v) {
          var i = NICE_SECONDS.indexOf(Number(v));
          return i >= 0 ? NICE_LABELS[i] : formatDuration(Number(v));
        }
      },
      afterBuildTicks: function (scale) {
        scale.ticks = NICE_SECONDS.filter(function (v) {
          return v >= scale.min * 0.999 && v <= scale.max * 1.001;
        }).map(function (v) { return {value: v}; });
      }
    };
    if (e.lo <= e.hi) {
      var lo = NICE_SECONDS[0], hi = NICE_SECONDS[NICE_SECONDS.length - 1];
      NICE_SECONDS.forEach(function (v) { if (v <= e.lo) lo = v; });
      for (var i = NICE_SECONDS.length - 1; i >= 0; i--) {
        if (NICE_SECONDS[i] >= e.hi) hi = NICE_SECONDS[i];
      }
      if (hi <= lo) hi = NICE_SECONDS[NICE_SECONDS.indexOf(lo) + 1] || lo * 10;
      axis.min = lo;
      axis.max = hi;
    }
    return axis;
  }

  // A fresh object per chart: Chart.js may keep and amend what it is given.
  function fractionAxis() {
    return {
      type: 'linear',
      min: 0,
      max: 1,
      title: {display: true, text: 'Fraction of jobs'},
      ticks: {callback: function (v) { return Math.round(v * 100) + '%'; }}
    };
  }

  function makeChart(id, datasets, scales, describe) {
    var canvas = document.getElementById(id);
    if (!canvas) throw new Error('no canvas #' + id);
    return new Chart(canvas, {
      type: 'line',
      data: {datasets: datasets},
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: {mode: 'nearest', axis: 'x', intersect: false},
        scales: scales,
        plugins: {
          // Line samples, so the dashed baseline reads as dashed.
          legend: {
            position: 'top',
            labels: {
              usePointStyle: true,
              pointStyle: 'line',
              pointStyleWidth: 36
            }
          },
          tooltip: {
            callbacks: {
              label: function (ctx) {
                return ctx.dataset.label + ': ' +
                       describe(ctx.parsed.x, ctx.parsed.y);
              }
            }
          }
        }
      }
    });
  }

  function percent(y) { return (y * 100).toFixed(1) + '%'; }

  // Log-axis ticks at `nice` values only (powers of ten, nice durations).
  function niceTicks(nice) {
    return function (scale) {
      scale.ticks = nice.filter(function (v) {
        return v >= scale.min * 0.999 && v <= scale.max * 1.001;
      }).map(function (v) { return {value: v}; });
    };
  }
  var DECADES = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1e3, 1e4,
                 1e5, 1e6];

  function tailAxis() {
    return {
      type: 'logarithmic',
      title: {display: true, text: 'Fraction of jobs above x (log scale)'},
      afterBuildTicks: niceTicks(DECADES),
      ticks: {callback: function (v) {
        return Number(v) >= 0.01 ? percent(Number(v)) :
            Number(v).toExponential(0);
      }}
    };
  }

  // The summary's per-bin average JCT as grouped bars, a group per bin.
  function drawBins(data) {
    var canvas = document.getElementById('bins-chart');
    if (!canvas) throw new Error('no canvas #bins-chart');
    var policies = Array.isArray(data.policies) ? data.policies : [];
    var bins = ['SS', 'SL', 'LS', 'LL'];
    var datasets = policies.map(function (policy, i) {
      var b = policy && policy.bins ? policy.bins : {};
      return {
        label: policy && typeof policy.name === 'string' ?
            policy.name : 'policy ' + (i + 1),
        data: bins.map(function (k) {
          return b[k] && isNumber(b[k].avg_jct_s) && b[k].avg_jct_s > 0 ?
              b[k].avg_jct_s : null;
        }),
        backgroundColor: PALETTE[i % PALETTE.length]
      };
    });
    return new Chart(canvas, {
      type: 'bar',
      data: {labels: bins, datasets: datasets},
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: {
          y: {type: 'logarithmic',
              title: {display: true, text: 'Average JCT (log scale)'},
              afterBuildTicks: niceTicks(NICE_SECONDS),
              ticks: {callback: function (v) {
                var i = NICE_SECONDS.indexOf(Number(v));
                return i >= 0 ? NICE_LABELS[i] : formatDuration(Number(v));
              }}}
        },
        plugins: {tooltip: {callbacks: {label: function (ctx) {
          return ctx.dataset.label + ': ' + formatDuration(ctx.parsed.y);
        }}}}
      }
    });
  }

  function drawAll() {
    if (typeof Chart === 'undefined') throw new Error('Chart.js not loaded');
    var block = document.getElementById('report-data');
    if (!block) throw new Error('no #report-data block');
    var data = JSON.parse(block.textContent);
    if (!data || typeof data !== 'object') data = {};
    Chart.defaults.animation = false;
    Chart.defaults.font.size = 12;

    var charts = [];
    var jct = makeDatasets(data, 'jct_cdf', 1, MIN_LOG_SECONDS);
    charts.push(makeChart('jct-cdf', jct, {
      x: logDurationAxis(jct, 'Job completion time (log scale)'),
      y: fractionAxis()
    }, function (x, y) {
      return percent(y) + ' of jobs within ' + formatDuration(x);
    }));

    var queueing = makeDatasets(data, 'queueing_cdf', 1, MIN_LOG_SECONDS);
    charts.push(makeChart('queueing-cdf', queueing, {
      x: logDurationAxis(queueing,
                         'Queueing delay (log scale; under 1 s drawn at 1 s)'),
      y: fractionAxis()
    }, function (x, y) {
      return percent(y) + ' of jobs waited at most ' + formatDuration(x);
    }));

    var jctTail = makeDatasets(data, 'jct_tail', 1, MIN_LOG_SECONDS);
    charts.push(makeChart('jct-tail', jctTail, {
      x: logDurationAxis(jct, 'Job completion time (log scale)'),
      y: tailAxis()
    }, function (x, y) {
      return percent(y) + ' of jobs took longer than ' + formatDuration(x);
    }));
    var queueingTail =
        makeDatasets(data, 'queueing_tail', 1, MIN_LOG_SECONDS);
    charts.push(makeChart('queueing-tail', queueingTail, {
      x: logDurationAxis(queueing, 'Queueing delay (log scale)'),
      y: tailAxis()
    }, function (x, y) {
      return percent(y) + ' of jobs waited longer than ' + formatDuration(x);
    }));

    var ratio = makeDatasets(data, 'jct_ratio_cdf', 1);
    charts.push(makeChart('jct-ratio', ratio, {
      x: {type: 'logarithmic', afterBuildTicks: niceTicks(DECADES),
          ticks: {callback: function (v) { return Number(v) + 'x'; }},
          title: {display: true, text: 'JCT / the baseline\'s JCT, per job ' +
                  '(log scale; below 1: faster than under ' +
                  (data.baseline || 'the baseline') + ')'}},
      y: fractionAxis()
    }, function (x, y) {
      return percent(y) + ' of jobs at most ' + x.toPrecision(3) + 'x';
    }));

    // Busy GPUs per policy, the cluster's capacity, and waiting jobs on a
    // second axis; the x axis ends with the data.
    // Two lines a policy: past SHOWN_POLICIES policies (the baseline
    // aside) the rest start hidden, their legend entries there to click.
    var SHOWN_POLICIES = 4;
    var shown = function(d, i) {
      return i < SHOWN_POLICIES || d.label.indexOf(' (baseline)') >= 0;
    };
    var busy = makeDatasets(data, 'utilization', 1 / 3600).map(function(d, i) {
      d.hidden = !shown(d, i);
      return d;
    });
    var waiting = makeDatasets(data, 'waiting', 1 / 3600).map(function(d, i) {
      d.hidden = !shown(d, i);
      d.label = d.label + ': waiting jobs';
      d.yAxisID = 'y2';
      d.borderWidth = 1;
      d.borderDash = [2, 2];
      return d;
    });
    var gpus = data.cluster && isNumber(data.cluster.gpus) ?
        data.cluster.gpus : undefined;
    var span = extent(busy.concat(waiting));
    var lines = busy.concat(waiting);
    if (gpus && span.lo <= span.hi) {
      lines.push({label: 'capacity (' + gpus + ' GPUs)',
                  data: [{x: span.lo, y: gpus}, {x: span.hi, y: gpus}],
                  borderColor: '#333', borderWidth: 1, borderDash: [6, 3],
                  pointRadius: 0, fill: false});
    }
    charts.push(makeChart('utilization', lines, {
      x: {type: 'linear', min: 0,
          max: span.lo <= span.hi ? span.hi : undefined,
          title: {display: true, text: 'Time since trace start (hours)'}},
      y: {type: 'linear', min: 0, suggestedMax: gpus,
          title: {display: true,
                  text: gpus ? 'Busy GPUs (of ' + gpus + ')' : 'Busy GPUs'}},
      y2: {type: 'linear', min: 0, position: 'right',
           grid: {drawOnChartArea: false},
           title: {display: true, text: 'Waiting jobs'}}
    }, function (x, y) {
      return y.toFixed(1) + ' at ' + x.toFixed(2) + ' h';
    }));
    charts.push(drawBins(data));
    return charts.length;
  }

  try {
    document.body.dataset.chartsRendered = String(drawAll());
  } catch (e) {
    document.body.dataset.chartsError =
        String(e && e.message ? e.message : e);
  }
})();
