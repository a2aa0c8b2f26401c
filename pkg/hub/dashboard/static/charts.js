// Canopy dashboard charts: a policy's compliance over time and a cluster's
// timeline of its policies, drawn with Chart.js (static/vendor) from the
// series the hub computes (/api/charts). Every text goes in through
// textContent; the numbers drawn are also in a table, for screen readers.
(function () {
  'use strict';

  var figure = document.querySelector('figure[data-chart]');
  if (!figure) { return; }
  var body = document.body;
  var kind = figure.dataset.chart;
  var base = figure.dataset.api;
  // Note: the history is read whole for each answer, so the charts poll
  // less often than the rest of the page.
  var refresh = Math.max(Number(body.dataset.refresh) || 2000, 5000);
  var message = figure.querySelector('.chart-message');
  var canvas = figure.querySelector('canvas');
  var windows = document.querySelector('.windows');
  var chosen = (location.hash.match(/window=(\w+)/) || [])[1] || '';
  var chart = null;
  var asked = 0;
  var timer = null;

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

  // hatch is a grey diagonal hatch: history incomplete is no state.
  function hatch() {
    var c = document.createElement('canvas');
    c.width = 8; c.height = 8;
    var ctx = c.getContext('2d');
    ctx.fillStyle = css('--unk-bg');
    ctx.fillRect(0, 0, 8, 8);
    ctx.strokeStyle = css('--unk-line');
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(0, 8); ctx.lineTo(8, 0);
    ctx.moveTo(-2, 2); ctx.lineTo(2, -2);
    ctx.moveTo(6, 10); ctx.lineTo(10, 6);
    ctx.stroke();
    return ctx.createPattern(c, 'repeat');
  }

  // states in stacking order, bottom first.
  var states = [
    { key: 'compliant', state: 'Compliant', label: 'Compliant', color: css('--ok-line') },
    { key: 'pending', state: 'Pending', label: 'Pending', color: css('--wait-line') },
    { key: 'nonCompliant', state: 'NonCompliant', label: 'NonCompliant', color: css('--bad-line') },
    { key: 'incomplete', state: 'Incomplete', label: 'History incomplete', color: hatch() }
  ];
  var stateLabel = {};
  states.forEach(function (s) { stateLabel[s.state] = s.label; });

  Chart.defaults.font.family = getComputedStyle(body).fontFamily;
  Chart.defaults.color = css('--muted');
  Chart.defaults.animation = false;

  // tickStep is the time between the timeline's ticks, per window, in ms.
  var tickStep = { '1h': 6e5, '24h': 108e5, '7d': 864e5, '30d': 4320e5 };

  function short(win) { return win === '1h' || win === '24h'; }

  function when(iso, win) {
    var d = new Date(iso);
    return short(win) ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
      : d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  }

  function duration(seconds) {
    var s = Math.round(seconds);
    if (s < 60) { return s + 's'; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + 'm' + (s % 60 ? ' ' + (s % 60) + 's' : ''); }
    var h = Math.floor(m / 60);
    if (h < 48) { return h + 'h' + (m % 60 ? ' ' + (m % 60) + 'm' : ''); }
    return Math.floor(h / 24) + 'd' + (h % 24 ? ' ' + (h % 24) + 'h' : '');
  }

  function policyHref(ns, name) {
    return '/policies/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
  }

  // renderWindows shows a button per window, the one shown pressed.
  function renderWindows(names, current) {
    if (windows.children.length !== names.length) {
      windows.replaceChildren.apply(windows, names.map(function (n) {
        var b = el('button', '', n);
        b.type = 'button';
        b.dataset.window = n;
        b.addEventListener('click', function () {
          chosen = n;
          history.replaceState(null, '', '#window=' + n);
          load();
        });
        return b;
      }));
    }
    Array.prototype.forEach.call(windows.children, function (b) {
      b.setAttribute('aria-pressed', String(b.dataset.window === current));
    });
  }

  function draw(config) {
    if (chart && chart.config.type === config.type && chart.options.indexAxis === config.options.indexAxis) {
      chart.data = config.data;
      chart.options = config.options;
      chart.update('none');
      return;
    }
    if (chart) { chart.destroy(); }
    chart = new Chart(canvas, config);
  }

  // renderPolicy draws the clusters per state in each bucket, stacked.
  function renderPolicy(d) {
    var labels = d.buckets.map(function (b) { return when(b.start, d.window); });
    draw({
      type: 'bar',
      data: {
        labels: labels,
        datasets: states.map(function (s) {
          return { label: s.label, data: d.buckets.map(function (b) { return b[s.key]; }), backgroundColor: s.color,
            borderWidth: 0, barPercentage: 0.94, categoryPercentage: 1 };
        })
      },
      options: {
        responsive: true, maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { stacked: true, grid: { display: false }, ticks: { autoSkip: true, maxTicksLimit: 12, maxRotation: 0 } },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'clusters' } }
        },
        plugins: { legend: { position: 'bottom' } }
      }
    });
    var tbody = document.querySelector('#chart-table tbody');
    tbody.replaceChildren.apply(tbody, d.buckets.map(function (b) {
      var tr = el('tr');
      tr.dataset.start = b.start;
      tr.appendChild(el('td', '', when(b.start, d.window)));
      states.slice().sort(function (a, b2) { return tableOrder(a) - tableOrder(b2); }).forEach(function (s) {
        var td = el('td', 'count', b[s.key]);
        td.dataset.state = s.state;
        tr.appendChild(td);
      });
      return tr;
    }));
    var text = d.clusters === 1 ? '1 cluster has history of this policy.' : d.clusters + ' clusters have history of this policy.';
    if (d.truncated) { text += ' The history is longer than one answer holds: before its oldest transitions read, it counts as incomplete.'; }
    message.textContent = text;
    renderRemediation(d.remediation);
  }

  // tableOrder puts the table's columns in the order of its header.
  function tableOrder(s) { return ['compliant', 'nonCompliant', 'pending', 'incomplete'].indexOf(s.key); }

  function renderRemediation(r) {
    var p = document.getElementById('remediation');
    p.dataset.count = r.count;
    p.dataset.p50 = r.p50Seconds === null ? '' : r.p50Seconds;
    p.dataset.p90 = r.p90Seconds === null ? '' : r.p90Seconds;
    p.dataset.open = r.open;
    p.dataset.unmeasured = r.unmeasured;
    var parts = [el('strong', '', 'Time to remediate')];
    parts.push(el('span', '', ' (NonCompliant → Compliant) in this window: '));
    if (r.count === 0) {
      parts.push(el('span', 'note', 'no remediation'));
    } else {
      parts.push(el('span', 'p50', 'p50 ' + duration(r.p50Seconds)));
      parts.push(el('span', '', ', '));
      parts.push(el('span', 'p90', 'p90 ' + duration(r.p90Seconds)));
      parts.push(el('span', '', ' over ' + r.count + (r.count === 1 ? ' remediation' : ' remediations')));
    }
    if (r.unmeasured) { parts.push(el('span', '', '; ' + r.unmeasured + ' not measured (a gap in the history)')); }
    if (r.open) { parts.push(el('span', '', '; ' + r.open + (r.open === 1 ? ' cluster' : ' clusters') + ' not remediated yet')); }
    parts.push(el('span', '', '.'));
    p.replaceChildren.apply(p, parts);
  }

  // renderCluster draws one row per policy, a bar per span of a state.
  function renderCluster(d) {
    var hubs = {};
    d.policies.forEach(function (p) { hubs[p.hub] = true; });
    var several = Object.keys(hubs).length > 1;
    var label = function (p) { return p.namespace + '/' + p.name + (several ? ' (' + p.hub + ')' : ''); };
    var labels = d.policies.map(label);
    var start = Date.parse(d.start);
    var end = Date.parse(d.updated);
    figure.querySelector('.timeline-box').style.height = (70 + 34 * Math.max(labels.length, 1)) + 'px';
    draw({
      type: 'bar',
      data: {
        labels: labels,
        datasets: states.map(function (s) {
          var data = [];
          d.policies.forEach(function (p) {
            p.spans.forEach(function (sp) {
              if (sp.state === s.state) { data.push({ x: [Date.parse(sp.from), Date.parse(sp.to)], y: label(p) }); }
            });
          });
          return { label: s.label, data: data, backgroundColor: s.color, borderWidth: 0, grouped: false, barPercentage: 0.7 };
        })
      },
      options: {
        indexAxis: 'y', responsive: true, maintainAspectRatio: false,
        scales: {
          x: { type: 'linear', min: start, max: end,
            ticks: { stepSize: tickStep[d.window], maxTicksLimit: 10, maxRotation: 0, callback: function (v) { return when(new Date(v).toISOString(), d.window); } } },
          y: { type: 'category', labels: labels, grid: { display: false } }
        },
        plugins: {
          legend: { position: 'bottom' },
          tooltip: { callbacks: { label: function (c) {
            var r = c.raw.x;
            return c.dataset.label + ': ' + when(new Date(r[0]).toISOString(), d.window) + ' – ' + when(new Date(r[1]).toISOString(), d.window);
          } } }
        }
      }
    });
    var list = document.getElementById('timeline-policies');
    list.replaceChildren.apply(list, d.policies.map(function (p) {
      var li = el('li');
      li.dataset.policy = p.namespace + '/' + p.name;
      var a = el('a', '', label(p));
      a.href = policyHref(p.namespace, p.name);
      li.appendChild(a);
      li.appendChild(document.createTextNode(' '));
      var now = p.spans[p.spans.length - 1].state;
      li.appendChild(el('span', 'badge state-' + (now === 'Incomplete' ? 'unknown' : now.toLowerCase()), stateLabel[now]));
      return li;
    }));
    var tbody = document.querySelector('#timeline-table tbody');
    var rows = [];
    d.policies.forEach(function (p) {
      p.spans.forEach(function (sp) {
        var tr = el('tr');
        tr.dataset.policy = p.namespace + '/' + p.name;
        tr.dataset.hub = p.hub;
        tr.dataset.from = sp.from;
        tr.dataset.to = sp.to;
        tr.dataset.state = sp.state;
        [label(p), new Date(sp.from).toLocaleString(), new Date(sp.to).toLocaleString(), stateLabel[sp.state]].forEach(function (t) {
          tr.appendChild(el('td', '', t));
        });
        rows.push(tr);
      });
    });
    tbody.replaceChildren.apply(tbody, rows);
    message.textContent = d.policies.length ? '' : 'No compliance history of this cluster in the window.';
    if (d.truncated) { message.textContent += ' The history is longer than one answer holds: before its oldest transitions read, it counts as incomplete.'; }
    var marker = document.getElementById('updated');
    marker.textContent = 'Last updated ' + new Date(d.updated).toLocaleTimeString();
    marker.classList.remove('stale');
  }

  function load() {
    clearTimeout(timer);
    var id = ++asked;
    var url = base + (chosen ? '?window=' + encodeURIComponent(chosen) : '');
    fetch(url, { cache: 'no-store', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (!r.ok) { return r.text().then(function (t) { throw new Error(t.trim() || r.status + ' ' + r.statusText); }); }
        return r.json();
      })
      .then(function (d) {
        if (id !== asked) { return; } // a newer request is under way
        renderWindows(d.windows, d.window);
        if (kind === 'cluster') { renderCluster(d); } else { renderPolicy(d); }
        figure.dataset.window = d.window;
        figure.dataset.updated = d.updated;
      })
      .catch(function (e) {
        if (id !== asked) { return; }
        message.textContent = 'No chart: ' + e.message;
        figure.dataset.error = e.message;
      })
      .then(function () { if (id === asked) { timer = setTimeout(load, refresh); } });
  }

  load();
}());
