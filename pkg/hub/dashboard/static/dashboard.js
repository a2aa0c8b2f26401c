// Canopy dashboard: polls the JSON API named by <body data-api> and redraws
// the live parts of the page. Every text goes in through textContent.
(function () {
  'use strict';

  var body = document.body;
  var api = body.dataset.api;
  var refresh = Number(body.dataset.refresh) || 2000;

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function stateClass(s) { return 'state-' + (s ? s.toLowerCase() : 'unknown'); }
  function stateText(s) { return s || '-'; }
  function badge(s) { return el('span', 'badge ' + stateClass(s), stateText(s)); }
  function policyHref(ns, name) {
    return '/policies/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
  }

  function renderMatrix(m) {
    var table = document.getElementById('matrix');
    var head = el('tr');
    head.appendChild(el('th', 'policy', 'Policy'));
    m.clusters.forEach(function (c) { head.appendChild(el('th', 'cluster', c)); });
    ['Compliant', 'NonCompliant', 'Pending'].forEach(function (t) { head.appendChild(el('th', 'total', t)); });
    table.tHead.replaceChildren(head);

    var rows = m.policies.map(function (p) {
      var key = p.namespace + '/' + p.name;
      var tr = el('tr');
      tr.dataset.policy = key;
      var name = el('td', 'policy');
      var link = el('a', '', key);
      link.href = policyHref(p.namespace, p.name);
      name.appendChild(link);
      tr.appendChild(name);
      p.cells.forEach(function (c) {
        var td = el('td', 'cell ' + (c.placed ? stateClass(c.state) : 'unplaced'), c.placed ? stateText(c.state) : '');
        td.dataset.cluster = c.cluster;
        tr.appendChild(td);
      });
      tr.appendChild(el('td', 'total compliant', p.totals.compliant));
      tr.appendChild(el('td', 'total noncompliant', p.totals.nonCompliant));
      tr.appendChild(el('td', 'total pending', p.totals.pending));
      return tr;
    });
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], rows);

    var foot = el('tr');
    foot.appendChild(el('th', 'policy', 'Total'));
    m.clusters.forEach(function () { foot.appendChild(el('td', '')); });
    foot.appendChild(el('td', 'total compliant', m.totals.compliant));
    foot.appendChild(el('td', 'total noncompliant', m.totals.nonCompliant));
    foot.appendChild(el('td', 'total pending', m.totals.pending));
    table.tFoot.replaceChildren(foot);
    document.getElementById('matrix-empty').hidden = m.policies.length > 0;
    renderSummary(m);
    paintGraph(m.policies.map(function (p) { return ['Policy/' + p.namespace + '/' + p.name, p.compliant]; }));
  }

  function renderSummary(m) {
    var summary = document.getElementById('summary');
    var items = [
      [m.policies.length, 'policies', ''], [m.clusters.length, 'clusters', ''],
      [m.totals.compliant, 'compliant', 'state-compliant'],
      [m.totals.nonCompliant, 'non-compliant', 'state-noncompliant'],
      [m.totals.pending, 'pending', 'state-pending']
    ];
    summary.replaceChildren.apply(summary, items.map(function (i) {
      var box = el('div', 'stat ' + i[2]);
      box.appendChild(el('strong', '', i[0]));
      box.appendChild(el('span', '', i[1]));
      return box;
    }));
  }

  // paintGraph recolours the graph's policy nodes with their latest states.
  function paintGraph(states) {
    states.forEach(function (s) {
      document.querySelectorAll('g.node').forEach(function (g) {
        if (g.dataset.node === s[0]) {
          g.classList.remove('state-compliant', 'state-noncompliant', 'state-pending', 'state-unknown');
          g.classList.add(stateClass(s[1]));
        }
      });
    });
  }

  function renderPolicy(p) {
    var overall = document.getElementById('overall');
    overall.className = 'badge ' + stateClass(p.compliant);
    overall.textContent = stateText(p.compliant);
    var clusters = document.getElementById('clusters');
    var cards = p.explanation.clusters.map(renderCluster);
    if (cards.length === 0) { cards = [el('p', 'note', 'Not placed on any cluster.')]; }
    clusters.replaceChildren.apply(clusters, cards);
    var states = [['Policy/' + p.namespace + '/' + p.name, p.compliant]];
    p.dependencies.forEach(function (d) {
      if (d.kind !== 'Policy') { return; }
      var key = 'Policy/' + d.namespace + '/' + d.name;
      states.push([key, d.state]);
      document.querySelectorAll('#dependencies [data-dependency]').forEach(function (cell) {
        if (cell.dataset.dependency === key) { cell.replaceChildren(badge(d.state)); }
      });
    });
    paintGraph(states);
  }

  function renderCluster(c) {
    var card = el('article', 'card');
    card.dataset.cluster = c.cluster;
    var h = el('h3', '', c.cluster + ' ');
    h.appendChild(badge(c.compliant));
    card.appendChild(h);
    if (c.noReplica) { card.appendChild(el('p', 'note', 'No replica on this cluster yet.')); }
    var table = el('table', 'list');
    var head = el('tr');
    ['Template', 'State', 'Why'].forEach(function (t) { head.appendChild(el('th', '', t)); });
    table.appendChild(el('thead')).appendChild(head);
    var tbody = table.appendChild(el('tbody'));
    c.templates.forEach(function (t) { tbody.appendChild(renderTemplate(t)); });
    card.appendChild(table);
    return card;
  }

  function renderTemplate(t) {
    var tr = el('tr');
    tr.dataset.template = t.name;
    tr.appendChild(el('td', 'template', (t.kind ? t.kind + ' ' : '') + t.name));
    var state = el('td');
    state.appendChild(badge(t.compliant));
    tr.appendChild(state);
    var why = el('td', 'why');
    var unmet = t.unmet || [];
    if (unmet.length === 0 || t.ignorePending) { why.appendChild(el('div', 'message', t.message || '')); }
    unmet.forEach(function (u) {
      var name = u.policy ? u.kind + ' ' + u.policy.namespace + '/' + u.policy.name : u.kind + ' ' + u.name;
      why.appendChild(el('div', 'unmet', 'Waiting for ' + name + (u.reason ? ': ' + u.reason : '')));
    });
    if (t.cycle && t.cycle.length) {
      why.appendChild(el('div', 'unmet', 'Dependency cycle: ' + t.cycle.map(function (o) {
        return o.policy ? o.kind + ' ' + o.policy.namespace + '/' + o.policy.name : o.kind + ' ' + o.name;
      }).join(' → ')));
    }
    if (t.history && t.history.length) { why.appendChild(renderHistory(t.history)); }
    tr.appendChild(why);
    return tr;
  }

  function renderHistory(history) {
    var details = el('details', 'history');
    details.appendChild(el('summary', '', 'History (' + history.length + ')'));
    var list = details.appendChild(el('ol'));
    history.forEach(function (h) {
      var li = el('li');
      li.appendChild(el('time', '', new Date(h.time).toLocaleString()));
      li.appendChild(badge(h.compliant));
      li.appendChild(el('span', '', h.message));
      list.appendChild(li);
    });
    return details;
  }

  function showUpdated(ok, text) {
    var marker = document.getElementById('updated');
    marker.textContent = text;
    marker.classList.toggle('stale', !ok);
  }

  function tick() {
    fetch(api, { cache: 'no-store', headers: { Accept: 'application/json' } })
      .then(function (r) {
        if (!r.ok) { throw new Error(r.status + ' ' + r.statusText); }
        return r.json();
      })
      .then(function (data) {
        if (document.getElementById('matrix')) { renderMatrix(data); } else { renderPolicy(data); }
        showUpdated(true, 'Last updated ' + new Date(data.updated).toLocaleTimeString());
        document.getElementById('updated').dataset.updated = data.updated;
      })
      .catch(function (e) { showUpdated(false, 'Update failed (' + e.message + '); retrying'); })
      .then(function () { setTimeout(tick, refresh); });
  }

  tick();
}());
