// The Tiresias dashboard page (dashboard_server.h). Polls /api/state every
// body.dataset.refreshMs for the summary cards (from its counts of jobs by
// state: it lists no job) and the nodes table, one page
// of /api/jobs (the filter and page kept in the page's URL, so a reload
// keeps them) for the jobs table, and /api/history (kept by the master) for
// the chart of busy GPUs and waiting jobs; jobs the viewer may act on (own,
// or any for an admin or on an --insecure master) get hold, release and
// cancel buttons, which POST with the page's anti-forgery token and show
// the master's answer; a job's details follow its log (/api/jobs/ID/log);
// a click on a job shows its command, environment (when the master shows it
// to this user), traffic profile and events (/api/jobs/ID); the "insecure"
// banner follows what the master says (viewer.insecure). After each successful render it
// sets body.dataset.dashboardReady = "1" and body.dataset.jobCount (every
// job the master holds, from the counts); on a
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
  var viewer = null;  // state.viewer of the last /api/state

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

  // A measured size, as `tiresias job` writes it (core ByteSizeText):
  // "1.5G", "812M", "100".
  function bytes(n) {
    if (!isFinite(n) || n < 1024) return String(Math.max(0, n || 0));
    var units = ['K', 'M', 'G', 'T', 'P', 'E'];
    var value = n / 1024;
    var unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit++;
    }
    return (value < 10 ? value.toFixed(1) : value.toFixed(0)) + units[unit];
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
    STATES.forEach(function (s) { byState[s] = Number(state.jobs[s]) || 0; });
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
    var t = state.tuning;
    if (t) {
      // The queues and PROMOTEKNOB in force (tiresias tune), and drift.
      var drift = t.drift && t.drift.drift;
      cards.push([
        'queues' + (t.source === 'applied' ? ' (tuned)' : '') +
            (drift ? ', drift' : ''),
        (t.thresholds_gpu_s.length ? t.thresholds_gpu_s.join(':') : '-') +
            ', knob ' + t.promote_knob
      ]);
    }
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

  function renderJobs(state, page) {
    var body = $('jobs').tBodies[0];
    body.textContent = '';
    // Unfinished first, newest first within each group (of this page).
    var jobs = page.jobs.slice().sort(function (a, b) {
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
      // Its virtual cluster; '' on a master without VCs.
      tr.appendChild(
          text('td', j.vc === null || j.vc === undefined ? '' : j.vc, 'vc'));
      // Its priority level (QOS); '' for none.
      tr.appendChild(text(
          'td', j.qos === null || j.qos === undefined ? '' : j.qos, 'qos'));
      tr.appendChild(actionCell(j));
      // A job of an array as `tiresias jobs` shows it: ARRAYID_INDEX.
      tr.appendChild(text('td', j.array_id === null || j.array_id === undefined
        ? '' : j.array_id + '_' + j.array_index));
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

  // One row per virtual cluster (state.vcs); the panel only when there
  // are VCs.
  function renderVcs(state) {
    var vcs = state.vcs || [];
    $('vcs-panel').hidden = vcs.length === 0;
    var body = $('vcs').tBodies[0];
    body.textContent = '';
    vcs.forEach(function(v) {
      var tr = document.createElement('tr');
      tr.dataset.vc = v.name;
      tr.appendChild(text('td', v.name));
      tr.appendChild(text('td', v.quota || '-'));
      tr.appendChild(text('td', v.quota_gpus, 'num'));
      tr.appendChild(text('td', v.guaranteed_gpus, 'num'));
      tr.appendChild(text('td', v.borrowed_gpus, 'num'));
      tr.appendChild(text('td', v.running_jobs, 'num'));
      tr.appendChild(text('td', v.waiting_jobs, 'num'));
      tr.appendChild(text('td', (v.members || []).join(',') || '-'));
      body.appendChild(tr);
    });
  }

  // The master's history (/api/history): every point it kept for the
  // window, so the chart is whole after a reload or a master restart.
  function renderHistory(answer) {
    var points = answer.points || [];
    history.labels.length = 0;
    history.busy.length = 0;
    history.waiting.length = 0;
    points.forEach(function (p) {
      history.labels.push(clock(p.sample_time));
      history.busy.push(p.gpus_busy);
      history.waiting.push(p.jobs_waiting);
    });
    document.body.dataset.historyPoints = String(points.length);
    if (points.length) {
      document.body.dataset.historyFirst = String(points[0].sample_time);
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
        if (!r.ok) {
          var err = new Error(body.error || ('HTTP ' + r.status));
          err.status = r.status;
          throw err;
        }
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
      // What its tasks used, from their cgroups (none without).
      $('job-usage').textContent = job.cpu_s > 0 || job.max_memory_bytes > 0 ?
          'Used: ' + duration(job.cpu_s) + ' CPU time, memory peak ' +
              bytes(job.max_memory_bytes) + ' (largest task)' :
          '';
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
      followLog(job.id);
    }).catch(showError);
  }

  function showError(err) {
    var box = $('error');
    box.textContent = 'Cannot read the master: ' + (err && err.message || err);
    box.style.display = 'block';
    document.body.dataset.dashboardError = '1';
  }

  function render(state, page, historyAnswer) {
    var banner = $('insecure-banner');
    if (banner && state.viewer) banner.hidden = !state.viewer.insecure;
    viewer = state.viewer || null;
    $('error').style.display = 'none';
    delete document.body.dataset.dashboardError;
    $('updated').textContent = 'updated ' + clock(state.now);
    renderCards(state);
    renderJobs(state, page);
    renderPager(page);
    renderVcs(state);
    renderNodes(state);
    if (historyAnswer) renderHistory(historyAnswer);
    document.body.dataset.jobCount = String(Object.keys(state.jobs).reduce(
        function (sum, s) { return sum + (Number(state.jobs[s]) || 0); }, 0));
    document.body.dataset.pageJobCount = String(page.jobs.length);
    document.body.dataset.dashboardReady = '1';
  }

  // A bad filter in the URL (400) or a master without the history (an
  // older one) leaves the rest of the page working.
  function refresh() {
    var jobsError = null;
    return Promise.all([
      getJson('/api/state'),
      getJson(jobsApiUrl()).catch(function (err) {
        if (err.status !== 400) throw err;
        jobsError = err;
        return {jobs: [], next_page_token: ''};
      }),
      getJson('/api/history?max_points=500').catch(function () { return null; })
    ]).then(function (all) {
      render(all[0], all[1], all[2]);
      if (jobsError) {
        var box = $('error');
        box.textContent = 'Jobs: ' + jobsError.message;
        box.style.display = 'block';
        document.body.dataset.jobsError = jobsError.message;
      } else {
        delete document.body.dataset.jobsError;
      }
    }).catch(showError);
  }

  function poll() {
    refresh().then(function () { setTimeout(poll, REFRESH_MS); });
  }

  // ---- The jobs table's filter and pages, kept in the page's URL --------
  // ?state=&user=&name=&vc=&page_size= filter; page_token is the page shown,
  // prev the tokens of the pages before it ('' for the first), comma-joined.
  var FILTERS = ['state', 'user', 'name', 'vc', 'page_size'];

  function urlParams() { return new URLSearchParams(window.location.search); }

  function setUrlParams(params) {
    var q = params.toString();
    window.history.replaceState(null, '', q ? '?' + q : window.location.pathname);
  }

  function jobsApiUrl() {
    var params = urlParams();
    var api = new URLSearchParams();
    FILTERS.concat(['page_token']).forEach(function (k) {
      var v = params.get(k);
      if (v) api.set(k, v);
    });
    var q = api.toString();
    return '/api/jobs' + (q ? '?' + q : '');
  }

  function prevTokens(params) {
    return params.has('prev') ? params.get('prev').split(',') : [];
  }

  function renderPager(page) {
    var params = urlParams();
    var prev = prevTokens(params);
    $('jobs-prev').disabled = prev.length === 0;
    $('jobs-next').disabled = !page.next_page_token;
    $('jobs-next').dataset.token = page.next_page_token || '';
    $('jobs-page').textContent = 'page ' + (prev.length + 1);
    document.body.dataset.jobsPage = String(prev.length + 1);
  }

  function goPage(forward) {
    var params = urlParams();
    var prev = prevTokens(params);
    if (forward) {
      var next = $('jobs-next').dataset.token;
      if (!next) return;
      prev.push(params.get('page_token') || '');
      params.set('page_token', next);
      params.set('prev', prev.join(','));
    } else {
      if (!prev.length) return;
      var token = prev.pop();
      if (token) params.set('page_token', token); else params.delete('page_token');
      if (prev.length) params.set('prev', prev.join(',')); else params.delete('prev');
    }
    setUrlParams(params);
    refresh();
  }

  function setupFilter() {
    var params = urlParams();
    $('filter-state').value = params.get('state') || '';
    $('filter-user').value = params.get('user') || '';
    $('filter-name').value = params.get('name') || '';
    $('filter-vc').value = params.get('vc') || '';
    if (params.get('page_size')) $('filter-page-size').value = params.get('page_size');
    $('jobs-filter').addEventListener('submit', function (e) {
      e.preventDefault();
      var next = new URLSearchParams();
      var fields = {
        state: $('filter-state').value,
        user: $('filter-user').value.trim(),
        name: $('filter-name').value.trim(),
        vc: $('filter-vc').value.trim(),
        page_size: $('filter-page-size').value
      };
      FILTERS.forEach(function (k) { if (fields[k]) next.set(k, fields[k]); });
      if (next.get('page_size') === '50') next.delete('page_size');
      setUrlParams(next);  // a new filter starts at its first page
      refresh();
    });
    $('filter-clear').addEventListener('click', function () {
      setUrlParams(new URLSearchParams());
      $('filter-state').value = '';
      $('filter-user').value = '';
      $('filter-name').value = '';
      $('filter-vc').value = '';
      $('filter-page-size').value = '50';
      refresh();
    });
    $('jobs-prev').addEventListener('click', function () { goPage(false); });
    $('jobs-next').addEventListener('click', function () { goPage(true); });
  }

  // ---- Hold, release and cancel ------------------------------------------
  // Offered on the jobs the viewer may act on: their own, or any for an
  // admin or against an --insecure master (the master decides in the end).
  function mayAct(j) {
    return viewer !== null && (viewer.insecure || viewer.admin ||
                               viewer.user === j.user);
  }

  function actionCell(j) {
    var td = document.createElement('td');
    td.className = 'actions';
    if (isFinal(j.state) || !mayAct(j)) return td;
    var actions = [];
    if (j.held) actions.push('release');
    else if (j.state === 'pending' || j.state === 'preempted') actions.push('hold');
    actions.push('cancel');
    actions.forEach(function (action) {
      var b = text('button', action, 'act');
      b.type = 'button';
      b.dataset.action = action;
      b.addEventListener('click', function (e) {
        e.stopPropagation();
        act(j.id, action);
      });
      td.appendChild(b);
    });
    return td;
  }

  function act(id, action) {
    var box = $('action-result');
    fetch('/api/jobs/' + id + '/' + action, {
      method: 'POST',
      headers: {'X-Tiresias-Csrf': document.body.dataset.csrf || ''}
    }).then(function (r) {
      return r.json().then(function (body) { return {ok: r.ok, body: body}; });
    }).then(function (a) {
      var line = a.ok
        ? 'job ' + id + ': ' + action + ' ' + a.body.outcome + ' (now ' +
          a.body.state + (a.body.held ? ', held' : '') + ')'
        : 'job ' + id + ': ' + action + ': ' + a.body.error;
      box.textContent = line;
      box.className = a.ok ? 'ok' : 'error';
      document.body.dataset.actionResult = a.ok ? a.body.outcome : 'refused';
      document.body.dataset.actionMessage = line;
      return refresh();
    }).catch(function (err) {
      box.textContent = 'job ' + id + ': ' + action + ': ' + (err.message || err);
      box.className = 'error';
      document.body.dataset.actionResult = 'refused';
    });
  }

  // ---- A job's log, followed as `tiresias logs -f` does -----------------
  // From offset 0 of its current launch, each answer appended as text;
  // on to the next launch's log after a preemption; until the job ended
  // and its log is complete, or another job is shown.
  var LOG_POLL_MS = Math.min(REFRESH_MS, 1000);
  var logFollow = null;

  function followLog(id) {
    if (logFollow && logFollow.id === id) return;  // already following
    if (logFollow && logFollow.timer) clearTimeout(logFollow.timer);
    var f = {id: id, attempt: 0, offset: 0, timer: null};
    logFollow = f;
    var pre = $('job-log');
    pre.textContent = '';
    document.body.dataset.logJob = String(id);
    document.body.dataset.logBytes = '0';
    delete document.body.dataset.logComplete;
    var status = $('job-log-status');
    function again() { if (logFollow === f) f.timer = setTimeout(step, LOG_POLL_MS); }
    function step() {
      var url = '/api/jobs/' + id + '/log?offset=' + f.offset +
          (f.attempt ? '&attempt=' + f.attempt : '');
      getJson(url).then(function (r) {
        if (logFollow !== f) return;
        if (r.data) pre.appendChild(document.createTextNode(r.data));
        f.offset = r.next_offset;
        f.attempt = r.attempt;
        document.body.dataset.logBytes = String(f.offset);
        status.textContent = '(attempt ' + r.attempt + ' on ' + r.node + ', ' +
            r.job_state + ')';
        if (r.complete && r.current_attempt > r.attempt) {
          f.attempt = r.current_attempt;
          f.offset = 0;
          pre.appendChild(document.createTextNode(
              '--- attempt ' + f.attempt + ' ---\n'));
        } else if (r.complete && isFinal(r.job_state)) {
          status.textContent = '(attempt ' + r.attempt + ', ' + r.job_state +
              ': complete)';
          document.body.dataset.logComplete = '1';
          return;
        }
        again();
      }).catch(function (err) {
        if (logFollow !== f) return;
        status.textContent = '(' + (err.message || err) + ')';
        again();
      });
    }
    step();
  }

  setupFilter();
  poll();
})();
