// The open model on the run tab: the Levels table and the capacity search's steps as they pass or fail,
// progress and time left from the rate plan (api/state's `open`), the plan's estimate under the form, a
// failed preflight's trail and the links a finished run leaves. app.js calls showOpenModel(s) after each
// poll and showTrail(answer) after a start; values go in through textContent only.
"use strict";

// The form's fields that make up a plan (sent for its estimate; never the accounts or the password rule).
const PLAN_FIELDS = ["pattern", "warmup", "repeat", "cell_time_limit", "rate", "duration", "levels", "slo",
  "capacity", "start_rate", "max_rate", "growth", "precision", "step_duration", "step_warmup", "max_users"];
const ESTIMATE_DELAY_MS = 400;  // the estimate is asked once typing pauses

function openEl(id) { return document.getElementById(id); }
function openNumber(v, digits) { return v === null || v === undefined ? "-" : Number(v).toFixed(digits); }
function openDuration(seconds) {
  const s = Math.max(0, Math.round(seconds)), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${String(m).padStart(2, "0")}m` : m ? `${m}m ${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

function planOf(form) {
  return Object.fromEntries(Object.entries(form).filter(([key]) => PLAN_FIELDS.includes(key)));
}

function openRow(cells, className) {
  const tr = document.createElement("tr");
  if (className) tr.className = className;
  for (const [text, attrs] of cells) {
    const td = document.createElement("td");
    td.textContent = text;
    for (const [k, v] of Object.entries(attrs || {})) td.setAttribute(k, v);
    tr.appendChild(td);
  }
  return tr;
}

function verdictCell(value, yes, no, title) {
  if (value === null || value === undefined) return ["-", { class: "verdict none" }];
  return [value ? yes : no, { class: `verdict ${value ? "pass" : "fail"}`, title: title || "" }];
}

function levelRow(row, repeated) {
  const label = row.label + (repeated ? ` #${row.repetition}` : "") +
    (row.running ? (row.phase === "warmup" ? " (warming up)" : " (running)") : "");
  const tr = openRow([
    [label], [openNumber(row.target_rate, 2), { "data-col": "target_rate" }],
    [openNumber(row.achieved_rate, 2), { "data-col": "achieved_rate" }],
    [row.late == null ? "-" : String(row.late), { "data-col": "late" }],
    [row.dropped == null ? "-" : String(row.dropped), { "data-col": "dropped" }],
    [openNumber(row.response_p99_ms, 1), { "data-col": "p99" }],
    verdictCell(row.slo_met, row.running ? "✓ so far" : "✓ met", row.running ? "✗ so far" : "✗ missed",
      (row.slo_failures || []).join("; ")),
    verdictCell(row.running ? null : row.sustained, "yes", "NO", (row.not_sustained_because || []).join("; ")),
  ], row.running ? "running" : "");
  tr.dataset.label = row.label;
  tr.dataset.repetition = String(row.repetition);
  return tr;
}

function stepRow(step) {
  const verdict = step.running ? ["running", { class: "verdict none" }]
    : step.passed === null ? ["not judged", { class: "verdict none" }]
    : verdictCell(step.passed, "pass", "FAIL");
  const tr = openRow([[String(step.step)], [`${openNumber(step.rate, 2)}/s`], [step.stage], verdict, [step.why]],
    step.running ? "running" : "");
  tr.dataset.step = String(step.step);
  return tr;
}

function showSearch(search) {
  openEl("capacity-search").hidden = !search;
  if (!search) return;
  const done = search.steps.filter((s) => !s.running).length;
  openEl("capacity-bound").textContent = `(${done} step(s) measured of at most ${search.bound}; ` +
    `never above ${openNumber(search.max_rate, 4).replace(/\.?0+$/, "")}/s)`;
  openEl("capacity-steps").querySelector("tbody").replaceChildren(...search.steps.map(stepRow));
  const answer = openEl("capacity-answer");
  if (search.answer) {
    answer.textContent = `Maximum capacity: ${search.answer.text}` +
      (search.answer.notes.length ? ` — ${search.answer.notes.join("; ")}` : "");
    answer.className = `answer ${search.answer.rate ? "found" : "none"}`;
  } else {
    answer.textContent = search.steps.length ? "Searching…" : "The search runs after the levels.";
    answer.className = "answer";
  }
}

function showProgress(s) {
  const progress = s.open.progress;
  openEl("progress-bar").style.width = `${Math.min(100, Math.max(0, 100 * progress.share))}%`;
  const j = s.journeys;
  const words = [progress.text];
  if (j.planned) words.push(`${j.measured} measured journeys in the levels (about ${j.planned} planned)`);
  else if (j.all_measured) words.push(`${j.all_measured} measured journeys`);
  words.push(`${j.warmup} warm-up journeys (excluded)`);
  openEl("journeys").textContent = words.filter(Boolean).join("; ");
  const current = s.current;
  if (s.state === "running" && current && current.phase) {
    const step = s.open.search && s.open.search.steps.find((st) => st.running);
    openEl("where").textContent = [`run ${s.run_id}`, s.target, step
      ? `capacity step ${step.step} of at most ${s.open.search.bound}: ${step.stage} at ${openNumber(step.rate, 2)}/s`
      : `level ${current.pattern}, repetition ${current.repetition} of ${s.plan.repeat}`].join(" · ");
  }
  const clock = [];
  if (s.time.elapsed_s != null) clock.push(`elapsed ${openDuration(s.time.elapsed_s)}`);
  if (s.state === "running") clock.push(`${progress.left_is_bound ? "at most" : "about"} ${openDuration(progress.left_s)} left`);
  if (s.time.warmup_left_s != null) clock.push(`warm-up ends in ${openDuration(s.time.warmup_left_s)}`);
  openEl("clock").textContent = clock.join(" · ");
}

function showLinks(s) {
  const links = openEl("run-links");
  links.hidden = !s.links || s.state === "running";
  if (links.hidden) return;
  const report = Object.assign(document.createElement("a"), {
    href: s.links.report, target: "_blank", textContent: "Open its report", id: "report-link" });
  const folder = Object.assign(document.createElement("code"), { textContent: s.links.folder, id: "run-folder" });
  links.replaceChildren(report, document.createTextNode("results folder: "), folder);
}

function showOpenModel(s) {
  showLinks(s);
  const open = s.open;
  openEl("open-model").hidden = !open;
  if (!open) return;
  openEl("open-figures").textContent = "";  // the tables below say it all
  openEl("levels-slo").textContent = open.slo ? `(SLO ${open.slo}, latency from the intended start)` : "";
  openEl("open-levels-block").hidden = !open.levels.length;
  openEl("open-levels").querySelector("tbody").replaceChildren(...open.levels.map((row) => levelRow(row, s.plan.repeat > 1)));
  showSearch(open.search);
  showProgress(s);
}

function showTrail(answer) {
  const trail = openEl("form-trail");
  const lines = (answer && !answer.ok && answer.trail) || [];
  trail.hidden = !lines.length;
  trail.textContent = lines.join("\n");
}

// The plan's estimate under the form, as it is typed: "about" for levels, "at most" for a capacity search.
let estimateTimer = null;

async function showEstimate() {
  const form = Object.fromEntries([...new FormData(openEl("start-form")).entries()].filter(([, v]) => typeof v === "string"));
  const note = openEl("plan-estimate");
  if (!["rate", "levels"].some((k) => (form[k] || "").trim()) && !form.capacity) { note.textContent = ""; return; }
  try {
    const response = await fetch("api/estimate", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(planOf(form)),
    });
    const answer = await response.json();
    note.textContent = answer.ok ? `This plan takes ${answer.phrase}${answer.confirm ? " (you will be asked to confirm)" : ""}.`
      : answer.message;
    note.className = answer.ok ? "note" : "note err";
  } catch (e) {
    note.textContent = "";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const form = openEl("start-form");
  const later = () => { clearTimeout(estimateTimer); estimateTimer = setTimeout(showEstimate, ESTIMATE_DELAY_MS); };
  form.addEventListener("input", later);
  form.addEventListener("change", later);
});
