// cuco serve's front-end: lineage tree, score plot, candidate details and
// live updates by polling /api/updates.  No library; everything from the
// database is put on the page with textContent, never as markup.
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
  '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const FINISHED = new Set(['ok', 'failed', 'rejected']);
// statuses drawn as themselves in the tree (others as "other")
const KNOWN = new Set([...FINISHED, 'running', 'pending', 'interrupted']);
const POLL_MS = 1500;
const RESTAMP_S = 60;

const state = {
  programs: new Map(), // id -> summary
  maxId: 0,
  lastT: 0,
  filterIds: null,     // Set of ids matching the filter, or null for all
  selected: null,
  run: null,           // the latest /api/run (best_program_id for the plot)
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function sv(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function getJSON(url) {
  const r = await fetch(url, { cache: 'no-store' });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status));
  return j;
}

function colour(island) {
  return PALETTE[Math.abs(Number(island) || 0) % PALETTE.length];
}

function fmt(v, digits) {
  return typeof v === 'number' ? v.toPrecision(digits || 4) : '-';
}

// Merge summaries by id; true when something new or different arrived.
function merge(list) {
  let changed = false;
  for (const p of list) {
    const old = state.programs.get(p.id);
    if (!old || JSON.stringify(old) !== JSON.stringify(p)) changed = true;
    state.programs.set(p.id, p);
    state.maxId = Math.max(state.maxId, p.id);
    state.lastT = Math.max(state.lastT, p.updated_at || 0);
  }
  return changed;
}

// The bar per size (docs/contracts.md section 5): which baseline, its
// median, the others measured; a database from before the bar stored the
// first baseline only.  Speedups (p.speedup) are against this.
function barText(b) {
  if (!b || typeof b !== 'object' || Array.isArray(b) || !Object.keys(b).length)
    return 'speedups are against the seed (the workload has no baseline)';
  const parts = [];
  for (const [size, row] of Object.entries(b)) {
    if (!row || typeof row !== 'object') continue;
    const ms = typeof row.median_ms === 'number' ? row.median_ms.toPrecision(4) + ' ms' : '-';
    let t = `${size} ${typeof row.bar === 'string' ? row.bar : 'the first baseline'} ${ms}`;
    const others = Object.entries(row.baselines || {})
      .filter(([n, v]) => n !== row.bar && v && typeof v.median_ms === 'number')
      .map(([n, v]) => `${n} ${v.median_ms.toPrecision(4)} ms`);
    if (others.length) t += ` (${others.join('; ')})`;
    parts.push(t);
  }
  return 'bar: ' + parts.join(' · ');
}

function renderSummary(run) {
  state.run = run;
  $('title').textContent = 'cuco run: ' + run.workload;
  document.title = 'cuco: ' + run.workload;
  const c = run.counts || {};
  const l = run.llm_totals || {};
  const wall = typeof run.wall_s !== 'number' ? '-'
    : run.wall_s < 120 ? run.wall_s.toFixed(0) + ' s' : (run.wall_s / 60).toFixed(1) + ' min';
  // the run's one speedup: the confirmed figure with its interval, or the
  // search's labelled unconfirmed (/api/run's headline, as cuco report says)
  const h = run.headline || {};
  $('headline').textContent = h.program_id > 0
    ? `Speedup: best #${h.program_id}: ${h.text}` : 'Speedup: no best yet';
  $('summary').textContent =
    `status ${run.status || '-'} · ${c.total || 0} candidates (${c.ok || 0} ok, ` +
    `${c.failed || 0} failed, ${c.rejected || 0} rejected, ${c.interrupted || 0} interrupted, ` +
    `${c.running || 0} running, ${c.pending || 0} pending)` +
    (c.migrated ? ` + ${c.migrated} migrate ${c.migrated === 1 ? 'copy' : 'copies'} (not evaluated)` : '') +
    ` · best #${run.best_program_id ?? '-'} · ` +
    `LLM ${run.llm || 'none'}: ${l.calls || 0} calls, $${(l.cost_usd || 0).toFixed(4)} · wall ${wall}`;
  $('bar').textContent = barText(run.baseline);
  // a finished run is not "live": say what it is
  const live = $('live');
  if (run.finished_at) {
    live.textContent = run.status || 'finished';
    live.classList.add('finished');
    live.title = 'the run has ended; the page shows its final state';
  } else {
    live.textContent = 'live';
    live.classList.remove('finished');
  }
  const sel = $('f-island');
  for (const i of run.islands || []) {
    if (![...sel.options].some((o) => o.value === String(i)))
      sel.appendChild(el('option', { value: String(i) }, 'island ' + i));
  }
}

function matches(p) {
  return !state.filterIds || state.filterIds.has(p.id);
}

// One row per generation, ordered by island then id (as cuco report does).
function renderTree() {
  const list = [...state.programs.values()].sort((a, b) =>
    (a.generation ?? 0) - (b.generation ?? 0) ||
    (a.island ?? 0) - (b.island ?? 0) || a.id - b.id);
  const pos = new Map();
  let row = -1, col = 0, gen = null, maxCol = 1;
  for (const p of list) {
    if (p.generation !== gen || row < 0) { row++; col = 0; gen = p.generation; }
    pos.set(p.id, { x: 30 + col * 26, y: 30 + row * 60 });
    col++;
    maxCol = Math.max(maxCol, col);
  }
  const svg = sv('svg', { width: 60 + maxCol * 26, height: 60 + Math.max(row, 0) * 60,
    id: 'tree-svg', role: 'img', 'aria-label': 'lineage tree' });
  const edges = sv('g', { class: 'edges' });
  for (const p of list) {
    const me = pos.get(p.id);
    for (const [pid, dashed] of [[p.parent_id, false], [p.parent2_id, true]]) {
      const par = pos.get(pid);
      if (!par) continue;
      const ln = sv('line', { x1: par.x, y1: par.y, x2: me.x, y2: me.y,
        stroke: dashed ? '#c77' : '#999', 'stroke-width': 1 });
      if (dashed) ln.setAttribute('stroke-dasharray', '4 3');
      edges.appendChild(ln);
    }
  }
  svg.appendChild(edges);
  const nodes = sv('g', { class: 'nodes' });
  for (const p of list) {
    const me = pos.get(p.id);
    const status = KNOWN.has(p.status) ? p.status : 'other';
    const c = sv('circle', { cx: me.x, cy: me.y, r: 8, fill: colour(p.island),
      class: `node ${status}${matches(p) ? '' : ' dim'}${state.selected === p.id ? ' selected' : ''}`,
      'data-id': p.id });
    const t = sv('title');
    t.textContent = `#${p.id} gen ${p.generation} island ${p.island} ${p.edit_kind} ` +
      `${p.status}${p.error ? ': ' + p.error : ''}${typeof p.score === 'number' ? ' score ' + fmt(p.score) : ''}`;
    c.appendChild(t);
    c.addEventListener('click', () => select(p.id));
    nodes.appendChild(c);
    // its id below it, as cuco report draws it
    const id = sv('text', { x: me.x, y: me.y + 20, 'text-anchor': 'middle', class: 'nid' });
    id.textContent = String(p.id);
    nodes.appendChild(id);
  }
  svg.appendChild(nodes);
  $('tree').replaceChildren(svg);
}

// About five ticks at 1, 2 or 5 times a power of ten (integers if asked).
function ticks(lo, hi, integers) {
  const raw = (hi - lo) / 5;
  if (!(raw > 0)) return [lo];
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  let step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
  if (integers) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 20; v += step) out.push(v);
  return out;
}

function renderPlot() {
  const pts = [...state.programs.values()].filter((p) => FINISHED.has(p.status))
    .sort((a, b) => a.id - b.id);
  const W = 640, H = 340, L = 60, T = 16, PW = 560, PH = 220;
  const svg = sv('svg', { width: W, height: H, id: 'plot-svg', role: 'img',
    'aria-label': 'score over candidates' });
  if (!pts.length) { $('plot').replaceChildren(el('p', { class: 'note' }, 'No evaluated candidate yet.')); return; }
  const scores = pts.filter((p) => typeof p.score === 'number').map((p) => p.score);
  let ymin = Math.min(0, ...scores), ymax = Math.max(1, ...scores);
  let xmin = pts[0].id, xmax = pts[pts.length - 1].id;
  if (xmax === xmin) { xmin -= 1; xmax += 1; }
  const X = (v) => L + (v - xmin) / (xmax - xmin) * PW;
  const Y = (v) => T + PH - (v - ymin) / (ymax - ymin) * PH;
  svg.appendChild(sv('line', { x1: L, y1: T + PH, x2: L + PW, y2: T + PH, stroke: '#444' }));
  svg.appendChild(sv('line', { x1: L, y1: T, x2: L, y2: T + PH, stroke: '#444' }));
  for (const v of ticks(ymin, ymax, false)) {
    const t = sv('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'tick' });
    t.textContent = String(Number(v.toPrecision(4)));
    svg.appendChild(t);
    svg.appendChild(sv('line', { x1: L, y1: Y(v), x2: L + PW, y2: Y(v), stroke: '#eee' }));
  }
  for (const v of ticks(xmin, xmax, true)) {
    const tx = sv('text', { x: X(v), y: T + PH + 14, 'text-anchor': 'middle', class: 'tick' });
    tx.textContent = String(v);
    svg.appendChild(tx);
  }
  // the failed lane only when there are failures
  if (pts.some((p) => typeof p.score !== 'number')) {
    const lab = sv('text', { x: L - 6, y: T + PH + 40, 'text-anchor': 'end', class: 'tick' });
    lab.textContent = 'failed';
    svg.appendChild(lab);
  }
  const xt = sv('text', { x: L + PW / 2, y: T + PH + 62, 'text-anchor': 'middle',
    class: 'axis-title', id: 'plot-x-title' });
  xt.textContent = 'candidate id (order of creation)';
  svg.appendChild(xt);
  const yt = sv('text', { x: 14, y: T + PH / 2, 'text-anchor': 'middle', class: 'axis-title',
    id: 'plot-y-title', transform: `rotate(-90 14 ${T + PH / 2})` });
  yt.textContent = 'score = 1000 / median ms (higher is faster)';
  svg.appendChild(yt);
  const g = sv('g', { class: 'points' });
  const bestId = state.run ? state.run.best_program_id : null;
  for (const p of pts) {
    const ok = typeof p.score === 'number';
    const copy = p.edit_kind === 'migrate'; // a copy between islands, not a candidate
    const c = sv('circle', { cx: X(p.id), cy: ok ? Y(p.score) : T + PH + 36, r: ok ? 4 : 3.5,
      fill: copy ? '#fff' : ok ? colour(p.island) : '#d62728',
      stroke: copy ? colour(p.island) : 'none',
      class: `pt ${copy ? 'migrate' : ok ? 'ok' : 'fail'}${matches(p) ? '' : ' dim'}`, 'data-id': p.id });
    const t = sv('title');
    t.textContent = copy ? `#${p.id} island ${p.island}: migrate copy of #${p.parent_id} (not a candidate)`
      : `#${p.id} island ${p.island} ${p.edit_kind} ${p.status} score ${fmt(p.score)}`;
    if (p.id === bestId && ok)
      g.appendChild(sv('circle', { cx: X(p.id), cy: Y(p.score), r: 7, fill: 'none',
        stroke: '#111', 'stroke-width': 1.8, class: 'best-ring' }));
    c.appendChild(t);
    c.addEventListener('click', () => select(p.id));
    g.appendChild(c);
  }
  svg.appendChild(g);
  // island legend: one swatch per island present
  const islands = [...new Set(pts.map((p) => p.island))].sort((a, b) => a - b);
  const leg = el('div', { class: 'legend', id: 'plot-legend' });
  for (const i of islands) {
    const item = el('span', { class: 'legend-item' });
    const sw = el('span', { class: 'swatch' });
    sw.style.background = colour(i);
    item.append(sw, 'island ' + i);
    leg.appendChild(item);
  }
  if (pts.some((p) => typeof p.score !== 'number')) {
    const item = el('span', { class: 'legend-item' });
    const sw = el('span', { class: 'swatch' });
    sw.style.background = '#d62728';
    item.append(sw, 'failed / rejected (no score)');
    leg.appendChild(item);
  }
  if (pts.some((p) => p.edit_kind === 'migrate'))
    leg.appendChild(el('span', { class: 'legend-item' }, '○ migrate copy (not a candidate)'));
  // the run's best as the summary and the report name it (not the highest mark)
  // with the headline's figure: confirmed with its interval, or unconfirmed
  const b = pts.find((p) => p.id === bestId && typeof p.score === 'number');
  const h = (state.run && state.run.headline) || {};
  let fig = '';
  if (b && h.program_id === b.id && typeof h.speedup === 'number')
    fig = `${Number(h.speedup.toPrecision(3))}x the ${h.versus}, ` +
      (h.confirmed && typeof h.lo === 'number' && typeof h.hi === 'number'
      ? `confirmed [${Number(h.lo.toPrecision(3))}, ${Number(h.hi.toPrecision(3))}], `
      : 'unconfirmed, ');
  if (b)
    leg.appendChild(el('span', { class: 'legend-item', id: 'plot-best' },
      `◯ best #${b.id}: ${fig}score ${b.score.toPrecision(4)}`));
  $('plot').replaceChildren(svg, leg);
}

// Best and mean score per directive value, from /api/plot.
async function renderByDirective() {
  let plot;
  try { plot = await getJSON('/api/plot'); } catch (e) { return; }
  const by = plot.by_directive || {};
  let rows = 0, best = 0;
  for (const vals of Object.values(by)) {
    rows += vals.length ? vals.length + 1 : 0;
    for (const v of vals) if (typeof v.best === 'number') best = Math.max(best, v.best);
  }
  if (!rows || best <= 0) {
    $('bydir').replaceChildren(el('p', { class: 'note' }, 'No candidate with a score yet.'));
    return;
  }
  const svg = sv('svg', { width: 640, height: 10 + rows * 18, id: 'bydir-svg' });
  let y = 4;
  const text = (x, yy, anchor, t) => {
    const n = sv('text', { x, y: yy, 'text-anchor': anchor, class: 'tick' });
    n.textContent = t;
    svg.appendChild(n);
  };
  for (const [dim, vals] of Object.entries(by)) {
    if (!vals.length) continue;
    text(4, y + 12, 'start', dim);
    y += 18;
    for (const v of vals) {
      text(130, y + 11, 'end', String(v.value));
      if (typeof v.best === 'number') {
        svg.appendChild(sv('rect', { x: 136, y, width: 300 * (v.best / best), height: 13, fill: '#9ecae1', class: 'bar' }));
        svg.appendChild(sv('rect', { x: 136, y: y + 4, width: 300 * (Math.max(v.mean || 0, 0) / best), height: 5, fill: '#3182bd' }));
      }
      text(444, y + 11, 'start', typeof v.best === 'number'
        ? `best ${fmt(v.best, 3)}, mean ${fmt(v.mean, 3)}, ${v.n_ok} ok of ${v.n}` : `no score, 0 ok of ${v.n}`);
      y += 18;
    }
  }
  $('bydir').replaceChildren(svg);
}

function render() {
  renderTree();
  renderPlot();
  const n = state.filterIds ? state.filterIds.size : state.programs.size;
  $('count').textContent = `${n} of ${state.programs.size} candidates shown`;
}

function section(title, node) {
  const d = el('div', { class: 'section' });
  d.appendChild(el('h2', {}, title));
  d.appendChild(node);
  return d;
}

function pre(text, cls) {
  return el('pre', cls ? { class: cls } : {}, text || '(empty)');
}

function diffNode(text) {
  const p = el('pre', { class: 'diff', id: 'diff' });
  if (!text) { p.textContent = '(no parent, or identical to it)'; return p; }
  for (const line of text.split('\n')) {
    const cls = line.startsWith('+++') || line.startsWith('---') ? 'file'
      : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del'
      : line.startsWith('@@') ? 'hunk' : 'ctx';
    p.appendChild(el('span', { class: cls }, line));
    if (cls === 'file' || cls === 'ctx') p.appendChild(document.createTextNode('\n'));
  }
  return p;
}

function kvTable(obj) {
  const t = el('table', { class: 'kv' });
  for (const [k, v] of Object.entries(obj || {})) {
    const tr = el('tr');
    tr.appendChild(el('th', {}, k));
    tr.appendChild(el('td', {}, typeof v === 'object' && v !== null ? JSON.stringify(v) : v));
    t.appendChild(tr);
  }
  return t;
}

function details(summary, node, open) {
  const d = el('details', open ? { open: '' } : {});
  d.appendChild(el('summary', {}, summary));
  d.appendChild(node);
  return d;
}

async function select(id) {
  state.selected = id;
  render();
  const box = $('detail');
  let p;
  try {
    p = await getJSON('/api/program/' + encodeURIComponent(id));
  } catch (e) {
    box.replaceChildren(el('p', { class: 'err' }, 'Cannot load #' + id + ': ' + e.message));
    return;
  }
  if (state.selected !== id) return;
  const parts = [];
  parts.push(el('h2', { id: 'detail-title' },
    `#${p.id}: ${p.edit_kind}, island ${p.island}, generation ${p.generation}`));
  parts.push(kvTable({
    status: p.status, 'stage reached': p.stage, score: fmt(p.score),
    'median ms': fmt(p.median_ms), 'noise ms': fmt(p.noise_ms), speedup: fmt(p.speedup),
    parent: p.parent_id ?? '-', 'second parent': p.parent2_id ?? '-',
    children: (p.children || []).join(', ') || '-', phase: p.phase,
  }));
  if (p.error) parts.push(section('Error', el('div', { class: 'err' }, p.error)));
  if (p.rationale) parts.push(section('Rationale', el('p', {}, p.rationale)));
  parts.push(section('Directives', kvTable(p.directives)));
  parts.push(section('Diff to parent', diffNode(p.diff_to_parent)));
  parts.push(details('Metrics', pre(p.metrics ? JSON.stringify(p.metrics, null, 2) : '')));
  parts.push(details('Code', pre(p.code)));
  parts.push(details('Build log', pre(p.build_log)));
  parts.push(details('Verify log', pre(p.verify_log)));
  if (p.llm) {
    parts.push(details(`LLM prompt (${p.llm.provider}/${p.llm.model}, ${p.llm.tokens_in} tokens in, $${fmt(p.llm.cost_usd, 3)})`,
      pre(p.llm.prompt, 'prompt')));
    parts.push(details(`LLM response (${p.llm.tokens_out} tokens out)`, pre(p.llm.response, 'response')));
  } else {
    parts.push(el('p', { class: 'note' }, 'No LLM call made this candidate.'));
  }
  box.replaceChildren(...parts);
}

async function applyFilter() {
  const q = new URLSearchParams();
  if ($('f-island').value) q.set('island', $('f-island').value);
  if ($('f-status').value) q.set('status', $('f-status').value);
  if ($('f-kind').value) q.set('edit_kind', $('f-kind').value);
  if ([...q.keys()].length === 0) {
    state.filterIds = null;
  } else {
    const j = await getJSON('/api/programs?' + q.toString());
    state.filterIds = new Set(j.programs.map((p) => p.id));
  }
  render();
}

async function poll() {
  try {
    // Ask again for the last RESTAMP_S seconds: with several evaluation
    // slots a row can commit a time older than one already seen.
    const after = Math.max(0, state.lastT - RESTAMP_S);
    const j = await getJSON(`/api/updates?since=${state.maxId}&after=${after}`);
    renderSummary(j.run);
    if (merge(j.programs)) {
      if (state.filterIds) await applyFilter(); else render();
      renderByDirective();
    }
    $('live').classList.remove('stale');
  } catch (e) {
    $('live').classList.add('stale');
  }
  setTimeout(poll, POLL_MS);
}

async function main() {
  for (const id of ['f-island', 'f-status', 'f-kind'])
    $(id).addEventListener('change', applyFilter);
  const [run, progs] = await Promise.all([getJSON('/api/run'), getJSON('/api/programs')]);
  renderSummary(run);
  merge(progs.programs);
  render();
  await renderByDirective();
  document.body.dataset.ready = '1';
  setTimeout(poll, POLL_MS);
}

main().catch((e) => {
  $('detail').replaceChildren(el('p', { class: 'err' }, 'Cannot load the run: ' + e.message));
});
