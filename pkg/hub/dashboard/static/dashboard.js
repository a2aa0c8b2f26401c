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
  function clusterHref(name) { return '/clusters/' + encodeURIComponent(name); }
  function setHref(ns, name) {
    return '/policysets/' + encodeURIComponent(ns) + '/' + encodeURIComponent(name);
  }

  function renderMatrix(m) {
    var table = document.getElementById('matrix');
    var head = el('tr');
    head.appendChild(el('th', 'policy', 'Policy'));
    m.clusters.forEach(function (c) {
      var th = el('th', 'cluster');
      var link = el('a', '', c);
      link.href = clusterHref(c);
      th.appendChild(link);
      head.appendChild(th);
    });
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
      p.cells.forEach(function (c) { tr.appendChild(renderCell(c)); });
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
    renderSets(m.sets || []);
    paintGraph(m.graph);
  }

  // renderCell shows one policy on one cluster; a NonCompliant or Pending
  // cell carries its first reason as a tooltip and as text for screen
  // readers (visually hidden).
  function renderCell(c) {
    var td = el('td', 'cell ' + (c.placed ? stateClass(c.state) : (c.excluded ? 'excluded' : 'unplaced')));
    td.dataset.cluster = c.cluster;
    if (c.excluded) {
      td.appendChild(el('span', 'state', 'excluded'));
      if (c.reason) {
        td.title = c.reason;
        td.appendChild(el('span', 'reason visually-hidden', ': ' + c.reason));
      }
      return td;
    }
    if (!c.placed) { return td; }
    td.appendChild(el('span', 'state', stateText(c.state)));
    if (c.reason) {
      td.title = c.reason;
      td.appendChild(el('span', 'reason visually-hidden', ': ' + c.reason));
    }
    return td;
  }

  function renderSets(sets) {
    var table = document.getElementById('sets');
    if (!table) { return; }
    table.hidden = sets.length === 0;
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], sets.map(function (s) {
      var tr = el('tr');
      tr.dataset.set = s.namespace + '/' + s.name;
      var name = el('td');
      var link = el('a', '', s.namespace + '/' + s.name);
      link.href = setHref(s.namespace, s.name);
      name.appendChild(link);
      tr.appendChild(name);
      var state = el('td');
      state.appendChild(badge(s.compliant));
      tr.appendChild(state);
      tr.appendChild(el('td', 'members', s.members.join(', ')));
      tr.appendChild(el('td', 'note', s.statusMessage || ''));
      return tr;
    }));
  }

  function renderSummary(m) {
    var summary = document.getElementById('summary');
    var items = [
      [m.policies.length, 'policies', ''], [m.clusters.length, 'clusters', ''],
      // The states count cells (policy × cluster), not policies: say so.
      [m.totals.compliant, 'compliant cells', 'state-compliant'],
      [m.totals.nonCompliant, 'non-compliant cells', 'state-noncompliant'],
      [m.totals.pending, 'pending cells', 'state-pending']
    ];
    summary.replaceChildren.apply(summary, items.map(function (i) {
      var box = el('div', 'stat ' + i[2]);
      box.appendChild(el('strong', '', i[0]));
      box.appendChild(el('span', '', i[1]));
      return box;
    }));
  }

  // paintGraph redraws the states of the graph's nodes and whether its
  // edges are met, as the API's graph says (the server computes both).
  function paintGraph(graph) {
    if (!graph) { return; }
    var nodes = {};
    document.querySelectorAll('svg#graph g.node').forEach(function (g) { nodes[g.dataset.node] = g; });
    graph.nodes.forEach(function (n) {
      var g = nodes[n.id];
      if (!g) { return; }
      g.classList.remove('state-compliant', 'state-noncompliant', 'state-pending', 'state-unknown');
      g.classList.add(stateClass(n.compliant));
      var title = g.querySelector('title');
      if (title) { title.textContent = n.label + ': ' + stateText(n.compliant) + (n.reason ? ' (' + n.reason + ')' : ''); }
    });
    var edges = {};
    document.querySelectorAll('svg#graph g.edge').forEach(function (g) { edges[g.dataset.from + ' ' + g.dataset.to] = g; });
    graph.edges.forEach(function (e) {
      var g = edges[e.from + ' ' + e.to];
      if (!g || g.classList.contains('structural')) { return; }
      g.classList.toggle('met', e.met);
      g.classList.toggle('unmet', !e.met);
    });
  }

  function renderPolicy(p) {
    var overall = document.getElementById('overall');
    overall.className = 'badge ' + stateClass(p.compliant);
    overall.textContent = stateText(p.compliant);
    var clusters = document.getElementById('clusters');
    var cards = p.explanation.clusters.map(renderCluster);
    (p.explanation.excluded || []).forEach(function (x) {
      var card = el('article', 'card excluded');
      card.dataset.cluster = x.cluster;
      card.appendChild(el('h3', '', x.cluster + ' excluded'));
      var why = 'PolicySet ' + x.policySet + ' does not propagate the policy to this cluster' + (x.reason ? ': ' + x.reason : '.');
      if (x.remainingBindings && x.remainingBindings.length) {
        why += ' PlacementBinding ' + x.remainingBindings.join(', ') + ' places it here all the same.';
      }
      card.appendChild(el('p', 'note', why));
      cards.push(card);
    });
    if (cards.length === 0) { cards = [el('p', 'note', 'Not placed on any cluster.')]; }
    clusters.replaceChildren.apply(clusters, cards);
    var rows = document.querySelectorAll('#dependencies tbody tr');
    p.dependencies.forEach(function (d, i) { if (rows[i]) { renderDependencyNow(rows[i].querySelector('td.now'), d); } });
    renderRollout(document.getElementById('rollout'), p.rollout);
    paintGraph(p.graph);
  }

  // renderDependencyNow shows a dependency's current state and, when it is
  // not met, why, in the words of the policy's cluster cards.
  function renderDependencyNow(td, d) {
    if (!td) { return; }
    var parts = [];
    if (d.state) { parts.push(badge(d.state)); }
    if (d.reason) { parts.push(el('span', 'reason', d.reason)); }
    if (parts.length === 0) { parts.push(el('span', 'note', 'on each cluster')); }
    td.replaceChildren.apply(td, parts);
  }

  // renderRollout shows a root policy's status.rollout: its phase and, per
  // decision group, how many clusters are where.
  function renderRollout(box, r) {
    if (!box) { return; }
    if (!r) { box.replaceChildren(el('p', 'note', 'No rollout strategy.')); return; }
    var head = el('p', 'rollout-phase');
    head.appendChild(el('strong', '', (r.type || 'All') + ': ' + (r.phase || 'unknown')));
    if (r.reason) { head.appendChild(el('span', '', ' (' + r.reason + ')')); }
    var parts = [head];
    if (r.message) { parts.push(el('p', 'note', r.message)); }
    var table = el('table', 'list rollout');
    var tr = el('tr');
    ['Placement', 'Group', 'Updated', 'Succeeded', 'Progressing', 'Failed', 'Waiting', 'Clusters'].forEach(function (t) {
      tr.appendChild(el('th', '', t));
    });
    table.appendChild(el('thead')).appendChild(tr);
    var tbody = table.appendChild(el('tbody'));
    (r.groups || []).forEach(function (g) {
      var row = el('tr');
      [g.placement, g.groupName || String(g.groupIndex || 0), g.updated || 0, g.succeeded || 0, g.progressing || 0,
        g.failed || 0, g.waiting || 0].forEach(function (v) { row.appendChild(el('td', '', v)); });
      row.appendChild(el('td', '', (g.clusters || []).map(function (c) { return c.name + ' ' + c.state; }).join(', ')));
      tbody.appendChild(row);
    });
    parts.push(table);
    box.replaceChildren.apply(box, parts);
  }

  // renderSet shows a PolicySet: its members on each cluster, which
  // member holds the set back where it is not Compliant, and the members'
  // rollouts.
  function renderSet(s) {
    var overall = document.getElementById('overall');
    overall.className = 'badge ' + stateClass(s.compliant);
    overall.textContent = stateText(s.compliant);
    document.getElementById('status-message').textContent = s.statusMessage || '';
    var table = document.getElementById('members');
    var head = el('tr');
    head.appendChild(el('th', 'policy', 'Member'));
    head.appendChild(el('th', '', 'Overall'));
    s.clusters.forEach(function (c) { head.appendChild(el('th', 'cluster', c)); });
    table.tHead.replaceChildren(head);
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], s.members.map(function (m) {
      var tr = el('tr');
      tr.dataset.policy = m.namespace + '/' + m.name;
      var name = el('td', 'policy');
      if (m.missing) {
        name.appendChild(el('span', '', m.namespace + '/' + m.name + ' (not found)'));
      } else {
        var link = el('a', '', m.namespace + '/' + m.name);
        link.href = policyHref(m.namespace, m.name);
        name.appendChild(link);
      }
      tr.appendChild(name);
      var overallCell = el('td');
      overallCell.appendChild(badge(m.compliant));
      tr.appendChild(overallCell);
      m.cells.forEach(function (c) { tr.appendChild(renderCell(c)); });
      return tr;
    }));
    var exclusions = document.getElementById('exclusions');
    var excluded = (s.exclusions || []).map(function (x) {
      var li = el('li');
      li.dataset.policy = x.policy;
      li.dataset.cluster = x.cluster;
      li.appendChild(el('span', 'member', x.policy));
      li.appendChild(el('span', '', ' excluded from '));
      li.appendChild(el('strong', '', x.cluster));
      if (x.reason) { li.appendChild(el('span', 'reason', ': ' + x.reason)); }
      return li;
    });
    if (excluded.length === 0) { excluded = [el('li', 'note', 'None: every member goes to every cluster the set is placed on.')]; }
    exclusions.replaceChildren.apply(exclusions, excluded);
    var held = document.getElementById('held-back');
    var items = (s.heldBack || []).map(function (h) {
      var li = el('li');
      li.dataset.cluster = h.cluster;
      li.appendChild(el('strong', '', h.cluster + ': '));
      li.appendChild(el('span', 'member', h.member));
      li.appendChild(el('span', '', ' ' + stateText(h.compliant) + (h.reason ? ' (' + h.reason + ')' : '')));
      return li;
    });
    if (items.length === 0) { items = [el('li', 'note', 'Nothing: every member is Compliant wherever it is placed.')]; }
    held.replaceChildren.apply(held, items);
    var rollouts = document.getElementById('rollouts');
    rollouts.replaceChildren.apply(rollouts, s.members.filter(function (m) { return m.rollout; }).map(function (m) {
      var box = el('div', 'member-rollout');
      box.dataset.policy = m.namespace + '/' + m.name;
      box.appendChild(el('h3', '', m.namespace + '/' + m.name));
      var inner = box.appendChild(el('div'));
      renderRollout(inner, m.rollout);
      return box;
    }));
    if (!rollouts.children.length) { rollouts.replaceChildren(el('p', 'note', 'No member has a rollout strategy.')); }
    paintGraph(s.graph);
  }

  function renderCluster(c) {
    var card = el('article', 'card');
    card.dataset.cluster = c.cluster;
    var h = el('h3');
    var link = el('a', '', c.cluster);
    link.href = clusterHref(c.cluster);
    h.appendChild(link);
    h.appendChild(document.createTextNode(' '));
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
        var page = body.dataset.page;
        if (page === 'matrix') { renderMatrix(data); } else if (page === 'set') { renderSet(data); } else { renderPolicy(data); }
        showUpdated(true, 'Last updated ' + new Date(data.updated).toLocaleTimeString());
        document.getElementById('updated').dataset.updated = data.updated;
      })
      .catch(function (e) { showUpdated(false, 'Update failed (' + e.message + '); retrying'); })
      .then(function () { setTimeout(tick, refresh); });
  }

  // Note: a cluster's page is all chart; charts.js draws and polls it.
  if (body.dataset.page !== 'cluster') { tick(); }
}());
