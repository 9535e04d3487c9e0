"""The read-only inspector page of ``plait inspect DB --web``: HTML, the server page's CSS, vanilla JS.

It reads everything from the JSON helpers of ``_inspect.py``; there is no graph, so it offers
no drawing, fork, edit or resume, and says how to get them.
"""

from __future__ import annotations

from plait.server._ui_page import CSS

__all__ = ["PAGE"]

_EXTRA_CSS = """
#db{font-size:12px;color:#cfc9ff}
.note{background:#fff8e1;border-color:#f0d98c;font-size:13px}
.note code{background:#f3ecd0;padding:0 3px}
tr.fork td:nth-child(2)::after{content:" fork";color:#8a5a00;font-size:10px}
#more{font-size:12px;padding:6px 12px;color:#555}
#diff{font-size:13px}
"""

_JS = r"""
const $ = (s) => document.querySelector(s);
const api = async (path) => {
  const r = await fetch(path);
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error((data && data.detail) || r.statusText);
  return data;
};
const enc = encodeURIComponent;
const esc = (v) => String(v).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
const brief = (v) => Array.isArray(v) && v.every((m) => m && typeof m === 'object' && 'type' in m && 'content' in m)
  ? v.map((m) => m.type + ': ' + (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))) : v;
const short = (v, n = 90) => { const s = JSON.stringify(brief(v)); return s.length > n ? s.slice(0, n) + '…' : s; };
let current = null, picked = [], rows = [], showing = 0;
const say = (t) => { $('#msg').textContent = t; };

async function search() {
  const found = await api('/ui/api/threads?limit=200&q=' + enc($('#q').value.trim()));
  $('#threads').innerHTML = found.threads.map((t) => `<li data-thread="${esc(t.thread_id)}"><b>${esc(t.thread_id)}</b><br>
    ${t.checkpoints} checkpoint(s), step ${t.step}, ${esc(t.updated_at.slice(0, 19))}</li>`).join('');
  $('#more').textContent = found.total > found.threads.length ? `showing ${found.threads.length} of ${found.total}` : '';
  document.querySelectorAll('#threads li').forEach((li) => li.onclick = () => open(li.dataset.thread).catch((e) => say(e.message)));
  say(found.total + ' thread(s)');
}

async function open(id) {
  current = await api('/ui/api/threads/' + enc(id));
  picked = [];
  document.querySelectorAll('#threads li').forEach((li) => li.classList.toggle('on', li.dataset.thread === id));
  $('#detail').hidden = false;
  $('#title').textContent = id;
  $('#thread-status').className = 'status ' + current.status;
  $('#thread-status').textContent = current.status;
  $('#diff').textContent = 'pick two checkpoints in the timeline';
  rows = await api('/ui/api/threads/' + enc(id) + '/timeline');
  $('#timeline tbody').innerHTML = rows.map((c) => `<tr data-checkpoint="${esc(c.checkpoint_id)}" class="${c.fork ? 'fork' : ''}">
    <td><input type="checkbox" class="pick" value="${esc(c.checkpoint_id)}"></td><td>${c.step}</td><td>${esc(c.source)}</td>
    <td><b>${esc(c.nodes.join(', '))}</b> ${[...Object.entries(c.writes).map(([k, v]) => esc(k) + ': ' + esc(short(v))),
      ...Object.entries(c.removed).map(([k, n]) => `<span class="del">${esc(k)}: ${n} removed</span>`)].join('<br>')}
    ${c.interrupts.length ? '<br><i>interrupt: ' + esc(short(c.interrupts.map((i) => i.value))) + '</i>' : ''}</td>
    <td>${esc(c.next.join(', '))}</td><td>${Object.values(c.bytes).reduce((a, b) => a + b, 0)}</td>
    <td>${esc((c.created_at || '').slice(11, 23))}</td></tr>`).join('');
  document.querySelectorAll('#timeline tbody tr').forEach((tr) => tr.onclick = (e) => {
    if (e.target.classList.contains('pick')) return pick(e.target).catch((err) => say(err.message));
    show(tr.dataset.checkpoint).catch((err) => say(err.message));
  });
  if (rows.length) await show(rows[0].checkpoint_id);
  say(rows.length + ' checkpoint(s)');
}

async function show(cid) {
  document.querySelectorAll('#timeline tbody tr').forEach((tr) => tr.classList.toggle('on', tr.dataset.checkpoint === cid));
  const me = ++showing;
  const st = await api('/ui/api/threads/' + enc(current.thread_id) + '/state/' + enc(cid));
  if (me !== showing) return;  // a later click won while this state loaded
  const row = rows.find((c) => c.checkpoint_id === cid);
  $('#checkpoint').textContent = cid;
  $('#state').textContent = JSON.stringify(st.values, null, 2);
  $('#pending').textContent = st.pending_writes.length ? JSON.stringify(st.pending_writes, null, 2) : 'none';
  $('#bytes tbody').innerHTML = Object.entries(row ? row.bytes : {}).sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `<tr><td>${esc(k)}</td><td>${n}</td></tr>`).join('');
  $('#next').textContent = st.next.length ? 'next: ' + st.next.join(', ') : 'finished';
}

async function pick(box) {
  picked = picked.filter((c) => c !== box.value);
  if (box.checked) picked.push(box.value);
  if (picked.length > 2) {
    const drop = picked.shift();
    document.querySelector(`.pick[value="${drop}"]`).checked = false;
  }
  if (picked.length === 2) await diff(...picked);
}

function line(c) {
  const k = esc(c.key);
  if (c.kind === 'added') return `<div class="add">+ ${k}: ${esc(short(c.after, 200))}</div>`;
  if (c.kind === 'removed') return `<div class="del">- ${k}: ${esc(short(c.before, 200))}</div>`;
  if (c.kind === 'appended') return `<div class="add">+ ${k} appended ${c.items.length}: ${esc(short(c.items, 200))}</div>`;
  if (c.kind === 'messages') return [
    ...c.added.map((m) => `<div class="add">+ ${k}: ${esc(short([m], 200))}</div>`),
    ...c.changed.map((m) => `<div class="chg">~ ${k}: ${esc(short([m], 200))}</div>`),
    ...(c.removed.length ? [`<div class="del">- ${k}: ${c.removed.length} removed ${esc(short(c.removed, 160))}</div>`] : []),
  ].join('');
  return `<div class="chg">~ ${k}: ${esc(short(c.before, 100))} → ${esc(short(c.after, 100))}</div>`;
}

async function diff(c1, c2) {
  const d = await api(`/ui/api/threads/${enc(current.thread_id)}/diff?a=${enc(c1)}&b=${enc(c2)}`);
  $('#diff').innerHTML = `<div>step ${d.from_step} ${esc(d.from)} → step ${d.to_step} ${esc(d.to)}</div>`
    + (d.changes.map(line).join('') || '<div>no difference</div>');
}

$('#go').onclick = () => search().catch((e) => say(e.message));
$('#q').onkeydown = (e) => { if (e.key === 'Enter') search().catch((err) => say(err.message)); };
search().catch((e) => say(e.message));
"""

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plait inspector (read-only)</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}{_EXTRA_CSS}</style></head>
<body>
<header><h1>plait inspector</h1>
<input id="q" placeholder="thread id contains…" size="30"><button id="go">Search</button>
<span id="db" title="read-only">read-only: {{{{DB}}}}</span>
<span id="msg"></span></header>
<main><div id="side"><ul id="threads"></ul><div id="more"></div></div>
<div id="detail" hidden>
<section><h2>Thread <span id="title"></span> <span id="thread-status" class="status"></span></h2></section>
<section class="note" id="no-graph">This page reads a bare checkpoint database: it knows no graph, so it
cannot draw one, nor fork, edit or resume a thread. For those, serve the program's graphs on this
database, <code>plait serve --config plait.json --db {{{{DB}}}}</code>, and open its <code>/ui</code>.</section>
<section><h2>Timeline (pick two checkpoints to diff them)</h2>
<table id="timeline"><thead><tr><th></th><th>step</th><th>source</th><th>node: writes</th><th>next</th>
<th>bytes</th><th>time</th></tr></thead><tbody></tbody></table></section>
<div class="row">
<section><h2>State at <code id="checkpoint"></code> <small id="next"></small></h2><pre id="state"></pre>
<h2>Pending writes</h2><pre id="pending"></pre></section>
<section><h2>Bytes per channel</h2><table id="bytes"><thead><tr><th>channel</th><th>JSON bytes</th></tr></thead>
<tbody></tbody></table></section></div>
<section><h2>Diff</h2><div id="diff">pick two checkpoints in the timeline</div></section>
</div></main>
<script>{_JS}</script></body></html>
"""
