// authbench's page: polls api/state (and api/campaign), fills the tables; plain DOM, no build step.
// Every value goes in through textContent, never as HTML: reasons and labels come from the run.
"use strict";

const POLL_MS = 1000;
const FIGURES = [
  ["tests", count], ["errors", count], ["mean_ms", ms], ["sd_ms", ms], ["tps", rate],
  ["peak_tps", rate], ["median_ms", ms], ["p90_ms", ms], ["p99_ms", ms],
];
let formFilled = false;

function count(v) { return v === null || v === undefined ? "-" : (Number.isInteger(v) ? String(v) : v.toFixed(1)); }
function ms(v) { return v === null || v === undefined ? "-" : v.toFixed(1); }
function rate(v) { return v === null || v === undefined ? "-" : v.toFixed(2); }
function $(id) { return document.getElementById(id); }

function cell(row, text, attrs) {
  const td = document.createElement(row.parentElement && row.parentElement.tagName === "THEAD" ? "th" : "td");
  td.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) td.setAttribute(k, v);
  row.appendChild(td);
  return td;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

async function getJSON(url) {
  const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

// -- the run tab -------------------------------------------------------------------------------------

function grinderRow(row) {
  const tr = document.createElement("tr");
  tr.className = row.kind + (row.complete === false ? " cut" : "");
  tr.dataset.label = row.label;
  cell(tr, row.kind === "running" ? `${row.label} (running)` : row.label);
  for (const [key, format] of FIGURES) {
    cell(tr, row.summary ? format(row.summary[key]) : "-", { "data-col": key });
  }
  return tr;
}

function showRun(s) {
  $("state").textContent = s.state;
  $("state").className = `badge ${s.state}`;
  const phase = s.current ? s.current.phase : "";
  $("phase").hidden = !phase;
  $("phase").textContent = phase === "warmup" ? "warm-up (not measured)" : "measured";
  $("phase").className = `badge ${phase}`;
  const where = [];
  if (s.run_id) where.push(`run ${s.run_id}`);
  if (s.target) where.push(s.target);
  if (s.current && phase) where.push(`pattern ${s.current.pattern}, repetition ${s.current.repetition} of ${s.plan.repeat} ` +
                            `(cell ${s.current.cell} of ${s.plan.cells})`);
  $("where").textContent = where.join(" · ");
  $("message").textContent = s.message || "";
  const j = s.journeys;
  $("progress-bar").style.width = j.planned ? `${Math.min(100, 100 * j.measured / j.planned)}%` : "0";
  $("journeys").textContent = j.planned
    ? `${j.measured} of ${j.planned} measured journeys done; ${j.warmup} warm-up journeys (excluded)`
    : "";
  $("journeys").dataset.measured = j.measured;
  $("start").disabled = s.busy;
  $("stop").disabled = !s.busy;

  const levels = s.rows.filter((row) => row.open);  // arrival-rate levels: what only an open model knows
  $("open-figures").textContent = levels.map((row) => `${row.label}: target ${rate(row.open.target_rate)}/s, ` +
    `achieved ${rate(row.open.achieved_rate)}/s, ${row.open.late} late, ${row.open.dropped} dropped, ` +
    `p99 ${ms(row.open.response_ms.p99)} ms from intended start vs ${ms(row.open.service_ms.p99)} ms service` +
    (row.open.sustained ? "" : " — NOT SUSTAINED")).join("; ");
  const rows = s.rows.map(grinderRow);
  if (s.running) rows.push(grinderRow(s.running));
  fill(document.querySelector("#grinder tbody"), rows);

  const reasons = s.reasons.map((r) => {
    const tr = document.createElement("tr");
    cell(tr, r.reason); cell(tr, String(r.measured)); cell(tr, String(r.warmup));
    const example = cell(tr, "");
    if (r.example) {  // the first failing journey's trail, kept under results/<run>/failures/
      const a = document.createElement("a");
      a.href = `failures/${encodeURIComponent(s.run_id)}/${encodeURIComponent(r.example)}`;
      a.textContent = r.example;
      a.target = "_blank";
      example.appendChild(a);
    }
    return tr;
  });
  if (!reasons.length && s.plan) {
    reasons.push(document.createElement("tr"));
    cell(reasons[0], "none so far", { colspan: "4", class: "none" });
  }
  fill(document.querySelector("#reasons tbody"), reasons);
  const users = s.current ? s.current.per_user : [];
  const shown = s.current && users.length < s.current.users ? `, first ${users.length} of ${s.current.users}` : "";
  $("per-user-cell").textContent = s.current ? `(${s.current.pattern} #${s.current.repetition}${shown})` : "";
  fill(document.querySelector("#per-user tbody"), users.map((u) => {
    const tr = document.createElement("tr");
    cell(tr, String(u.user)); cell(tr, String(u.warmup)); cell(tr, String(u.measured)); cell(tr, String(s.current.runs));
    return tr;
  }));
  drawChart(s.timeline);
  if (!formFilled) fillForm(s);
}

function fillForm(s) {
  formFilled = true;
  const list = $("lab-targets");
  list.replaceChildren(...s.lab_backends.map((name) => {
    const option = document.createElement("option");
    option.value = `lab:${name}`;
    return option;
  }));
  for (const [key, value] of Object.entries(s.defaults)) {
    const input = $(key);
    if (input && !input.value) input.value = value;
  }
  if (!$("target").value && s.lab_backends.length) $("target").value = `lab:${s.lab_backends[0]}`;
}

function drawChart(points) {
  const canvas = $("chart");
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 28;
  g.clearRect(0, 0, w, h);
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#6b7280";
  if (!points.length) { g.fillText("no journeys yet", pad, h / 2); return; }
  const t0 = points[0].t, t1 = points[points.length - 1].t;
  const span = Math.max(1, t1 - t0 + 1);
  const maxOk = Math.max(1, ...points.map((p) => p.ok));
  const maxMs = Math.max(1, ...points.map((p) => p.mean_ms || 0));
  const x = (t) => pad + (w - 2 * pad) * (t - t0) / span;
  const bar = Math.max(1, (w - 2 * pad) / span - 1);
  g.fillStyle = "#15803d";
  for (const p of points) {
    const bh = (h - 2 * pad) * p.ok / maxOk;
    g.fillRect(x(p.t), h - pad - bh, bar, bh);
  }
  g.strokeStyle = "#1d4ed8";
  g.beginPath();
  points.filter((p) => p.mean_ms !== null).forEach((p, i) => {
    const y = h - pad - (h - 2 * pad) * p.mean_ms / maxMs;
    if (i === 0) g.moveTo(x(p.t) + bar / 2, y); else g.lineTo(x(p.t) + bar / 2, y);
  });
  g.stroke();
  g.fillStyle = "#6b7280";
  g.fillText(`${maxOk}/s`, 2, pad);
  g.fillText(`${maxMs.toFixed(0)} ms`, w - pad - 30, pad - 8);
  g.fillText(`${span} s`, w - pad - 20, h - 8);
}

async function start(event) {
  event.preventDefault();
  const error = $("form-error");
  error.hidden = true;
  const form = Object.fromEntries(new FormData($("start-form")).entries());
  $("start").disabled = true;
  try {
    const response = await fetch("api/start", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(form),
    });
    const answer = await response.json();
    if (!answer.ok) { error.textContent = answer.message; error.hidden = false; }
  } catch (e) {
    error.textContent = `could not start: ${e.message}`;
    error.hidden = false;
  }
  await poll();
}

async function stop() {
  await fetch("api/stop", { method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: "{}" });
  await poll();
}

// -- the campaign tab --------------------------------------------------------------------------------

function showCampaign(c) {
  $("campaign-message").textContent = c.message || "";
  $("campaign-body").hidden = !c.comparison;
  if (!c.comparison) return;
  const state = c.finished ? "finished" : "not finished (running or interrupted)";
  $("campaign-title").textContent =
    `Campaign ${c.campaign}: ${c.patterns.join(", ")}, warm-up ${c.warmup_s} s, ${c.repeat} repetition(s); ${state}.`;

  const head = document.createElement("tr");
  document.querySelector("#comparison thead").replaceChildren(head);
  cell(head, "pattern");
  c.backends.forEach((b) => cell(head, b));
  fill(document.querySelector("#comparison tbody"), c.patterns.map((pattern) => {
    const tr = document.createElement("tr");
    cell(tr, pattern);
    for (const backend of c.backends) {
      const figures = (c.comparison[backend] || {})[pattern];
      const td = cell(tr, figures ? rate(figures.tps) : "-", { "data-backend": backend, "data-pattern": pattern });
      if (figures) {
        if (figures.errors) td.appendChild(Object.assign(document.createElement("span"), { className: "err", textContent: "*" }));
        td.appendChild(document.createElement("br"));
        td.appendChild(Object.assign(document.createElement("small"), { textContent: `${ms(figures.mean_ms)} ms` }));
      }
    }
    return tr;
  }));

  const checksHead = document.createElement("tr");
  document.querySelector("#checks thead").replaceChildren(checksHead);
  cell(checksHead, "backend");
  c.checks.tests.forEach((t) => cell(checksHead, t));
  fill(document.querySelector("#checks tbody"), c.checks.rows.map((row) => {
    const tr = document.createElement("tr");
    cell(tr, row.backend);
    for (const test of c.checks.tests) {
      const mark = row.marks[test];
      const td = cell(tr, mark ? mark.mark : "-", { "data-backend": row.backend, "data-test": test });
      if (mark) { td.className = mark.mark === "○" ? "pass" : "fail"; td.title = mark.evidence.join("\n"); }
    }
    return tr;
  }));

  const reports = $("reports");
  if (c.reports.length) {
    reports.replaceChildren(...c.reports.map((name) => Object.assign(document.createElement("a"), {
      href: `report/${encodeURIComponent(name)}`, textContent: `Download ${name}`, className: "report",
    })).flatMap((a) => [a, document.createTextNode("  ")]));
  } else {
    reports.textContent = "No report.html in this campaign yet (the report generator writes it into the campaign folder).";
  }
}

// -- polling and tabs --------------------------------------------------------------------------------

let currentTab = "run";

async function poll() {
  try {
    if (currentTab === "run") showRun(await getJSON("api/state"));
    else showCampaign(await getJSON("api/campaign"));
  } catch (e) {
    $("message").textContent = `lost contact with the server: ${e.message}`;
  }
}

function showTab(name) {
  currentTab = name;
  for (const b of document.querySelectorAll("button.tab")) b.classList.toggle("active", b.dataset.tab === name);
  $("tab-run").hidden = name !== "run";
  $("tab-campaign").hidden = name !== "campaign";
  poll();
}

document.addEventListener("DOMContentLoaded", () => {
  $("start-form").addEventListener("submit", start);
  $("stop").addEventListener("click", stop);
  for (const b of document.querySelectorAll("button.tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  poll();
  setInterval(poll, POLL_MS);
});
