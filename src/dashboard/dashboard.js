// The Tiresias dashboard page (dashboard_server.h). Polls /api/state every
// body.dataset.refreshMs, renders the summary cards, the jobs and nodes
// tables and a chart of busy GPUs and waiting jobs since the page opened;
// a click on a job shows its command, environment (when the master shows it
// to this user), traffic profile and events (/api/jobs/ID); the "insecure"
// banner follows what the master says (viewer.insecure). After each successful render it
// sets body.dataset.dashboardReady = "1" and body.dataset.jobCount; on a
// failed poll it shows the error and sets body.dataset.dashboardError. A
// logged-in page whose session ended (401) goes back to / (the login form).
// Every text from the master goes in as text (textContent), never markup.
(function () {
  'use strict';

  var REFRESH_MS = Number(document.body.dataset.refreshMs) || 2000;
  var HISTORY_POINTS = 300;
  var STATES = ['pending', 'starting', 'running', 'preempted', 'finished',
                'failed', 'cancelled', 'timeout'];
  var chart = null;
  var history = {labels: [], busy: [], waiting: []};
  var selected = null;

  function $(id) { return document.getElementById(id); }

  function text(tag, value, cls) {
    var e = document.createElement(tag);
    e.textContent = value === undefined || value === null ? '' : String(value);
    if (cls) e.className = cls;
    return e;
  }

  // H:MM:SS (or D-HH:MM:SS past a day), like `tiresias jobs`.
  function duration(seconds) {
    if (!isFinite(seconds) || seconds < 0) return '-';
    var s = Math.floor(seconds);
    var d = Math.floor(s / 86400);
    s -= d * 86400;
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var sec = s % 60;
    function two(n) { return (n < 10 ? '0' : '') + n; }
    return (d > 0 ? d + '-' + two(h) : String(h)) + ':' + two(m) + ':' +
           two(sec);
  }

  function clock(unix) {
    if (!isFinite(unix) || unix <= 0) return '-';
    return new Date(unix * 1000).toLocaleTimeString();
  }

  function isFinal(state) {
    return state === 'finished' || state === 'failed' ||
        state === 'cancelled' || state === 'timeout';
  }

  function stateBadge(state) {
    return text('span', state, 'state state-' + state);
  }

  function renderCards(state) {
    var byState = {};
    STATES.forEach(function (s) { byState[s] = 0; });
    state.jobs.forEach(function (j) { byState[j.state] = (byState[j.state] || 0) + 1; });
    var gpus = 0, free = 0, up = 0, drained = 0;
    state.nodes.forEach(function (n) {
      if (n.state === 'up') { up++; gpus += n.gpus; free += n.gpus_free; }
      if (n.state === 'up' && n.drained) drained++;
    });
    var cards = [
      ['running', byState.running + byState.starting],
      ['waiting', byState.pending + byState.preempted],
      ['finished', byState.finished],
      ['failed', byState.failed],
      ['GPUs busy', (gpus - free) + ' / ' + gpus],
      ['nodes up', up + ' / ' + state.nodes.length +
        (drained ? ' (' + drained + ' drained)' : '')]
    ];
    var box = $('cards');
    box.textContent = '';
    cards.forEach(function (c) {
      var card = text('div', '', 'card');
      card.appendChild(text('div', c[1], 'value'));
      card.appendChild(text('div', c[0], 'label'));
      box.appendChild(card);
    });
    return {busy: gpus - free, waiting: byState.pending + byState.preempted};
  }

  function renderJobs(state) {
    var body = $('jobs').tBodies[0];
    body.textContent = '';
    // Unfinished first, newest first within each group.
    var jobs = state.jobs.slice().sort(function (a, b) {
      var fa = isFinal(a.state), fb = isFinal(b.state);
      if (fa !== fb) return fa ? 1 : -1;
      return b.id - a.id;
    });
    jobs.forEach(function (j) {
      var tr = document.createElement('tr');
      tr.dataset.jobId = j.id;
      tr.appendChild(text('td', j.id, 'num'));
      tr.appendChild(text('td', j.name));
      tr.appendChild(text('td', j.user));
      var st = document.createElement('td');
      st.appendChild(stateBadge(j.state));
      if (j.held) st.appendChild(text('span', ' held', 'held'));
      tr.appendChild(st);
      tr.appendChild(text('td', j.queue, 'num'));
      tr.appendChild(text('td', j.gpus, 'num'));
      tr.appendChild(text('td', Math.round(j.attained_gpu_s), 'num'));
      // Time not running since submission, kept once it ended (wait_s,
      // as `tiresias jobs` shows it).
      tr.appendChild(text('td', duration(j.wait_s), 'num'));
      tr.appendChild(text('td', duration(j.total_executed_s), 'num'));
      tr.appendChild(text('td', j.preemptions, 'num'));
      // A waiting job's reason in parentheses, as `tiresias jobs` shows it.
      tr.appendChild(text('td', j.pending_reason
        ? '(' + j.pending_reason + ')' : (j.nodes || []).join(',')));
      tr.addEventListener('click', function () { showJob(j.id); });
      body.appendChild(tr);
    });
    $('jobs-empty').style.display = jobs.length ? 'none' : '';
  }

  function renderNodes(state) {
    var body = $('nodes').tBodies[0];
    body.textContent = '';
    state.nodes.forEach(function (n) {
      var tr = document.createElement('tr');
      tr.dataset.node = n.name;
      tr.appendChild(text('td', n.name));
      var st = document.createElement('td');
      st.appendChild(stateBadge(n.state));
      tr.appendChild(st);
      tr.appendChild(text('td', n.gpus, 'num'));
      tr.appendChild(text('td', n.gpus_free, 'num'));
      tr.appendChild(text('td', (n.job_ids || []).join(',') || '-'));
      // Drained: "draining" while jobs still run there, then "drained".
      var drain = '-';
      if (n.drained) {
        drain = ((n.job_ids || []).length ? 'draining' : 'drained') +
          (n.drain_reason ? ': ' + n.drain_reason : '');
      }
      tr.appendChild(text('td', drain, n.drained ? 'drain' : ''));
      tr.appendChild(text('td', clock(n.last_heartbeat_time)));
      body.appendChild(tr);
    });
    $('nodes-empty').style.display = state.nodes.length ? 'none' : '';
  }

  function renderHistory(sample) {
    history.labels.push(new Date().toLocaleTimeString());
    history.busy.push(sample.busy);
    history.waiting.push(sample.waiting);
    if (history.labels.length > HISTORY_POINTS) {
      history.labels.shift(); history.busy.shift(); history.waiting.shift();
    }
    if (typeof Chart === 'undefined') return;
    if (chart === null) {
      chart = new Chart($('history'), {
        type: 'line',
        data: {
          labels: history.labels,
          datasets: [
            {label: 'busy GPUs', data: history.busy, borderColor: '#4e79a7',
             backgroundColor: '#4e79a7', stepped: true, pointRadius: 0},
            {label: 'waiting jobs', data: history.waiting,
             borderColor: '#f28e2b', backgroundColor: '#f28e2b',
             stepped: true, pointRadius: 0}
          ]
        },
        options: {
          animation: false, maintainAspectRatio: false,
          scales: {y: {beginAtZero: true, ticks: {precision: 0}}}
        }
      });
    } else {
      chart.update();
    }
  }

  // The JSON at `url`; rejects with the API's error message.
  function getJson(url) {
    return fetch(url).then(function (r) {
      if (r.status === 401 && document.body.dataset.session === '1') {
        window.location.replace('/');
      }
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
        return body;
      });
    });
  }

  function showJob(id) {
    selected = id;
    getJson('/api/jobs/' + id).then(function (job) {
      if (selected !== id) return;
      var box = $('job-detail');
      box.style.display = 'block';
      $('job-title').textContent = 'Job ' + job.id + ' (' + job.name + '): ' +
          job.state + ', attempt ' + job.attempt + ', ' + job.restarts +
          ' restart(s)';
      $('job-command').textContent = (job.command || []).join(' ');
      var env = job.env || {};
      $('job-env').textContent = Object.keys(env).sort().map(function (k) {
        return k + '=' + env[k];
      }).join(' ');
      $('job-profile').textContent = 'Traffic profile: ' + job.profile_text;
      var body = $('events').tBodies[0];
      body.textContent = '';
      (job.events || []).forEach(function (e) {
        var tr = document.createElement('tr');
        tr.dataset.kind = e.kind;
        if (e.attempt !== null && e.attempt !== undefined) {
          tr.dataset.attempt = String(e.attempt);
        }
        tr.appendChild(text('td', clock(e.time)));
        tr.appendChild(text('td', e.kind));
        tr.appendChild(text('td', e.detail));
        body.appendChild(tr);
      });
      document.body.dataset.detailJob = String(job.id);
    }).catch(showError);
  }

  function showError(err) {
    var box = $('error');
    box.textContent = 'Cannot read the master: ' + (err && err.message || err);
    box.style.display = 'block';
    document.body.dataset.dashboardError = '1';
  }

  function render(state) {
    var banner = $('insecure-banner');
    if (banner && state.viewer) banner.hidden = !state.viewer.insecure;
    $('error').style.display = 'none';
    delete document.body.dataset.dashboardError;
    $('updated').textContent = 'updated ' + clock(state.now);
    var sample = renderCards(state);
    renderJobs(state);
    renderNodes(state);
    renderHistory(sample);
    document.body.dataset.jobCount = String(state.jobs.length);
    document.body.dataset.dashboardReady = '1';
  }

  function poll() {
    getJson('/api/state').then(render).catch(showError).then(function () {
      setTimeout(poll, REFRESH_MS);
    });
  }

  poll();
})();
