// gw status page: renders the state that /ui/events pushes every second.
// Everything from the server goes through textContent, never innerHTML.
"use strict";

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

function fill(tbody, rows, cols, empty) {
  tbody.replaceChildren();
  if (!rows.length) {
    tbody.append(el("tr", {}, el("td", { class: "empty", colspan: String(cols) }, empty)));
    return;
  }
  for (const r of rows) tbody.append(r);
}

const fmt = (n, d = 0) => (n === undefined || n === null) ? "–" : Number(n).toFixed(d);
const ago = (iso) => {
  if (!iso) return "never";
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  return s < 60 ? s + " s ago" : s < 3600 ? Math.round(s / 60) + " min ago" : new Date(iso).toLocaleString();
};

function spark(svg, series, classes) {
  svg.replaceChildren();
  let max = 0;
  for (const s of series) for (const v of s) max = Math.max(max, v);
  if (max === 0) max = 1;
  series.forEach((s, i) => {
    const n = s.length;
    const pts = s.map((v, j) => `${(j * 240 / Math.max(1, n - 1)).toFixed(1)},${(38 - v * 36 / max).toFixed(1)}`).join(" ");
    const p = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    p.setAttribute("points", pts);
    if (classes && classes[i]) p.setAttribute("class", classes[i]);
    svg.append(p);
  });
}

function renderTraffic(t) {
  // requests/s averaged over the last 5 complete seconds: a single second jitters.
  const avg = (a) => { const k = Math.min(5, a.length); let s = 0; for (let i = a.length - k; i < a.length; i++) s += a[i]; return k ? s / k : 0; };
  document.getElementById("rps").textContent = fmt(avg(t.requests), 1);
  document.getElementById("eps").textContent = fmt(avg(t.errors), 1);
  // Latency of the last second that had traffic (an idle second has none).
  let k = t.requests.length - 1;
  while (k > 0 && !t.requests[k]) k--;
  document.getElementById("lat").textContent = t.requests[k] ? `${fmt(t.p50_ms[k], 2)} / ${fmt(t.p99_ms[k], 2)}` : "– / –";
  document.getElementById("totals").textContent = `${t.total_requests} (${t.total_errors} failed)`;
  spark(document.getElementById("spark-rps"), [t.requests]);
  spark(document.getElementById("spark-err"), [t.errors], ["err"]);
  spark(document.getElementById("spark-lat"), [t.p50_ms, t.p99_ms], ["", "p99"]);
}

function renderConfig(c) {
  const badge = document.getElementById("config-state");
  badge.textContent = "config: " + c.state;
  badge.className = "badge " + (c.state === "synced" ? "ok" : c.state === "degraded" ? "warn" : "bad");
  const box = document.getElementById("config");
  box.replaceChildren();
  const counts = Object.entries(c.counts || {}).filter(([, v]) => v > 0).map(([k, v]) => `${v} ${k}`).join(", ");
  box.append(el("p", {}, `apply #${c.apply_seq}, ${c.last_trigger || "startup"}, applied ${ago(c.applied_at)}`,
    c.resources_file ? ` from ${c.resources_file}` : "", counts ? ` — ${counts}` : ""));
  const list = (title, items, cls) => {
    if (!items || !items.length) return;
    box.append(el("div", { class: cls }, title));
    box.append(el("ul", { class: "problems", id: "list-" + cls }, ...items.map((t) => el("li", {}, t))));
  };
  list("Rejected by the last reload (the previous config keeps serving):", (c.rejected || []).map((r) => r.error || r.message), "st-bad");
  list("Warnings:", c.warnings, "st-warn");
  list("Configured but not enforced by this build:", (c.unenforced || []).map((u) =>
    [u.collection, u.entry, u.field].filter(Boolean).join(" / ") + (u.missing ? ": " + u.missing : "")), "st-warn");
}

function renderModels(models) {
  fill(document.querySelector("#models tbody"), models.map((m) => el("tr", { "data-model": m.model },
    el("td", {}, m.model),
    el("td", { class: m.healthy ? "st-ok" : "st-bad" }, m.checked ? (m.healthy ? "healthy" : "unhealthy") : (m.healthy ? "not probed" : "unhealthy")),
    el("td", { class: m.cooling_down ? "st-warn" : "" }, m.cooling_down ? "until " + new Date(m.cooldown_until).toLocaleTimeString() : "–"),
    el("td", {}, m.last_check_at ? ago(m.last_check_at) : "–"),
    el("td", {}, m.last_error || ""))), 5, "no direct models");
}

function renderGroups(groups) {
  const box = document.getElementById("groups");
  box.replaceChildren();
  if (!groups.length) { box.append(el("p", { class: "muted" }, "no routing groups")); return; }
  for (const g of groups) {
    const total = g.targets.reduce((s, t) => s + t.requests_60s, 0) || 1;
    const rows = g.targets.map((t) => {
      const bar = el("span", { class: "bar" });
      bar.style.width = Math.round(80 * t.requests_60s / total) + "px";
      return el("tr", { "data-target": t.model },
        el("td", {}, t.model), el("td", {}, t.weight), el("td", {}, t.priority),
        el("td", { class: t.healthy ? "st-ok" : "st-bad" }, t.healthy ? (t.cooling_down ? "cooling down" : "healthy") : "unhealthy"),
        el("td", {}, t.in_flight), el("td", {}, t.latency_ms ? fmt(t.latency_ms, 1) : "–"),
        el("td", {}, bar, t.requests_60s), el("td", { class: t.errors_60s ? "st-bad" : "" }, t.errors_60s));
    });
    const table = el("table", {}, el("thead", {}, el("tr", {}, ...["target", "weight", "priority", "state", "in flight", "latency ms (ewma)", "requests (60 s)", "errors (60 s)"].map((h) => el("th", {}, h)))), el("tbody", {}, ...rows));
    box.append(el("div", { class: "group", "data-group": g.alias }, el("h3", {}, `${g.alias} `, el("span", { class: "muted" }, g.strategy)), table));
  }
}

function renderExporters(list) {
  fill(document.querySelector("#exporters tbody"), list.map((x) => el("tr", {},
    el("td", {}, x.name), el("td", {}, x.kind), el("td", {}, x.queued), el("td", {}, x.sent_events),
    el("td", { class: x.failed_batches ? "st-bad" : "" }, x.failed_batches), el("td", {}, x.dropped_events),
    el("td", {}, x.last_error || ""))), 7, "no exporters configured");
}

function renderErrors(list) {
  fill(document.querySelector("#errors tbody"), list.map((e) => el("tr", {},
    el("td", {}, new Date(e.at).toLocaleTimeString()), el("td", { class: "st-bad" }, e.status), el("td", {}, e.class || ""),
    el("td", {}, e.model), el("td", {}, e.target || ""), el("td", {}, e.provider_key || ""), el("td", {}, e.api_key || ""),
    el("td", { class: "small" }, e.request_id))), 8, "no failed requests");
}

function render(s) {
  renderConfig(s.config);
  renderTraffic(s.traffic);
  renderModels(s.models || []);
  renderGroups(s.groups || []);
  renderExporters(s.exporters || []);
  renderErrors(s.recent_errors || []);
  const lim = document.getElementById("limiter");
  lim.textContent = s.limiter;
  lim.className = "value " + (s.limiter === "local" || s.limiter === "connected" ? "" : "st-warn");
  document.getElementById("updated").textContent = "updated " + new Date(s.now).toLocaleTimeString() + (s.version ? " · " + s.version : "");
  document.body.dataset.applySeq = s.config.apply_seq;
}

function connect() {
  const conn = document.getElementById("conn");
  const es = new EventSource("events");
  es.addEventListener("state", (ev) => { conn.textContent = "live"; render(JSON.parse(ev.data)); });
  es.onerror = () => { conn.textContent = "reconnecting…"; };
}

connect();
