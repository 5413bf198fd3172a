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
  const remark = { running: " (running)", stopped: " (stopped by the user)" }[row.kind] || "";
  cell(tr, row.label + remark);
  for (const [key, format] of FIGURES) {
    cell(tr, row.summary ? format(row.summary[key]) : "-", { "data-col": key });
  }
  return tr;
}

function showRun(s) {
  showVerdicts(s.verdicts);
  showSessions(s.sessions);
  $("state").textContent = s.state;
  $("state").className = `badge ${s.state}`;
  $("logout").hidden = !s.login;
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
  const t = s.time || {};
  const clock = [];
  if (t.elapsed_s != null) clock.push(`elapsed ${duration(t.elapsed_s)}`);
  if (s.state === "running" && t.left_s != null) clock.push(`about ${duration(t.left_s)} left`);
  if (t.warmup_left_s != null) clock.push(`warm-up ends in ${duration(t.warmup_left_s)}`);
  $("clock").textContent = clock.join(" · ");
  const j = s.journeys;
  $("progress-bar").style.width = j.planned ? `${Math.min(100, 100 * j.measured / j.planned)}%` : "0";
  $("journeys").textContent = j.planned
    ? `${j.measured} of ${j.planned} measured journeys done; ${j.warmup} warm-up journeys (excluded)`
    : "";
  $("journeys").dataset.measured = j.measured;
  $("start").disabled = s.busy;
  $("stop").disabled = !s.busy;

  const levels = s.rows.filter((row) => row.open);  // arrival-rate levels: what only an open model knows
  const figures = levels.map((row) => `${row.label}: target ${rate(row.open.target_rate)}/s, ` +
    `achieved ${rate(row.open.achieved_rate)}/s, ${row.open.late} late, ${row.open.dropped} dropped, ` +
    `p99 ${ms(row.open.response_ms.p99)} ms from intended start vs ${ms(row.open.service_ms.p99)} ms service` +
    (row.open.sustained ? "" : " — NOT SUSTAINED"));
  const now = s.level;  // the level running, as it goes
  if (now) figures.push(`${now.label} (running): target ${rate(now.target_rate)}/s, achieved so far ` +
    `${rate(now.achieved_rate)}/s, ${now.late} late, ${now.dropped} dropped, in flight at most ` +
    `${now.in_flight_peak}, p99 ${ms(now.response_p99_ms)} ms from intended start vs ` +
    `${ms(now.service_p99_ms)} ms service`);
  $("open-figures").textContent = figures.join("; ");
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
    cell(tr, String(u.user)); cell(tr, String(u.warmup)); cell(tr, String(u.measured)); cell(tr, String(s.current.runs ?? "-"));
    return tr;
  }));
  showTimeline(s.run_id).catch(() => {});  // timeline.js: the whole run, drawn with uPlot
  showOpenModel(s);  // openmodel.js: levels, capacity steps, progress of a rate plan, links at the end
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

function duration(seconds) {
  const s = Math.round(seconds), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${String(m).padStart(2, "0")}m` : m ? `${m}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  return response.json();
}

async function start(event) {
  event.preventDefault();
  const error = $("form-error");
  error.hidden = true;
  const form = Object.fromEntries([...new FormData($("start-form")).entries()].filter(([, v]) => typeof v === "string"));
  const estimate = await postJSON("api/estimate", planOf(form)).catch(() => ({ ok: false }));  // patterns or rates
  if (estimate.ok && estimate.confirm && !window.confirm(`This plan takes ${estimate.phrase}. Start it?`)) return;
  const csv = $("accounts_csv").files[0];
  if (csv) form.accounts_csv_text = await csv.text();  // sent once, with the start; never shown again
  $("start").disabled = true;
  try {
    const response = await fetch("api/start", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify(form),
    });
    const answer = await response.json();
    if (!answer.ok) { error.textContent = answer.message; error.hidden = false; }
    showTrail(answer);  // openmodel.js: a failed preflight's hops
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
    else if (currentTab === "runs") showRuns(await getJSON("api/runs"));
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
  $("tab-runs").hidden = name !== "runs";
  poll();
}

// The "All runs" tab: the results folder as a list; reports built on demand; two runs compared in one report.
const ticked = new Set();

// Rows whose run has not changed are kept as they are between polls, so a button is never swapped under
// the pointer while it is being clicked (only a run that is going on is redrawn, once a second).
const runRows = new Map();  // run id -> { key: its JSON, tr }

function showRuns(data) {
  const rows = data.runs.map((r) => {
    const key = JSON.stringify(r), kept = runRows.get(r.id);
    if (kept && kept.key === key) return kept.tr;
    const tr = document.createElement("tr");
    runRows.set(r.id, { key, tr });
    tr.dataset.run = r.id;
    const box = document.createElement("input");
    box.type = "checkbox";
    box.disabled = r.kind !== "run";
    box.checked = ticked.has(r.id);
    box.addEventListener("change", () => { if (box.checked) ticked.add(r.id); else ticked.delete(r.id); updateCompare(); });
    cell(tr, "").appendChild(box);
    cell(tr, r.id); cell(tr, r.kind); cell(tr, r.state, { class: `state ${r.state}` }); cell(tr, r.target || "-");
    cell(tr, r.started ? new Date(r.started * 1000).toLocaleString() : "-");
    cell(tr, (r.patterns || []).join(", "));
    cell(tr, r.cells_done == null ? "-" : String(r.cells_done));
    cell(tr, r.tests == null ? "-" : String(r.tests)); cell(tr, r.errors == null ? "-" : String(r.errors));
    const report = cell(tr, "");
    if (r.report) {
      const a = document.createElement("a");
      a.href = `runs/${encodeURIComponent(r.id)}/report.html`; a.target = "_blank"; a.textContent = "open";
      report.appendChild(a);
      report.appendChild(document.createTextNode(" "));
    }
    const build = document.createElement("button");
    build.type = "button"; build.textContent = r.report ? "rebuild" : "build"; build.className = "small";
    build.addEventListener("click", () => buildReport(r.id, build));
    report.appendChild(build);
    return tr;
  });
  for (const id of [...ticked]) if (!data.runs.some((r) => r.id === id)) ticked.delete(id);
  const tbody = document.querySelector("#runs tbody");
  if (rows.length !== tbody.children.length || rows.some((tr, i) => tbody.children[i] !== tr)) fill(tbody, rows);
  updateCompare();
}

function updateCompare() { $("compare-runs").disabled = ticked.size !== 2; }

async function buildReport(id, button) {
  const label = button.textContent;
  button.disabled = true;
  button.textContent = "building…";
  const answer = await postJSON(`api/runs/${encodeURIComponent(id)}/report`, {}).catch((e) => ({ message: e.message }));
  button.disabled = false;  // the row may be kept as it is (its run unchanged): the button must work again
  button.textContent = label;
  if (answer.ok) window.open(answer.url, "_blank");
  else { $("runs-error").textContent = answer.message; $("runs-error").hidden = false; }
  poll();
}

function compareRuns() {
  const [a, b] = [...ticked];
  window.location.href = `compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`;
}

document.addEventListener("DOMContentLoaded", () => {
  $("start-form").addEventListener("submit", start);
  $("stop").addEventListener("click", stop);
  $("compare-runs").addEventListener("click", compareRuns);
  for (const b of document.querySelectorAll("button.tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  poll();
  setInterval(poll, POLL_MS);
});
