// The sale dashboard. It reads /admin/stats/stream (Server-Sent Events)
// with fetch(), which can send the admin token as a bearer token where
// EventSource cannot, and draws plain SVG. Without a token typed in this
// tab it sends the session cookie a login link set (seckillctl
// dashboard-link: HttpOnly, so this script never sees it), and asks for
// the token when the server refuses that. It reconnects by itself: a
// stream that ends or fails shows "reconnecting" and is retried with a
// growing pause (0.5 s to 5 s); a "rotate" event (the server ends a long
// stream) reconnects at once.
'use strict';

const TOKEN_KEY = 'seckill-admin-token';
const POINTS = 60; // a minute of 1 s samples
const SVG = 'http://www.w3.org/2000/svg';

const $ = (id) => document.getElementById(id);
const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  abort: null,
  generation: 0,
  series: new Map(), // "campaign/sku" or "" (totals) -> {accepted, soldOut, refused, p99}
  lastPointAt: 0,    // Unix ms of the newest point in series
  rows: new Map(),   // "campaign/sku" -> its <tr>
};

// ---- formatting ----
const int = (n) => (n == null ? '–' : Math.round(n).toLocaleString('en-US'));
const num = (n, d = 1) => {
  if (n == null) return '–';
  return Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : Number(n).toFixed(d);
};
const ms = (n) => {
  if (n == null) return '–';
  if (n < 1) return Math.round(n * 1000) + ' µs';
  return n < 10 ? n.toFixed(2) + ' ms' : Math.round(n) + ' ms';
};
const age = (s) => {
  if (s == null) return '–';
  if (s < 60) return s.toFixed(0) + ' s';
  if (s < 3600) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(1) + ' h';
};

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// ---- series ----
function emptySeries() { return { accepted: [], soldOut: [], refused: [], p99: [] }; }
function pushPoint(key, row) {
  let s = state.series.get(key);
  if (!s) { s = emptySeries(); state.series.set(key, s); }
  const o = row.outcomes_per_second;
  s.accepted.push(o.accepted);
  s.soldOut.push(o.sold_out_fast + o.sold_out_actor);
  s.refused.push(o.queue_full + o.throttled + o.entry_pass_refused + o.subject_limit_refused + o.server_errors);
  s.p99.push(row.reserve_p99_ms);
  for (const a of Object.values(s)) while (a.length > POINTS) a.shift();
}
function loadHistory(h) {
  state.series.clear();
  state.lastPointAt = h.at && h.at.length ? h.at[h.at.length - 1] : 0;
  const take = (src) => ({
    accepted: src.accepted || [], soldOut: src.sold_out || [], refused: src.refused || [], p99: src.reserve_p99_ms || [],
  });
  state.series.set('', take(h.totals || {}));
  for (const [key, s] of Object.entries(h.skus || {})) state.series.set(key, take(s));
}

// ---- drawing ----
// sparkline draws lines (class -> values) on a shared scale, POINTS wide.
function sparkline(lines) {
  let top = 0;
  for (const vs of Object.values(lines)) for (const v of vs) if (v != null && v > top) top = v;
  top = top || 1;
  const box = svg('svg', { viewBox: `0 0 ${POINTS - 1} 100`, preserveAspectRatio: 'none' });
  for (const [cls, vs] of Object.entries(lines)) {
    const off = POINTS - vs.length;
    const pts = [];
    vs.forEach((v, i) => { if (v != null) pts.push(`${off + i},${(100 - (v / top) * 96 - 2).toFixed(1)}`); });
    if (pts.length === 1) { // one point: a short dash, so that it shows
      const [x, y] = pts[0].split(',');
      pts.push(`${Number(x) - 0.8},${y}`);
    }
    if (pts.length) box.appendChild(svg('polyline', { class: cls, points: pts.join(' ') }));
  }
  const title = svg('title');
  title.textContent = 'max ' + num(top, 1);
  box.appendChild(title);
  return box;
}
function sparkOutcomes(s) { return sparkline({ accepted: s.accepted, soldout: s.soldOut, refused: s.refused }); }
function sparkLatency(s) { return sparkline({ latency: s.p99 }); }

// held is what a row's tokens add up to: sale_limit, or on a cell of a
// celled SKU what the ledger granted it and it did not return; the
// totals, which may mix both, the sum of their parts.
function held(r, totals) {
  if (totals) return r.available + r.reserved + r.confirmed;
  return r.cell ? r.granted - r.returned : r.sale_limit;
}

// tokensBar: available, reserved and confirmed as parts of what is held.
function tokensBar(r, totals) {
  const box = svg('svg', { class: 'bar', viewBox: '0 0 1000 10', preserveAspectRatio: 'none' });
  const total = held(r, totals) || 1;
  let x = 0;
  for (const part of ['confirmed', 'reserved', 'available']) {
    const w = (r[part] / total) * 1000;
    if (w > 0) box.appendChild(svg('rect', { class: part, x: x.toFixed(2), y: 0, width: w.toFixed(2), height: 10 }));
    x += w;
  }
  return box;
}
// gauge: the wait admission judges (inbox age + commit latency) against
// max_queue_wait.
function gauge(r) {
  const f = Math.min(1, r.max_queue_wait_ms ? r.expected_wait_ms / r.max_queue_wait_ms : 0);
  const cls = f >= 1 ? 'fill full' : f > 0.5 ? 'fill warn' : 'fill';
  const box = svg('svg', { class: 'gauge', viewBox: '0 0 100 10', preserveAspectRatio: 'none' });
  box.appendChild(svg('rect', { class: 'track', x: 0, y: 0, width: 100, height: 10 }));
  box.appendChild(svg('rect', { class: cls, x: 0, y: 0, width: (f * 100).toFixed(2), height: 10 }));
  return box;
}
function figures(target, pairs) {
  target.replaceChildren();
  for (const [k, v, cls] of pairs) {
    target.appendChild(el('span', 'k', k));
    target.appendChild(el('span', 'v ' + (cls || ''), v));
  }
}

function drawTotals(doc) {
  const t = doc.totals;
  let skus = `${doc.sku_count} SKUs · sale_limit ${int(t.sale_limit)}`;
  if (t.granted > 0) skus += ` · granted to this cell ${int(t.granted)} · returned ${int(t.returned)}`;
  $('t-skus').textContent = skus;
  const tokens = $('t-tokens');
  tokens.replaceChildren(tokensBar(t, true));
  const nums = el('div', 'nums');
  nums.append(el('span', 'available-count', `available ${int(t.available)}`), el('span', 'reserved-count', `reserved ${int(t.reserved)}`),
    el('span', 'confirmed-count', `confirmed ${int(t.confirmed)}`),
    el('span', t.invariant_ok ? 'dim' : 'invariant-bad', t.invariant_ok ? 'invariant ok' : 'INVARIANT BROKEN'));
  tokens.appendChild(nums);
  const o = t.outcomes_per_second;
  figures($('t-outcomes'), [
    ['accepted', num(o.accepted)], ['sold out (fast · actor)', `${num(o.sold_out_fast)} · ${num(o.sold_out_actor)}`],
    ['queue full · throttled', `${num(o.queue_full)} · ${num(o.throttled)}`], ['already purchased', num(o.already_purchased)],
    ['entry pass · subject limit', `${num(o.entry_pass_refused)} · ${num(o.subject_limit_refused)}`],
    ['5xx', num(o.server_errors), o.server_errors > 0 ? 'bad' : ''], ['all answers', num(o.all)],
  ]);
  figures($('t-latency'), [['p50', ms(t.reserve_p50_ms)], ['p99', ms(t.reserve_p99_ms)]]);
  figures($('t-pressure'), [
    ['expected wait', `${ms(t.expected_wait_ms)} / ${ms(t.max_queue_wait_ms)}`], ['oldest inbox wait', ms(t.oldest_wait_ms)],
    ['commit latency', ms(t.commit_latency_ms)], ['inbox depth', int(t.inbox_depth)],
    ['permits', `${int(t.permits_in_flight)} / ${int(t.permits_bound)}`], ['consumer rate', num(t.consumer_rate_per_second) + ' /s'],
  ]);
  figures($('t-abuse'), [
    ['unpaid', int(t.unpaid)], ['oldest unpaid', age(t.unpaid_oldest_age_seconds)],
    ['expiries / min', num(t.expiries_per_minute)], ['closed', int(t.reservations.closed)],
    ['refunds required', int(t.refunds_required), t.refunds_required > 0 ? 'bad' : ''],
  ]);
  figures($('t-durability'), [
    ['fsync p99', ms(t.fsync_p99_ms)], ['records / fsync', num(t.records_per_fsync)],
    ['durable records', int(t.durable_index)], ['oldest snapshot', oldestSnapshot(t)],
    ['feed lag', t.feed_lag_records == null ? 'n/a' : int(t.feed_lag_records)],
  ]);
  const s = state.series.get('') || emptySeries();
  $('t-spark-outcomes').replaceChildren(sparkOutcomes(s));
  $('t-spark-latency').replaceChildren(sparkLatency(s));
}

// drawReplica shows the replica set this server leads (the sample's
// replica_set, as GET /admin/replica reports it): its role and epoch, the
// sync set (the standbys that may be promoted), and each standby's
// connection and lag. Hidden on a server that is no replica.
function drawReplica(r) {
  $('replica').hidden = !r;
  if (!r) return;
  $('r-set').textContent = r.replica_set;
  const pairs = [
    ['replica', r.replica], ['role', r.role, 'r-role ' + (r.role === 'primary' ? '' : 'bad')], ['epoch', String(r.epoch), 'r-epoch'],
  ];
  if (r.sync) { // the primary's: a replica in another role shows none
    pairs.push(['sync set', r.sync.join(', ') || 'none', 'r-sync ' + (r.sync.length ? '' : 'bad')]);
  }
  for (const b of r.standbys || []) {
    let v = 'disconnected';
    if (b.connected) v = `${b.caught_up ? 'caught up' : 'catching up'} · lag ${int(b.lag_records)} rec · ${ms(b.lag_ms)}`;
    pairs.push([`standby ${b.name}`, v, 'r-standby ' + (b.connected ? '' : 'bad')]);
  }
  figures($('r-figures'), pairs);
}

// oldestSnapshot describes the totals' snapshots: the oldest of the SKUs
// that have one, and how many have none.
function oldestSnapshot(t) {
  const without = t.skus_without_snapshot || 0;
  if (t.snapshot_age_seconds == null) return without ? `none (${int(without)} SKUs)` : '–';
  return `${age(t.snapshot_age_seconds)} ago` + (without ? ` · ${int(without)} without` : '');
}

// row returns the <tr> of a SKU, made once.
function row(key) {
  let tr = state.rows.get(key);
  if (tr) return tr;
  tr = el('tr');
  tr.dataset.sku = key;
  const cells = ['id', 'status-cell', 'tokens-cell', 'queue-cell', 'outcomes-cell', 'latency-cell', 'abuse-cell', 'durability-cell'];
  for (const c of cells) tr.appendChild(el('td', c));
  tr.querySelector('.id').textContent = key;
  tr.querySelector('.id').title = key;
  state.rows.set(key, tr);
  return tr;
}

function fillRow(tr, r, s) {
  const c = (cls) => tr.querySelector('.' + cls);
  const status = c('status-cell');
  status.replaceChildren(el('span', 'badge status ' + r.status, r.status));

  const tokens = c('tokens-cell');
  const nums = el('div', 'small');
  nums.append(el('span', 'available-count', String(r.available)), ' · ', el('span', 'reserved-count', String(r.reserved)), ' · ',
    el('span', 'confirmed-count', String(r.confirmed)), ` / ${held(r)}`);
  if (!r.invariant_ok) nums.append(' ', el('span', 'invariant-bad', 'INVARIANT BROKEN'));
  tokens.replaceChildren(tokensBar(r), nums);
  if (r.cell) {
    tokens.appendChild(el('div', 'small grants',
      `cell ${r.cell} · granted ${int(r.granted)} · returned ${int(r.returned)} · sale_limit ${int(r.sale_limit)}`));
  }

  c('queue-cell').replaceChildren(gauge(r),
    el('div', 'small', `${ms(r.expected_wait_ms)} / ${ms(r.max_queue_wait_ms)} · inbox ${int(r.inbox_depth)} · commit ${ms(r.commit_latency_ms)}`),
    el('div', 'small', `permits ${int(r.permits_in_flight)}/${int(r.permits_bound)} · ${num(r.consumer_rate_per_second, 0)}/s`));

  const o = r.outcomes_per_second;
  const spark = el('div', 'spark');
  spark.appendChild(sparkOutcomes(s));
  c('outcomes-cell').replaceChildren(spark,
    el('div', 'small', `acc ${num(o.accepted)} · sold out ${num(o.sold_out_fast + o.sold_out_actor)} · full ${num(o.queue_full)} · throttled ${num(o.throttled)}`),
    el('div', o.server_errors > 0 ? 'small bad' : 'small', `5xx ${num(o.server_errors)} · all ${num(o.all)}`));

  const lspark = el('div', 'spark');
  lspark.appendChild(sparkLatency(s));
  c('latency-cell').replaceChildren(lspark, el('div', 'small', `p50 ${ms(r.reserve_p50_ms)} · p99 ${ms(r.reserve_p99_ms)}`));

  c('abuse-cell').replaceChildren(
    el('div', '', `unpaid ${int(r.unpaid)} · oldest ${age(r.unpaid_oldest_age_seconds)}`),
    el('div', 'small', `closed ${int(r.reservations.closed)} · expiries ${num(r.expiries_per_minute)}/min`),
    el('div', r.refunds_required > 0 ? 'small bad' : 'small', `refunds required ${int(r.refunds_required)}`));

  c('durability-cell').replaceChildren(
    el('div', 'small', `fsync p99 ${ms(r.fsync_p99_ms)} · ${num(r.records_per_fsync)} rec/fsync`),
    el('div', 'small', `durable ${int(r.durable_index)} / ${int(r.last_index)}`),
    el('div', 'small', r.snapshot_age_seconds == null ? 'no snapshot' : `snapshot ${age(r.snapshot_age_seconds)} ago`));
}

function drawRows(doc) {
  const body = $('rows').tBodies[0];
  const keep = new Set();
  const ordered = [];
  for (const r of doc.skus) {
    const key = `${r.campaign_id}/${r.sku_id}`;
    keep.add(key);
    const tr = row(key);
    fillRow(tr, r, state.series.get(key) || emptySeries());
    ordered.push(tr);
  }
  for (const [key, tr] of state.rows) if (!keep.has(key)) { tr.remove(); state.rows.delete(key); }
  ordered.forEach((tr, i) => { if (body.children[i] !== tr) body.insertBefore(tr, body.children[i] || null); });
  $('empty').hidden = doc.skus.length > 0;
}

function onStats(doc) {
  const at = Date.parse(doc.at);
  if (at > state.lastPointAt) { // the first event repeats the history's last point
    state.lastPointAt = at;
    pushPoint('', doc.totals);
    for (const r of doc.skus) pushPoint(`${r.campaign_id}/${r.sku_id}`, r);
  }
  drawTotals(doc);
  drawReplica(doc.replica_set);
  drawRows(doc);
  $('at').textContent = 'sample ' + new Date(doc.at).toLocaleTimeString();
}

// ---- connection ----
function setConn(cls, text) {
  const c = $('conn');
  c.className = 'conn ' + cls;
  c.textContent = text;
}

function streamURL() {
  const q = new URLSearchParams();
  q.set('top', $('top').value);
  const m = $('filter').value.trim();
  if (m) q.set('match', m);
  return '/admin/stats/stream?' + q.toString();
}

class Unauthorized extends Error {}

// readStream reads one stream until it ends; it resolves true on a
// "rotate" event (reconnect at once) and false when the stream just ended.
async function readStream(signal, onOpen) {
  // A typed token goes as a bearer token, alone; without one the login
  // link's session cookie goes (same origin only).
  const headers = { Accept: 'text/event-stream' };
  if (state.token) headers.Authorization = 'Bearer ' + state.token;
  const resp = await fetch(streamURL(), {
    headers, cache: 'no-store', signal, credentials: state.token ? 'omit' : 'same-origin', referrerPolicy: 'no-referrer',
  });
  if (resp.status === 401) throw new Unauthorized();
  if (!resp.ok || !resp.body) throw new Error('HTTP ' + resp.status);
  onOpen();
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return false;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (event === 'rotate') return true;
      if (!data.length) continue;
      try {
        const v = JSON.parse(data.join('\n'));
        if (event === 'history') loadHistory(v);
        else if (event === 'stats') onStats(v);
      } catch (err) {
        setTimeout(() => { throw err; }); // a defect of the page: surface it, do not retry it away
      }
    }
  }
}

// connect keeps a stream open until the generation changes (a new filter,
// a new token).
async function connect() {
  const gen = ++state.generation;
  if (state.abort) state.abort.abort();
  const ctrl = new AbortController();
  state.abort = ctrl;
  let pause = 500;
  while (gen === state.generation) {
    let rotated = false;
    try {
      rotated = await readStream(ctrl.signal, () => { setConn('live', 'live'); pause = 500; });
    } catch (err) {
      if (gen !== state.generation) return;
      if (err instanceof Unauthorized) {
        askToken(state.token ? 'The server refused this token.'
          : 'Give the admin token, or open a new login link (seckillctl dashboard-link).');
        return;
      }
    }
    if (gen !== state.generation) return;
    if (rotated) continue;
    setConn('reconnecting', 'reconnecting');
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(pause * 2, 5000);
  }
}

function askToken(message) {
  state.generation++;
  if (state.abort) state.abort.abort();
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = '';
  $('board').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  setConn('idle', 'no token');
  $('token').focus();
}

function start() {
  $('login').hidden = true;
  $('board').hidden = false;
  setConn('idle', 'connecting');
  connect();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    state.token = t;
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    start();
  });
  $('forget').addEventListener('click', () => askToken(''));
  let typing = 0;
  $('filter').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(connect, 300);
  });
  $('top').addEventListener('change', connect);
  start(); // with the typed token, or the login link's session cookie
});
