// eventlite's dev store page. It talks to the HTTP API only (docs/http.md)
// and builds every element with the DOM API: data from the store is set as
// text (textContent), never parsed as HTML.
"use strict";

const state = { tenant: "", tenants: [], all: false, readOnly: false, session: false };
let cleanup = []; // what the current view must stop when another opens

// el builds an element; strings and numbers among children become text.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// seg encodes one path segment; "." and ".." are sent encoded.
function seg(s) {
  const e = encodeURIComponent(s);
  return e === "." || e === ".." ? e.replace(/\./g, "%2E") : e;
}

const base = () => "/v1/tenants/" + seg(state.tenant);

// api makes a request and returns {status, headers, text, json}.
async function api(method, path, opts) {
  const o = opts || {};
  const res = await fetch(path, { method, headers: o.headers || {}, body: o.body, credentials: "same-origin" });
  const text = method === "HEAD" ? "" : await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
  // A 401 opens the sign-in form, once: requests still in flight when
  // the user signed out must not replace the form being filled in.
  if (res.status === 401 && !o.noLogin) {
    if (!document.getElementById("login")) showLogin();
    throw new Error("unauthorized");
  }
  return { status: res.status, headers: res.headers, text, json };
}

// get reads JSON, throwing with the problem's detail on an error status.
async function get(path) {
  const r = await api("GET", path);
  if (r.status >= 400) throw new Error((r.json && r.json.detail) || r.status + " " + r.text);
  return r;
}

function problemText(err) { return String(err && err.message ? err.message : err); }

function fmtBytes(n) {
  if (n === undefined || n === null) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function card(label, value, id) {
  return el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "value", id }, value));
}

function needsAll(what) {
  return el("p", { class: "note" }, what + ": this covers every tenant, so it needs a token for tenant * (this token is for " + state.tenant + ").");
}

// NUMERIC are the column headers over right-aligned numbers.
const NUMERIC = new Set(["version", "position", "last position", "checkpoint", "head", "lag", "quarantined", "attempts", "count", "oldest (s)"]);

// when shows a time as local time to the millisecond, UTC on hover.
function when(t) {
  if (!t) return "";
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  const p = (n, w) => String(n).padStart(w || 2, "0");
  const local = d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " + p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds()) + "." + p(d.getMilliseconds(), 3);
  return el("time", { datetime: t, title: t + " (UTC)" }, local);
}

function table(headers, rows, attrs) {
  return el("div", { class: "scroll" }, el("table", attrs || {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: NUMERIC.has(h) ? "num" : null }, h)))),
    el("tbody", {}, rows)));
}

// href is a view's address: every link carries its tenant
// (#/t/{tenant}/{view}/{arg}), so a row of another tenant opens that
// tenant's event or stream and the switcher follows. An address without
// a tenant (#/{view}/{arg}) opens under the picked tenant.
function href(view, arg, tenant, query) {
  let h = "#/t/" + seg(tenant || state.tenant) + "/" + (view === "overview" ? "" : view);
  if (arg !== undefined && arg !== null) h += "/" + seg(arg);
  const q = query ? String(query) : "";
  return q ? h + "?" + q : h;
}

const streamLink = (s, tenant) => el("a", { href: href("stream", s, tenant), class: "mono" }, s);
const eventLink = (id, text, tenant) => el("a", { href: href("event", id, tenant), class: "mono" }, text || id);

function eventRow(e, withStream) {
  return el("tr", { "data-id": e.id },
    el("td", { class: "num" }, withStream ? e.position : e.streamversion),
    withStream ? el("td", {}, streamLink(e.subject)) : null,
    el("td", {}, e.type),
    el("td", { class: "mono small time" }, when(e.time)),
    el("td", {}, eventLink(e.id)),
    el("td", { class: "data", title: "click to expand", onclick: (ev) => {
      const td = ev.currentTarget, open = !td.classList.contains("expanded");
      td.classList.toggle("expanded", open);
      td.textContent = e.data !== undefined ? JSON.stringify(e.data, null, open ? 2 : 0) : (e.data_base64 || "");
    } }, e.data !== undefined ? JSON.stringify(e.data) : (e.data_base64 || "")));
}

function every(ms, fn) {
  fn();
  const t = setInterval(fn, ms);
  cleanup.push(() => clearInterval(t));
}

// confirmButton is an action's button: a click asks first (inline, with
// the question and a button that does it), so nothing runs on one
// stray click. act returns an error message or "".
function confirmButton(label, question, act) {
  const box = el("span", { class: "act" });
  const ask = () => {
    const yes = el("button", { type: "button", class: "small confirm danger" }, "Yes, " + label.toLowerCase());
    const no = el("button", { type: "button", class: "small cancel secondary" }, "Cancel");
    yes.addEventListener("click", async () => {
      yes.disabled = true; no.disabled = true;
      const msg = await act();
      if (msg) box.replaceChildren(el("span", { class: "error small" }, msg), " ", start());
    });
    no.addEventListener("click", () => box.replaceChildren(start()));
    box.replaceChildren(el("span", { class: "small" }, question + " "), yes, " ", no);
  };
  const start = () => el("button", { type: "button", class: "small", "data-action": label.toLowerCase(), onclick: ask }, label);
  box.append(start());
  return box;
}

// action POSTs an operator action with a fresh Idempotency-Key (a
// repeat of the same click is answered once); it returns "" or the
// problem's detail.
async function action(path, body) {
  const key = (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random());
  const headers = { "Idempotency-Key": key };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  try {
    const r = await api("POST", path, { headers, body });
    return r.status < 300 ? "" : ((r.json && r.json.detail) || String(r.status));
  } catch (err) { return problemText(err); }
}

// problemsOf gathers what is wrong, as {id, count, text, link}: a count,
// what it is, and where it is fixed.
async function problemsOf(tenant) {
  const out = [];
  const add = (id, count, text, link) => { if (count > 0) out.push({ id, count, text, link }); };
  if (state.all) {
    const [c, q, d] = await Promise.all([get("/v1/consumers"), get("/v1/quarantine"), get("/v1/doctor")]);
    const ps = c.json.projections, ob = c.json.outbox;
    add("dead-letters", ob.dead_letters, "dead letters (events the relay gave up on; their streams wait)", href("consumers", null, tenant));
    add("stopped", ps.filter((p) => p.status === "stopped").length, "stopped projections", href("consumers", null, tenant));
    add("lagging", ps.filter((p) => p.status !== "stopped" && Number(p.lag) > 0).length, "projections behind the head", href("consumers", null, tenant));
    add("quarantined", q.json.quarantine.length, "quarantined events", href("quarantine", null, tenant));
    add("effects", (await get("/v1/tenants/" + seg(tenant) + "/effects?awaiting=true")).json.effects.length, "effects of " + tenant + " awaiting approval", href("effects", null, tenant));
    add("outbox", ob.oldest_age_seconds > 300 ? ob.pending : 0, "events unpublished for over 5 minutes (stale outbox)", href("consumers", null, tenant));
    const fs = d.json.findings.filter((f) => f.severity === "problem");
    add("doctor", fs.length, "doctor's findings", href("health", null, tenant));
  } else {
    const [dl, q] = await Promise.all([get("/v1/tenants/" + seg(tenant) + "/dead-letters"), get("/v1/tenants/" + seg(tenant) + "/quarantine")]);
    add("dead-letters", dl.json.dead_letters.length, "dead letters of " + tenant, href("consumers", null, tenant));
    add("quarantined", q.json.quarantine.length, "quarantined events of " + tenant, href("quarantine", null, tenant));
    add("effects", (await get("/v1/tenants/" + seg(tenant) + "/effects?awaiting=true")).json.effects.length, "effects of " + tenant + " awaiting approval", href("effects", null, tenant));
  }
  return out;
}

async function viewEffects(main) {
  main.append(el("h1", {}, "Effects awaiting approval"),
    el("p", { class: "muted" }, "Effects of " + state.tenant + " that wait for a person: approve runs the exact arguments shown (their args_hash is sent back); reject refuses them for good."));
  const box = el("div", {}, "Loading…");
  main.append(box);
  const alive = aliveCheck(), tenant = state.tenant, acts = !state.readOnly;
  const by = "web page" + (state.all ? "" : " (token for tenant " + tenant + ")");
  const path = (e, what) => "/v1/tenants/" + seg(tenant) + "/effects/" + seg(e.key) + "/" + what;
  const decide = async (e, what, body) => {
    const m = await action(path(e, what), JSON.stringify(body));
    if (!m) render();
    return m;
  };
  async function render() {
    try {
      const r = await get("/v1/tenants/" + seg(tenant) + "/effects?awaiting=true");
      if (!alive()) return;
      const es = r.json.effects;
      box.replaceChildren(es.length ? table(["key", "kind", "resource", "summary", "arguments", "requested by", "requested at", ...(acts ? [""] : [])],
        es.map((e) => el("tr", { "data-key": e.key }, el("td", { class: "mono" }, e.key), el("td", {}, e.kind), el("td", { class: "mono" }, e.resource),
          el("td", {}, e.summary), el("td", { class: "data" }, JSON.stringify(e.args)), el("td", {}, e.requested_by),
          el("td", { class: "mono small time" }, when(e.requested_at)),
          acts ? el("td", { class: "actions" },
            confirmButton("Approve", "Run " + e.key + " with these arguments?", () => decide(e, "approve", { args_hash: e.args_hash, by })), " ",
            confirmButton("Reject", "Refuse " + e.key + " for good?", () => decide(e, "reject", { by, reason: "rejected in the web page" }))) : null)),
        { id: "effects" }) : el("p", { class: "muted" }, "No effect awaits approval."));
    } catch (err) { box.replaceChildren(el("p", { class: "error" }, problemText(err))); }
  }
  await render();
}

async function viewQuarantine(main) {
  main.append(el("h1", {}, "Quarantined events"),
    el("p", { class: "muted" }, state.all ? "Every open entry of the store's projections and consumers, oldest first. Retry asks the runner to apply the event again on its next pass; skip gives it up (a projection stopped on it moves on)."
      : "The open entries of " + state.tenant + "'s events. Retrying or skipping needs a token for tenant *."));
  const box = el("div", {}, "Loading…");
  main.append(box);
  const alive = aliveCheck();
  const acts = !state.readOnly && state.all;
  async function render() {
    try {
      const r = await get(state.all ? "/v1/quarantine" : "/v1/tenants/" + seg(state.tenant) + "/quarantine");
      if (!alive()) return;
      const qs = r.json.quarantine;
      const act = (q, what) => confirmButton(what === "retry" ? "Retry" : "Skip",
        what === "retry" ? "Ask " + q.name + " to apply " + q.event_id + " again?" : "Give " + q.event_id + " up for " + q.name + "?",
        async () => { const m = await action("/v1/quarantine/" + seg(q.name) + "/" + seg(q.event_id) + "/" + what); if (!m) render(); return m; });
      box.replaceChildren(qs.length ? table(["name", "kind", "tenant", "event", "stream", "version", "reason", "error", "attempts", "retry", ...(acts ? [""] : [])],
        qs.map((q) => el("tr", { "data-id": q.event_id }, el("td", { class: "mono" }, q.name), el("td", {}, q.kind), el("td", {}, q.tenant),
          el("td", {}, eventLink(q.event_id, null, q.tenant)), el("td", {}, streamLink(q.stream, q.tenant)), el("td", { class: "num" }, q.version),
          el("td", {}, q.reason), el("td", { class: "small" }, q.error), el("td", { class: "num" }, q.attempts),
          el("td", { class: "small" }, q.retry_requested_at ? "requested" : ""),
          acts ? el("td", { class: "actions" }, act(q, "retry"), " ", act(q, "skip")) : null)), { id: "quarantine" })
        : el("p", { class: "muted" }, "No quarantined events."));
    } catch (err) { box.replaceChildren(el("p", { class: "error" }, problemText(err))); }
  }
  await render();
}

// ---- views ----

async function viewOverview(main) {
  main.append(el("h1", {}, "Overview of ", el("span", { class: "mono" }, state.tenant)));
  // What is wrong comes first, each with its count and where it is fixed.
  const problems = el("div", { id: "problems" }, el("p", { class: "muted" }, "Looking for problems…"));
  main.append(el("h2", {}, "What needs attention"), problems);
  const cards = el("div", { class: "cards" },
    card("events", "…", "ov-events"), card("streams", "…", "ov-streams"),
    card("last position", "…", "ov-last"), card("appends/s (last minute)", "…", "ov-rate"));
  const store = el("div", { class: "cards" });
  const latest = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  const types = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  main.append(el("h2", {}, "Counts of ", el("span", { class: "mono" }, state.tenant)), cards,
    el("h2", {}, "Events by type of ", el("span", { class: "mono" }, state.tenant)), types, el("h2", {}, "Store (every tenant)"), store,
    el("h2", {}, "Latest events of ", el("span", { class: "mono" }, state.tenant)), latest);
  // The counts by type read every event of the tenant once: when the view
  // opens, not at each poll. Each type links to the tail filtered by it.
  get("/v1/tenants/" + seg(state.tenant) + "/types").then((r) => {
    types.replaceChildren(r.json.types.length ? table(["type", "events"], r.json.types.map((t) => el("tr", {},
      el("td", { class: "mono" }, el("a", { href: href("tail", null, null, new URLSearchParams({ type: t.type })) }, t.type)),
      el("td", { class: "num" }, t.events))), { id: "type-counts" })
      : el("p", { class: "muted" }, "No events yet."));
  }, (err) => types.replaceChildren(el("p", { class: "error" }, problemText(err))));
  // The latest events, read once (newest first) when the view opens.
  get("/v1/tenants/" + seg(state.tenant) + "/events?direction=backward&limit=10").then((r) => {
    latest.replaceChildren(r.json.length ? table(["position", "stream", "type", "time", "id", "data"], r.json.map((e) => eventRow(e, true)), { id: "latest-events" })
      : el("p", { class: "muted" }, "No events yet."));
  }, (err) => latest.replaceChildren(el("p", { class: "error" }, problemText(err))));
  if (state.all) {
    store.append(card("head position", "…", "ov-head"), card("events", "…", "ov-all-events"),
      card("file size", "…", "ov-file"), card("WAL size", "…", "ov-wal"));
  } else {
    store.append(needsAll("The file and WAL sizes and the head position"));
  }
  // A poll answered after the view or the tenant changed is dropped: its
  // nodes are no longer in the page, and alive() says so before writing.
  const tenant = state.tenant, alive = aliveCheck();
  const set = (id, v) => { const n = main.querySelector("#" + id); if (n && alive()) n.textContent = v; };
  // The problems run doctor and list every queue: every 30 s, not 5.
  every(30000, async () => {
    try {
      const ps = await problemsOf(tenant);
      if (!alive()) return;
      problems.replaceChildren(ps.length ? el("ul", { class: "problems" }, ps.map((p) => el("li", { id: "problem-" + p.id, class: "problem" },
        el("span", { class: "count" }, p.count), " ", el("a", { href: p.link }, p.text))))
        : el("p", { class: "ok", id: "no-problems" }, "Nothing wrong found."));
    } catch (err) { if (alive()) problems.replaceChildren(el("p", { class: "error" }, problemText(err))); }
  });
  every(5000, async () => {
    try {
      const t = (await get("/v1/tenants/" + seg(tenant) + "/stats")).json;
      if (!alive()) return;
      set("ov-events", t.events); set("ov-streams", t.streams); set("ov-last", t.last_position);
      set("ov-rate", t.appends_per_second.toFixed(2));
      if (state.all) {
        const s = (await get("/v1/stats")).json;
        set("ov-head", s.last_position); set("ov-all-events", s.events);
        set("ov-file", fmtBytes(s.file_bytes)); set("ov-wal", fmtBytes(s.wal_bytes));
      }
    } catch (err) { set("ov-events", problemText(err)); }
  });
}

async function viewStreams(main, q) {
  const prefix = q.get("prefix") || "", after = q.get("after") || "";
  const input = el("input", { name: "prefix", value: prefix, placeholder: "stream id prefix", id: "prefix" });
  main.append(el("h1", {}, "Streams"),
    el("form", { class: "row", id: "streams-form", onsubmit: (ev) => {
      ev.preventDefault();
      location.hash = href("streams", null, null, new URLSearchParams({ prefix: input.value }));
    } }, input, el("button", { type: "submit" }, "Filter")));
  const list = el("div", {}, "Loading…");
  const recent = el("div", {}, "Loading…");
  main.append(list, el("h2", {}, "Recently updated streams"), recent);
  const alive = aliveCheck();
  const p = new URLSearchParams({ prefix, limit: "50" });
  if (after) p.set("after", after);
  try {
    const r = await get(base() + "/streams?" + p);
    const rows = r.json.streams.map((s) => el("tr", {},
      el("td", {}, streamLink(s.stream)), el("td", { class: "num" }, s.version),
      el("td", { class: "num" }, s.last_position), el("td", { class: "mono small time" }, when(s.updated))));
    list.replaceChildren(rows.length ? table(["stream", "version", "last position", "updated"], rows, { id: "streams-table" })
      : el("p", { class: "muted" }, "No streams" + (prefix ? " starting with " + prefix : "") + "."));
    const link = r.headers.get("Link") || "";
    const m = /<([^>]*)>;\s*rel="next"/.exec(link);
    if (m) {
      const next = new URL(m[1], location.origin).searchParams.get("after");
      list.append(el("p", {}, el("a", { id: "next-page", href: href("streams", null, null, new URLSearchParams({ prefix, after: next })) }, "Next page (after " + next + ") →")));
    }
    if (after) list.append(el("p", {}, el("a", { href: href("streams", null, null, new URLSearchParams({ prefix })) }, "← First page")));
  } catch (err) { list.replaceChildren(el("p", { class: "error" }, problemText(err))); }
  try {
    // The last 15 distinct streams: newest-first pages of the log until
    // 15 are found, at most 5 pages of 1,000 events (no write per append
    // keeps this list).
    const seen = new Map();
    let from = "";
    for (let page = 0; page < 5 && seen.size < 15; page++) {
      const r = await get(base() + "/events?direction=backward&limit=1000" + (from ? "&from=" + from : ""));
      for (const e of r.json) if (!seen.has(e.subject)) seen.set(e.subject, e);
      if (r.json.length < 1000) break;
      from = String(Number(r.json[r.json.length - 1].position) - 1);
      if (from === "0") break;
    }
    if (!alive()) return;
    const rows = [...seen.values()].slice(0, 15).map((e) => el("tr", {},
      el("td", {}, streamLink(e.subject)), el("td", { class: "num" }, e.streamversion), el("td", {}, e.type),
      el("td", { class: "mono small time" }, when(e.time))));
    recent.replaceChildren(rows.length ? table(["stream", "version", "last type", "time"], rows, { id: "recent-table" })
      : el("p", { class: "muted" }, "No events yet."));
  } catch (err) { recent.replaceChildren(el("p", { class: "error" }, problemText(err))); }
}

// live opens an EventSource and hands each event to onEvent; it returns
// a function that closes it. status shows its state.
function live(url, status, onEvent) {
  const es = new EventSource(url);
  es.onopen = () => { status.textContent = "live"; status.className = "badge live"; };
  es.onerror = () => {
    status.textContent = es.readyState === EventSource.CLOSED ? "closed" : "reconnecting…";
    status.className = "badge warn";
  };
  es.onmessage = (m) => { try { onEvent(JSON.parse(m.data)); } catch (e) { /* not an event */ } };
  es.addEventListener("caught-up", () => { status.textContent = "live"; status.className = "badge live"; });
  const close = () => es.close();
  cleanup.push(close);
  return close;
}

// PAGE is how many events a page of a stream shows.
const PAGE = 50;

// viewStream shows one page of a stream, oldest first (the default) or
// newest first, with paging both ways, a jump to a version and a type
// filter over the page. Oldest first, the last page follows the stream
// live (new rows are marked); newest first, new events are counted in a
// marker that reloads the newest page.
async function viewStream(main, stream, q) {
  const newest = q.get("order") === "newest";
  const fromQ = Number(q.get("from")) || 0;
  const type = q.get("type") || "";
  const at = (params) => href("stream", stream, null, new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== undefined && v !== null)));
  main.append(el("h1", {}, "Stream ", el("span", { class: "mono" }, stream)));
  const info = el("p", { class: "muted", id: "stream-info" });
  const status = el("span", { class: "badge", id: "stream-status" }, newest ? "" : "connecting…");
  const pause = el("button", { type: "button", id: "pause" }, "Pause");
  const marker = el("a", { id: "new-marker", class: "badge warn", hidden: true, href: at({ order: newest ? "newest" : "", type }) });
  const jumpIn = el("input", { id: "jump", type: "number", min: 1, placeholder: "version", value: fromQ || "" });
  const typeIn = el("input", { id: "stream-type", placeholder: "type (exact)", value: type });
  const tbody = el("tbody");
  const pager = el("div", { class: "row pager" });
  main.append(info,
    el("div", { class: "row" },
      el("a", { id: "order-oldest", class: newest ? "" : "active", href: at({ type }) }, "Oldest first"),
      el("a", { id: "order-newest", class: newest ? "active" : "", href: at({ order: "newest", type }) }, "Newest first"),
      el("form", { id: "jump-form", class: "row", onsubmit: (ev) => {
        ev.preventDefault();
        location.hash = at({ order: newest ? "newest" : "", from: jumpIn.value, type: typeIn.value });
      } }, jumpIn, typeIn, el("button", { type: "submit" }, "Go")),
      newest ? null : status, newest ? null : pause, marker,
      el("a", { href: href("append", null, null, new URLSearchParams({ stream })) }, "Append to this stream")),
    el("p", { class: "direction" }, newest ? "Newest first ↑ (backward, by version)" : "Oldest first ↓ (forward, by version)"),
    el("div", { class: "scroll" }, el("table", { id: "stream-events" }, el("thead", {}, el("tr", {},
      ["version", "type", "time", "id", "data"].map((h) => el("th", { class: NUMERIC.has(h) ? "num" : null }, h)))), tbody)),
    pager);
  const alive = aliveCheck();
  const show = (e, where) => {
    const row = eventRow(e, false);
    if (type && e.type !== type) row.hidden = true;
    if (where === "new") row.classList.add("new");
    if (where === "top") tbody.prepend(row); else tbody.append(row);
  };
  // events counts what a read of the stream returns, as the API's events
  // field does: after a truncate, fewer than its version.
  let version = 0, events = 0, updated = "";
  try {
    const r = await api("GET", base() + "/streams/" + seg(stream));
    if (!alive()) return;
    if (r.status === 200) { version = r.json.version; events = r.json.events; updated = r.json.updated; } else if (r.status !== 404) throw new Error((r.json && r.json.detail) || r.status);
  } catch (err) { info.textContent = problemText(err); return; }
  if (version === 0) info.textContent = "The stream does not exist yet: its first event will appear here.";
  let first = 0, last = 0, count = 0;
  if (version > 0) {
    const p = new URLSearchParams({ limit: String(PAGE) });
    if (newest) { p.set("direction", "backward"); if (fromQ) p.set("from", String(fromQ)); } else p.set("from", String(fromQ || 1));
    let evs;
    try { evs = (await get(base() + "/streams/" + seg(stream) + "/events?" + p)).json; } catch (err) {
      if (alive()) info.textContent = problemText(err);
      return;
    }
    if (!alive()) return;
    for (const e of evs) show(e);
    if (evs.length) {
      first = evs[0].streamversion; last = evs[evs.length - 1].streamversion;
      const lo = Math.min(first, last), hi = Math.max(first, last);
      info.replaceChildren(events + " events (version " + version + "), updated ", when(updated), " · showing versions " + lo + "–" + hi);
      const older = lo > 1, newer = hi < version;
      const prevFrom = newest ? hi + PAGE : Math.max(1, lo - PAGE), nextFrom = newest ? lo - 1 : hi + 1;
      pager.append(
        newest ? (newer ? el("a", { id: "page-newer", href: at({ order: "newest", from: Math.min(version, prevFrom), type }) }, "← Newer") : null)
          : (older ? el("a", { id: "page-older", href: at({ from: prevFrom, type }) }, "← Older") : null),
        newest ? (older ? el("a", { id: "page-older", href: at({ order: "newest", from: nextFrom, type }) }, "Older →") : null)
          : (newer ? el("a", { id: "page-newer", href: at({ from: nextFrom, type }) }, "Newer →") : null));
    } else info.textContent = events + " events (version " + version + "); none at version " + (fromQ || 1) + " or later.";
    count = evs.length;
  }
  if (type) info.append(" · only type " + type);
  // Live: oldest first on the last page, the stream grows here (rows
  // marked new); newest first, new events are only counted.
  const followsLive = newest ? !fromQ || fromQ >= version : last >= version;
  if (!followsLive) return;
  let seen = Math.max(version, last), fresh = 0, close = null;
  const open = () => {
    close = live(base() + "/streams/" + seg(stream) + "/events?from=" + (seen + 1), newest ? el("span") : status, (e) => {
      if (!alive()) return;
      seen = e.streamversion;
      if (seen > version) { events += seen - version; version = seen; }
      if (e.type === "eventlite.stream.truncated" && e.data && e.data.before > 0) events = version - e.data.before + 1;
      fresh++;
      marker.hidden = false;
      if (newest) { marker.textContent = fresh + " new event" + (fresh > 1 ? "s" : "") + ": show the newest"; return; }
      marker.textContent = fresh + " new since this page opened";
      marker.removeAttribute("href");
      count++;
      show(e, "new");
      info.textContent = events + " events (version " + version + "), the newest appended ";
      info.append(when(e.time));
    });
  };
  pause.addEventListener("click", () => {
    if (close) {
      close(); close = null;
      pause.textContent = "Resume"; status.textContent = "paused"; status.className = "badge";
    } else { pause.textContent = "Pause"; open(); }
  });
  open();
}

async function viewEvent(main, id) {
  main.append(el("h1", {}, "Event ", el("span", { class: "mono" }, id)));
  let e;
  try { e = (await get(base() + "/events/" + seg(id))).json; } catch (err) {
    main.append(el("p", { class: "error" }, problemText(err))); return;
  }
  const links = el("ul", { class: "links" },
    el("li", {}, "Stream: ", streamLink(e.subject), " version " + e.streamversion),
    e.correlationid ? el("li", {}, "Correlation: ", el("a", { id: "correlation-link", href: href("correlation", e.correlationid), class: "mono" }, e.correlationid), " (every event sharing it)") : null,
    e.causationid ? el("li", {}, "Cause: ", el("a", { id: "cause-link", href: href("event", e.causationid), class: "mono" }, e.causationid)) : null);
  const rows = Object.keys(e).filter((k) => k !== "data" && k !== "data_base64").sort()
    .map((k) => el("tr", {}, el("th", { class: "mono" }, k), el("td", { class: "mono" }, typeof e[k] === "string" ? e[k] : JSON.stringify(e[k]))));
  let data = "(no data)";
  if (e.data !== undefined) data = JSON.stringify(e.data, null, 2);
  else if (e.data_base64 !== undefined) data = e.data_base64 + "\n(base64)";
  main.append(links, el("h2", {}, "Attributes and extensions"), table(["attribute", "value"], rows, { id: "event-attrs" }),
    el("h2", {}, "Data"), el("pre", { id: "event-data" }, data));
}

async function viewCorrelation(main, cid) {
  main.append(el("h1", {}, "Correlation ", el("span", { class: "mono" }, cid)),
    el("p", { class: "muted" }, "Every event of the tenant with this correlationid, by position."));
  try {
    const r = await get(base() + "/events?limit=500&correlationid=" + encodeURIComponent(cid));
    main.append(table(["position", "stream", "type", "time", "id", "data"], r.json.map((e) => eventRow(e, true)), { id: "correlation-table" }));
  } catch (err) { main.append(el("p", { class: "error" }, problemText(err))); }
}

async function viewTail(main, q) {
  const type = q.get("type") || "", prefix = q.get("stream_prefix") || "";
  const typeIn = el("input", { name: "type", value: type, placeholder: "type (exact)", id: "tail-type" });
  const prefixIn = el("input", { name: "stream_prefix", value: prefix, placeholder: "stream id prefix", id: "tail-stream" });
  const status = el("span", { class: "badge", id: "tail-status" }, "connecting…");
  const tbody = el("tbody");
  main.append(el("h1", {}, "Live tail"),
    el("form", { class: "row", onsubmit: (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (typeIn.value) p.set("type", typeIn.value);
      if (prefixIn.value) p.set("stream_prefix", prefixIn.value);
      location.hash = href("tail", null, null, p);
    } }, typeIn, prefixIn, el("button", { type: "submit" }, "Filter"), status),
    el("p", { class: "direction" }, "Newest first ↑ (the tenant's log; reconnects resume after the last event seen)"),
    el("div", { class: "scroll" }, el("table", { id: "tail-events" }, el("thead", {}, el("tr", {},
      ["position", "stream", "type", "time", "id", "data"].map((h) => el("th", {}, h)))), tbody)));
  const p = new URLSearchParams();
  if (type) p.set("type", type);
  if (prefix) p.set("stream_prefix", prefix);
  let from = 1;
  try {
    const r = await get(base() + "/events?direction=backward&limit=20&" + p);
    for (const e of r.json) tbody.append(eventRow(e, true));
    from = r.json.length ? Number(r.json[0].position) + 1 : Number((await get(base() + "/stats")).json.last_position) + 1;
  } catch (err) { main.append(el("p", { class: "error" }, problemText(err))); return; }
  p.set("from", String(from));
  live(base() + "/events?" + p, status, (e) => {
    tbody.prepend(eventRow(e, true));
    while (tbody.children.length > 500) tbody.lastChild.remove();
  });
}

function shellQuote(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }

function viewAppend(main, q) {
  const f = {
    stream: el("input", { id: "ap-stream", required: true, value: q.get("stream") || "" }),
    type: el("input", { id: "ap-type", required: true, placeholder: "com.example.thing.happened" }),
    data: el("textarea", { id: "ap-data", rows: 6, placeholder: '{"key": "value"}' }),
    expected: el("select", { id: "ap-expected" },
      el("option", { value: "any" }, "any version"), el("option", { value: "no-stream" }, "no stream yet (If-None-Match: *)"),
      el("option", { value: "exists" }, "stream exists (If-Match: *)"), el("option", { value: "version" }, "at version… (If-Match)")),
    version: el("input", { id: "ap-version", type: "number", min: 1, placeholder: "version" }),
    key: el("input", { id: "ap-key", placeholder: "optional" }),
  };
  f.data.value = "{}";
  const versionField = el("label", { class: "field", id: "ap-version-field", hidden: true }, el("span", {}, "version"), f.version);
  f.expected.addEventListener("change", () => { versionField.hidden = f.expected.value !== "version"; });
  const out = el("div", { id: "ap-out" });
  const field = (label, input) => el("label", { class: "field" }, el("span", {}, label), input);
  main.append(el("h1", {}, "Append an event"),
    ...(state.readOnly ? [el("p", { class: "note" }, "This token is read-only: appends are refused.")] : []),
    el("form", { id: "append-form", class: "form", onsubmit: async (ev) => {
      ev.preventDefault();
      const path = base() + "/streams/" + seg(f.stream.value) + "/events";
      const headers = { "Content-Type": "application/json", "ce-type": f.type.value };
      if (f.expected.value === "no-stream") headers["If-None-Match"] = "*";
      if (f.expected.value === "exists") headers["If-Match"] = "*";
      if (f.expected.value === "version") headers["If-Match"] = '"' + f.version.value + '"';
      if (f.key.value) headers["Idempotency-Key"] = f.key.value;
      const body = f.data.value;
      const reqText = "POST " + path + "\n" + Object.entries(headers).map(([k, v]) => k + ": " + v).join("\n") + "\n\n" + body;
      const curl = "curl -i -X POST " + shellQuote(location.origin + path) + " \\\n" +
        (state.session ? "  -H \"Authorization: Bearer $EVENTLITE_TOKEN\" \\\n" : "") +
        Object.entries(headers).map(([k, v]) => "  -H " + shellQuote(k + ": " + v) + " \\\n").join("") +
        "  --data-binary " + shellQuote(body);
      let resText;
      try {
        const r = await api("POST", path, { headers, body });
        const hs = [];
        r.headers.forEach((v, k) => hs.push(k + ": " + v));
        resText = r.status + "\n" + hs.join("\n") + "\n\n" + r.text;
        out.dataset.status = String(r.status);
      } catch (err) { resText = problemText(err); out.dataset.status = "error"; }
      out.replaceChildren(
        el("h2", {}, "Request"), el("pre", { id: "ap-request" }, reqText),
        el("h2", {}, "Response"), el("pre", { id: "ap-response" }, resText),
        el("h2", {}, "The same with curl"), el("pre", { id: "ap-curl" }, curl),
        el("button", { type: "button", onclick: () => navigator.clipboard && navigator.clipboard.writeText(curl) }, "Copy curl command"));
    } },
    field("stream", f.stream), field("type (ce-type)", f.type), field("data (JSON)", f.data),
    el("div", { class: "row" }, field("expected version", f.expected), versionField),
    field("Idempotency-Key", f.key),
    el("p", { class: "muted" }, "The server fills id (a ULID), time, specversion and source."),
    el("button", { type: "submit", id: "ap-submit" }, "Append")),
    out);
}

async function viewConsumers(main) {
  main.append(el("h1", {}, "Consumers"));
  const box = el("div", {}, "Loading…");
  main.append(box);
  const dlPath = (d, what) => "/v1/tenants/" + seg(d.tenant) + "/dead-letters/" + seg(d.event_id) + "/" + what;
  const retry = (d) => confirmButton("Retry", "Publish " + d.event_id + " again?",
    async () => { const m = await action(dlPath(d, "retry")); if (!m) render(); return m; });
  const discard = (d) => confirmButton("Discard", "Never publish " + d.event_id + "?",
    async () => { const m = await action(dlPath(d, "discard")); if (!m) render(); return m; });
  const acts = !state.readOnly, alive = aliveCheck();
  const dlTable = (dls) => dls.length ? table(["tenant", "event", "stream", "version", "type", "attempts", "error", "dead at", ...(acts ? [""] : [])],
    dls.map((d) => el("tr", {}, el("td", {}, d.tenant), el("td", {}, eventLink(d.event_id, null, d.tenant)),
      el("td", {}, streamLink(d.stream, d.tenant)), el("td", { class: "num" }, d.version), el("td", {}, d.type), el("td", { class: "num" }, d.attempts),
      el("td", { class: "small" }, d.error), el("td", { class: "mono small time" }, when(d.dead_at)),
      acts ? el("td", { class: "actions" }, retry(d), " ", discard(d)) : null)), { id: "dead-letters" })
    : el("p", { class: "muted" }, "No dead letters.");
  async function render() {
    try {
      const parts = [];
      if (state.all) {
        const c = (await get("/v1/consumers")).json;
        if (!alive()) return;
        // A stopped projection shows the event it stopped on, and where.
        const held = (p) => p.quarantined_event ? el("span", { class: "id" }, eventLink(p.quarantined_event.event_id, null, p.quarantined_event.tenant),
          " (" + p.quarantined_event.tenant + ", position " + p.quarantined_event.position + ")") : "";
        parts.push(el("h2", {}, "Projections"), c.projections.length ? table(["name", "checkpoint", "head", "lag", "status", "quarantined", "stopped on", "detail"],
          c.projections.map((p) => el("tr", { class: p.status === "stopped" ? "bad" : "" }, el("td", { class: "mono" }, p.name), el("td", { class: "num" }, p.checkpoint),
            el("td", { class: "num" }, p.head), el("td", { class: "num" }, p.lag), el("td", {}, p.status),
            el("td", { class: "num" }, p.quarantined > 0 ? el("a", { href: href("quarantine") }, p.quarantined) : p.quarantined),
            el("td", { class: "small held" }, held(p)),
            el("td", { class: "small detail" }, p.detail || ""))), { id: "projections" }) : el("p", { class: "muted" }, "No projections."),
        el("h2", {}, "Relay (outbox)"), el("div", { class: "cards" }, card("backlog", c.outbox.pending), card("oldest (s)", c.outbox.oldest_age_seconds.toFixed(1)),
          card("dead letters", c.outbox.dead_letters), card("parked streams", c.outbox.parked_streams)),
        el("h2", {}, "Dead letters (every tenant)"), dlTable(c.dead_letters));
      } else {
        const d = (await get(base() + "/dead-letters")).json;
        parts.push(needsAll("Projection lag and the relay's backlog"), el("h2", {}, "Dead letters of " + state.tenant), dlTable(d.dead_letters));
      }
      box.replaceChildren(...parts);
    } catch (err) { box.replaceChildren(el("p", { class: "error" }, problemText(err))); }
  }
  await render();
}

// fixLink is the view where a doctor's finding of this kind is fixed.
function fixLink(kind) {
  const to = kind === "quarantined" ? "quarantine" : kind.startsWith("effects_") ? "effects"
    : /^(outbox_|dead_letters|parked_streams|projections_|leases_)/.test(kind) ? "consumers" : "";
  return to ? el("a", { href: href(to), class: "fix" }, to) : "";
}

// findingID shows one id of a finding, linked to its event or stream
// when it names one: "tenant:event-id" (dead letters, the outbox) or
// "tenant/stream" (parked streams, version gaps).
function findingID(kind, id) {
  let m;
  if ((kind === "dead_letters" || kind.startsWith("outbox_")) && (m = /^([^:]+):(.+)$/.exec(id))) {
    return el("span", { class: "id" }, eventLink(m[2], id, m[1]));
  }
  if ((kind === "parked_streams" || kind === "stream_version_gaps") && (m = /^([^/]+)\/(.+)$/.exec(id))) {
    return el("span", { class: "id" }, el("a", { href: href("stream", m[2], m[1]), class: "mono" }, id));
  }
  return el("span", { class: "id" }, id);
}

async function viewHealth(main) {
  main.append(el("h1", {}, "Health"),
    el("ul", { class: "links" },
      el("li", {}, el("a", { href: "/metrics" }, "/metrics"), " (Prometheus)"),
      el("li", {}, el("a", { href: "/openapi.json" }, "/openapi.json"), " (OpenAPI 3.1)"),
      el("li", {}, el("a", { href: "https://github.com/eventlite/eventlite/blob/main/docs/http.md", rel: "noreferrer" }, "HTTP reference"))));
  if (!state.all) { main.append(needsAll("Doctor")); return; }
  try {
    const d = (await get("/v1/doctor")).json;
    main.append(el("p", { id: "doctor-verdict", class: d.healthy ? "ok" : "error" }, d.healthy ? "Healthy" : "Problems found"),
      d.findings.length ? table(["kind", "severity", "count", "oldest (s)", "where to fix it", "ids"], d.findings.map((x) => el("tr", { "data-kind": x.kind },
        el("td", {}, x.kind), el("td", {}, x.severity), el("td", { class: "num" }, x.count), el("td", { class: "num" }, x.oldest_age_seconds.toFixed(1)),
        el("td", {}, fixLink(x.kind)),
        el("td", { class: "mono small ids" }, (x.ids || []).map((id) => findingID(x.kind, id))))), { id: "findings" }) : el("p", { class: "muted" }, "No findings."));
  } catch (err) { main.append(el("p", { class: "error" }, problemText(err))); }
}

// ---- login, tenants, routing ----

function showLogin(message) {
  for (const f of cleanup) f();
  cleanup = [];
  viewSeq++;
  document.getElementById("nav").hidden = true; // nothing to open before signing in
  const input = el("input", { type: "password", id: "token", autocomplete: "off", required: true });
  const msg = el("p", { class: "error", id: "login-error" }, message || "");
  document.getElementById("main").replaceChildren(el("h1", {}, "Sign in"),
    el("p", {}, "This server needs a token. It is exchanged for a session cookie and never put in a URL."),
    el("form", { id: "login", class: "row", onsubmit: async (ev) => {
      ev.preventDefault();
      const r = await api("POST", "/ui/session", { headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: input.value }), noLogin: true });
      if (r.status !== 200) { msg.textContent = (r.json && r.json.detail) || "refused"; return; }
      state.session = true;
      boot();
    } }, el("label", {}, "token ", input), el("button", { type: "submit" }, "Sign in")), msg);
}

async function boot() {
  const r = await api("GET", "/v1/tenants", { noLogin: true });
  if (r.status === 401) { showLogin(); return; }
  if (r.status !== 200) { document.getElementById("main").replaceChildren(el("p", { class: "error" }, r.text)); return; }
  document.getElementById("nav").hidden = false;
  state.all = r.json.all; state.readOnly = r.json.read_only; state.tenants = r.json.tenants;
  state.session = r.json.session;
  const saved = localStorage.getItem("eventlite.tenant");
  state.tenant = (saved && (state.all || state.tenants.includes(saved))) ? saved : (state.tenants[0] || "default");
  const sel = document.getElementById("tenant");
  const names = [...new Set([state.tenant, ...state.tenants])].sort();
  sel.replaceChildren(...names.map((t) => el("option", { value: t, selected: t === state.tenant }, t)));
  document.getElementById("tenant-box").hidden = !(state.all || state.tenants.length > 1);
  document.getElementById("who").textContent = state.all ? "" : "tenant " + state.tenant + (state.readOnly ? " (read-only)" : "");
  document.getElementById("logout").hidden = !state.session;
  route();
}

// parseHash splits an address into its tenant ("" when it names none),
// view, argument and query.
function parseHash(hash) {
  const [path, query] = hash.replace(/^#\/?/, "").split("?");
  let parts = path.split("/"), tenant = "";
  if (parts[0] === "t" && parts.length >= 2) {
    tenant = decodeURIComponent(parts[1]);
    parts = parts.slice(2);
  }
  const arg = parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : null;
  return { tenant, name: parts[0] || "overview", arg, q: new URLSearchParams(query || "") };
}

// pickTenant makes t the picked tenant: the switcher shows it (a tenant
// it did not list is added) and the next visit starts with it.
function pickTenant(t) {
  state.tenant = t;
  localStorage.setItem("eventlite.tenant", t);
  const sel = document.getElementById("tenant");
  if (![...sel.options].some((o) => o.value === t)) sel.append(el("option", { value: t }, t));
  sel.value = t;
  document.getElementById("who").textContent = state.all ? "" : "tenant " + state.tenant + (state.readOnly ? " (read-only)" : "");
}

let viewSeq = 0; // which view is on screen: a view's async work checks it
function aliveCheck() { const mine = viewSeq; return () => mine === viewSeq; }

function route() {
  for (const f of cleanup) f();
  cleanup = [];
  viewSeq++;
  const r = parseHash(location.hash);
  if (r.tenant && r.tenant !== state.tenant) pickTenant(r.tenant);
  // An old address (no tenant) opens under the picked tenant; the address
  // bar then says which.
  if (!r.tenant) history.replaceState(null, "", href(r.name, r.arg, null, r.q.toString()));
  // Each view builds into its own element: what an abandoned view's late
  // answers write lands outside the page.
  const main = el("div", { class: "view" });
  document.getElementById("main").replaceChildren(main);
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.view === r.name);
    a.setAttribute("href", href(a.dataset.view));
  }
  const { name, q } = r, arg = r.arg || "";
  const views = {
    overview: () => viewOverview(main), streams: () => viewStreams(main, q), stream: () => viewStream(main, arg, q),
    event: () => viewEvent(main, arg), correlation: () => viewCorrelation(main, arg), tail: () => viewTail(main, q),
    append: () => viewAppend(main, q), consumers: () => viewConsumers(main), health: () => viewHealth(main),
    quarantine: () => viewQuarantine(main), effects: () => viewEffects(main),
  };
  (views[name] || views.overview)();
}

window.addEventListener("hashchange", () => { if (state.tenant) route(); });
document.addEventListener("DOMContentLoaded", () => {
  // Switching tenant keeps a list view (overview, streams, tail, ...);
  // a stream, event or correlation is the tenant's left, so the switch
  // opens the new tenant's overview instead.
  document.getElementById("tenant").addEventListener("change", (ev) => {
    const r = parseHash(location.hash);
    const keep = !["stream", "event", "correlation"].includes(r.name);
    location.hash = keep ? href(r.name, null, ev.target.value, r.q.toString()) : href("overview", null, ev.target.value);
  });
  document.getElementById("logout").addEventListener("click", async () => {
    await api("DELETE", "/ui/session", { noLogin: true });
    state.session = false; state.tenant = "";
    showLogin("Signed out.");
  });
  boot();
});
