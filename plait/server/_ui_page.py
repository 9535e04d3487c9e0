"""The inspector page: one HTML document with its CSS and vanilla JavaScript (no build step)."""

from __future__ import annotations

__all__ = ["CSS", "PAGE"]

CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#2d2a4a;color:#fff;padding:8px 16px;display:flex;gap:12px;align-items:center}
header h1{font-size:18px;margin:0 16px 0 0}
header input,header select,header button{font-size:13px;padding:4px 6px}
main{display:flex;height:calc(100vh - 46px)}
#side{width:330px;overflow:auto;border-right:1px solid #ddd;background:#fff}
#threads{list-style:none;margin:0;padding:0}
#threads li{padding:8px 12px;border-bottom:1px solid #eee;cursor:pointer;font-size:12px}
#threads li:hover,#threads li.on{background:#efeafd}
.status{display:inline-block;padding:1px 6px;border-radius:8px;font-size:11px;background:#ddd}
.status.idle{background:#d7f5dd}.status.interrupted{background:#ffe7b3}.status.error{background:#ffd0d0}.status.busy{background:#cfe3ff}
#detail{flex:1;overflow:auto;padding:12px 18px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 14px;margin-bottom:12px}
section h2{font-size:14px;margin:0 0 8px}
table{border-collapse:collapse;font-size:12px;width:100%}
td,th{border-bottom:1px solid #eee;padding:4px 6px;text-align:left;vertical-align:top}
#timeline tr.on{background:#efeafd}#timeline tr{cursor:pointer}
pre{background:#f6f6f9;padding:8px;overflow:auto;max-height:320px;font-size:12px;margin:0}
.add{color:#176b2c}.del{color:#a01818}.chg{color:#8a5a00}
textarea{width:100%;height:90px;font-family:monospace;font-size:12px}
.row{display:flex;gap:12px}.row>section{flex:1;min-width:0}
#msg{font-size:12px;color:#555;margin-left:auto}
"""

_JS = r"""
const $ = (s) => document.querySelector(s);
const api = async (path, opts = {}) => {
  const token = localStorage.getItem('plait-token') || '';
  const headers = {'Content-Type': 'application/json', ...(token ? {Authorization: 'Bearer ' + token} : {})};
  const r = await fetch(path, {...opts, headers});
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error((data && data.detail) || r.statusText);
  return data;
};
const esc = (v) => String(v).replace(/[&<>"]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
const said = (m) => {  // one message: its type, its text, and the tools it calls (name and arguments)
  const text = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
  const calls = (m.tool_calls || []).map((c) => c.name + '(' + JSON.stringify(c.args) + ')');
  return m.type + ': ' + [text, calls.length ? 'calls ' + calls.join(', ') : ''].filter(Boolean).join(' ');
};
const brief = (v) => Array.isArray(v) && v.every((m) => m && typeof m === 'object' && 'type' in m && 'content' in m)
  ? v.map(said) : v;
const short = (v, n = 90) => { const s = JSON.stringify(brief(v)); return s.length > n ? s.slice(0, n) + '…' : s; };
let current = null, picked = [], states = {}, showing = 0, opening = 0;
const sideItem = (t) => `<b>${esc(t.thread_id)}</b><br><span class="status ${esc(t.status)}">${esc(t.status)}</span>
  ${esc(t.updated_at.slice(0, 19))} ${esc(short(t.metadata, 60))}`;
const say = (t) => { $('#msg').textContent = t; };

async function search() {
  const body = {limit: 50, sort_by: 'updated_at'};
  const q = $('#q').value.trim();
  if (q.startsWith('{')) body.metadata = JSON.parse(q);
  if ($('#status').value) body.status = $('#status').value;
  let found = await api('/threads/search', {method: 'POST', body: JSON.stringify(body)});
  if (q && !q.startsWith('{')) found = found.filter((t) => t.thread_id.includes(q) || JSON.stringify(t.metadata).includes(q));
  $('#threads').innerHTML = found.map((t) => `<li data-thread="${esc(t.thread_id)}">${sideItem(t)}</li>`).join('');
  document.querySelectorAll('#threads li').forEach((li) => {
    li.classList.toggle('on', !!current && li.dataset.thread === current.thread_id);
    li.onclick = () => open(li.dataset.thread);
  });
  say(found.length + ' thread(s)');
}

async function open(id) {
  const me = ++opening;
  const thread = await api('/threads/' + id);
  if (me !== opening) return;  // a later click won while this thread loaded
  current = thread; picked = []; states = {}; showing++;
  $('#diff').textContent = 'pick two checkpoints in the timeline';
  ['#state', '#next', '#checkpoint'].forEach((s) => { $(s).textContent = ''; });
  $('#bytes tbody').innerHTML = ''; $('#timeline tbody').innerHTML = '';
  document.querySelectorAll('#threads li').forEach((li) => {
    li.classList.toggle('on', li.dataset.thread === id);
    if (li.dataset.thread === id) li.innerHTML = sideItem(current);  // the sidebar shows the status just read
  });
  $('#detail').hidden = false;
  $('#title').textContent = id;
  $('#thread-status').className = 'status ' + current.status;
  $('#thread-status').textContent = current.status;
  const graphId = current.metadata.graph_id || $('#graphs').value;
  const drawn = await api('/ui/api/graphs/' + encodeURIComponent(graphId));
  $('#graph').innerHTML = drawn.svg;
  $('#mermaid').textContent = drawn.mermaid;
  const rows = await api('/ui/api/threads/' + id + '/timeline');
  if (me !== opening) return;
  $('#timeline tbody').innerHTML = rows.map((c) => `<tr data-checkpoint="${c.checkpoint_id}">
    <td><input type="checkbox" class="pick" value="${c.checkpoint_id}"></td><td>${c.step}</td><td>${esc(c.source)}</td>
    <td><b>${esc(c.nodes.join(', '))}</b> ${Object.entries(c.writes).map(([k, v]) => esc(k) + ': ' + esc(short(v))).join('<br>')}
    ${c.interrupts.length ? '<br><i>interrupt: ' + esc(short(c.interrupts.map((i) => i.value))) + '</i>' : ''}</td>
    <td>${Object.values(c.bytes).reduce((a, b) => a + b, 0)}</td><td>${esc((c.created_at || '').slice(11, 23))}</td></tr>`).join('');
  document.querySelectorAll('#timeline tbody tr').forEach((tr) => tr.onclick = (e) => {
    if (e.target.classList.contains('pick')) return pick(e.target);
    show(tr.dataset.checkpoint, rows.find((c) => c.checkpoint_id === tr.dataset.checkpoint));
  });
  if (rows.length) await show(rows[0].checkpoint_id, rows[0]);
}

async function stateAt(cid) {
  if (!states[cid]) states[cid] = await api('/threads/' + current.thread_id + '/state/' + cid);
  return states[cid];
}

async function show(cid, row) {
  document.querySelectorAll('#timeline tbody tr').forEach((tr) => tr.classList.toggle('on', tr.dataset.checkpoint === cid));
  $('#checkpoint').textContent = cid;  // fork and resume act on the clicked row at once
  $('#edit').value = '{}';
  const me = ++showing;
  const st = await stateAt(cid);
  if (me !== showing) return;  // a later click won while this state loaded
  $('#state').textContent = JSON.stringify(st.values, null, 2);
  $('#bytes tbody').innerHTML = Object.entries(row.bytes).sort((a, b) => b[1] - a[1])
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
  if (picked.length === 2) diff(...picked);
}

function lines(a, b) {
  const out = [];
  for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    const x = JSON.stringify(a[k]), y = JSON.stringify(b[k]);
    if (!(k in a)) out.push(`<div class="add">+ ${esc(k)}: ${esc(short(b[k], 200))}</div>`);
    else if (!(k in b)) out.push(`<div class="del">- ${esc(k)}: ${esc(short(a[k], 200))}</div>`);
    else if (x !== y && Array.isArray(a[k]) && Array.isArray(b[k]) && y.startsWith(x.slice(0, -1)))
      out.push(`<div class="add">+ ${esc(k)} appended ${b[k].length - a[k].length}: ${esc(short(b[k].slice(a[k].length), 200))}</div>`);
    else if (x !== y) out.push(`<div class="chg">~ ${esc(k)}: ${esc(short(a[k], 100))} → ${esc(short(b[k], 100))}</div>`);
  }
  return out.join('') || '<div>no difference</div>';
}

async function diff(c1, c2) {
  const thread = current;
  const [s1, s2] = [await stateAt(c1), await stateAt(c2)];
  if (thread !== current) return;  // another thread was opened meanwhile
  const [older, newer] = (s1.created_at || '') <= (s2.created_at || '') ? [s1, s2] : [s2, s1];
  $('#diff').innerHTML = `<div>${esc(older.checkpoint_id)} → ${esc(newer.checkpoint_id)}</div>` + lines(older.values, newer.values);
}

async function fork() {
  const cid = $('#checkpoint').textContent;
  const values = JSON.parse($('#edit').value || '{}');
  const asNode = $('#as-node').value.trim();
  const out = await api('/threads/' + current.thread_id + '/state', {method: 'POST',
    body: JSON.stringify({values, checkpoint_id: cid, ...(asNode ? {as_node: asNode} : {})})});
  await open(current.thread_id);
  say('forked: new head ' + out.checkpoint_id);
}

async function resume() {
  const cid = $('#checkpoint').textContent;
  const raw = $('#resume-value').value.trim();
  const body = {assistant_id: current.metadata.assistant_id || current.metadata.graph_id || $('#graphs').value, checkpoint_id: cid};
  if (raw) body.command = {resume: JSON.parse(raw)}; else body.input = null;
  const out = await api('/threads/' + current.thread_id + '/runs/wait', {method: 'POST', body: JSON.stringify(body)});
  await open(current.thread_id);
  say('resumed: ' + short(out, 80));
}

$('#token').value = localStorage.getItem('plait-token') || '';
$('#token').onchange = () => localStorage.setItem('plait-token', $('#token').value);
$('#go').onclick = () => search().catch((e) => say(e.message));
$('#fork').onclick = () => fork().catch((e) => say(e.message));
$('#resume').onclick = () => resume().catch((e) => say(e.message));
search().catch((e) => say(e.message));
"""

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plait inspector</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body>
<header><h1>plait inspector</h1>
<input id="q" placeholder='thread id, text, or {{"metadata": "json"}}' size="34">
<select id="status"><option value="">any status</option><option>idle</option><option>busy</option>
<option>interrupted</option><option>error</option></select>
<button id="go">Search</button>
<select id="graphs" title="graph">{{{{GRAPHS}}}}</select>
<input id="token" type="password" placeholder="bearer token" size="12">
<span id="msg"></span></header>
<main><div id="side"><ul id="threads"></ul></div>
<div id="detail" hidden>
<section><h2>Thread <span id="title"></span> <span id="thread-status" class="status"></span></h2>
<div class="row"><div id="graph"></div><pre id="mermaid" style="max-height:220px"></pre></div></section>
<section><h2>Timeline (pick two checkpoints to diff them)</h2>
<table id="timeline"><thead><tr><th></th><th>step</th><th>source</th><th>node: writes</th><th>bytes</th><th>time</th></tr></thead>
<tbody></tbody></table></section>
<div class="row">
<section><h2>State at <code id="checkpoint"></code> <small id="next"></small></h2><pre id="state"></pre></section>
<section><h2>Bytes per channel</h2><table id="bytes"><thead><tr><th>channel</th><th>JSON bytes</th></tr></thead>
<tbody></tbody></table></section></div>
<section><h2>Diff</h2><div id="diff">pick two checkpoints in the timeline</div></section>
<section><h2>Fork, edit, resume from this checkpoint</h2>
<div class="row"><div><label>values to write (JSON, through the reducers)</label><textarea id="edit">{{}}</textarea>
<input id="as-node" placeholder="as node (optional)"> <button id="fork">Fork with these values</button></div>
<div><label>resume value (JSON; empty: continue)</label><textarea id="resume-value"></textarea>
<button id="resume">Resume from here</button></div></div></section>
</div></main>
<script>{_JS}</script></body></html>
"""
