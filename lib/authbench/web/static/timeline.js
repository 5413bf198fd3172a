// The full-run timeline (live page and report.html): uPlot (vendor/uplot) over results.timeline's series.
// Journeys/s as green bars with errors/s in red in front, p50/p95/p99 on a right ms axis, users in flight on
// a second right axis; warm-up shaded behind the bars; cell, level and fault lines labelled on top.
// Drag across the plot to zoom on a range, double-click to see the whole run again. Labels are drawn with
// fillText on the canvas, never as HTML. The container's data-* attributes say what was drawn (for tests).
"use strict";

const AuthbenchTimeline = (() => {
  const HEIGHT = 320;
  const MIN_WIDTH = 320;
  const COLORS = { ok: "#16a34a", errors: "#dc2626", p50: "#2563eb", p95: "#9333ea", p99: "#db2777",
    users: "#6b7280", warmup: "rgba(107, 114, 128, 0.16)", cell: "#374151", level: "#0369a1", fault: "#c2410c" };
  const FONT = "11px system-ui, sans-serif";
  // x ticks in whole seconds at least (buckets are a second or more wide), up to a day.
  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  const fixed = (digits) => (v) => (v == null ? "-" : v.toFixed(digits));
  const unit = (suffix) => (u, values) => values.map((v) => (v == null ? "" : `${+v.toFixed(2)}${suffix}`));

  // Warm-up bands: from a cell's (or level's) start to its measured phase, or to the end while it lasts.
  function warmupBands(marks, t1) {
    const bands = [];
    let open = null;
    for (const m of marks) {
      if (m.what === "start" || m.what === "level") open = m.t;
      else if (m.what === "measured" && open !== null) { if (m.t > open) bands.push([open, m.t]); open = null; }
    }
    if (open !== null && t1 > open) bands.push([open, t1]);
    return bands;
  }

  // x is each bucket's middle: bars centred on it span the bucket, and the lines pass through its figures.
  function columns(series) {
    const half = (series.width_s || 1) / 2;
    return [series.t.map((t) => t + half), series.ok_per_s, series.errors_per_s, series.p50_ms, series.p95_ms, series.p99_ms,
      series.in_flight];
  }

  function bars(size) {
    return uPlot.paths.bars({ size: [size, Infinity], align: 0 });
  }

  function options(width, state) {
    const line = (label, stroke, dash) => ({ label, stroke, width: 1.5, dash, scale: "ms", spanGaps: true,
      value: (u, v) => (v == null ? "-" : `${v.toFixed(1)} ms`), points: { show: false } });
    return {
      width, height: HEIGHT, pxAlign: 0,
      cursor: { drag: { x: true, y: false, setScale: true } },
      scales: { x: { time: true, range: (u, lo, hi) => xRange(u, lo, hi, state) }, rate: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] },
        ms: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.1)] },
        users: { range: (u, lo, hi) => [0, Math.max(1, hi * 1.25)] } },
      axes: [
        { stroke: "#4b5563", grid: { stroke: "#eef0f3" }, incrs: TIME_STEPS },
        { scale: "rate", label: "journeys/s", stroke: "#4b5563", grid: { stroke: "#eef0f3" }, values: unit("/s"), size: 56 },
        { scale: "ms", side: 1, label: "response time", stroke: "#4b5563", grid: { show: false }, values: unit(" ms"), size: 84 },
        { scale: "users", side: 1, label: "users in flight", stroke: COLORS.users, grid: { show: false }, size: 56 },
      ],
      series: [
        { label: "time", value: (u, v) => (v == null ? "-" : new Date(v * 1000).toLocaleTimeString()) },
        { label: "ok/s", scale: "rate", stroke: COLORS.ok, fill: "rgba(22, 163, 74, 0.55)", width: 0,
          paths: bars(0.92), points: { show: false }, value: (u, v) => fixed(2)(v) },
        { label: "errors/s", scale: "rate", stroke: COLORS.errors, fill: "rgba(220, 38, 38, 0.85)", width: 0,
          paths: bars(0.92), points: { show: false }, value: (u, v) => fixed(2)(v) },
        line("p50", COLORS.p50, []), line("p95", COLORS.p95, [6, 3]), line("p99", COLORS.p99, [2, 2]),
        { label: "users in flight", scale: "users", stroke: COLORS.users, width: 1.25, dash: [8, 4], spanGaps: true,
          points: { show: false }, value: (u, v) => fixed(1)(v) },
      ],
      hooks: {
        drawClear: [(u) => drawBands(u, state)],
        draw: [(u) => drawMarks(u, state)],
        setScale: [(u, key) => { if (key === "x") state.zoomed = !whole(u, u.scales.x.min, u.scales.x.max); }],
      },
    };
  }

  // The whole run (the auto range), or a range the reader chose by dragging?
  function whole(u, lo, hi) {
    const xs = u.data[0];
    return !xs.length || lo == null || (lo <= xs[0] && hi >= xs[xs.length - 1]);
  }

  // The whole run reaches back to the first cell's start (before its first journey ended) and on to the end
  // of the last bucket, so the first warm-up band and the last bar are drawn whole; a zoom is kept as chosen.
  function xRange(u, lo, hi, state) {
    if (!whole(u, lo, hi)) return [lo, hi];
    const half = state.width / 2;
    const first = Math.min(lo - half, ...state.marks.filter((m) => m.t >= lo - 60).map((m) => m.t));
    return [first, hi + half];
  }

  function drawBands(u, state) {
    const g = u.ctx, top = u.bbox.top, height = u.bbox.height;
    const xs = u.data[0], t1 = xs.length ? xs[xs.length - 1] + state.width / 2 : 0;
    g.save();
    g.fillStyle = COLORS.warmup;
    for (const [a, b] of warmupBands(state.marks, t1)) {
      const x0 = Math.max(u.bbox.left, u.valToPos(a, "x", true));
      const x1 = Math.min(u.bbox.left + u.bbox.width, u.valToPos(b, "x", true));
      if (x1 > x0) g.fillRect(x0, top, x1 - x0, height);
    }
    g.restore();
  }

  function drawMarks(u, state) {
    const g = u.ctx, dpr = uPlot.pxRatio, top = u.bbox.top, bottom = top + u.bbox.height;
    const left = u.bbox.left, right = left + u.bbox.width;
    g.save();
    g.font = FONT.replace("11px", `${Math.round(11 * dpr)}px`);
    g.lineWidth = dpr;
    let lane = 0, faults = 0;
    for (const m of state.marks) {
      const fault = m.what === "fault";
      if (!(fault || m.what === "start" || m.what === "level")) continue;
      const x = Math.round(u.valToPos(m.t, "x", true));
      if (x < left || x > right) continue;
      const colour = fault ? COLORS.fault : m.what === "level" ? COLORS.level : COLORS.cell;
      g.strokeStyle = colour;
      g.setLineDash(fault ? [4 * dpr, 3 * dpr] : []);
      g.beginPath(); g.moveTo(x, top); g.lineTo(x, bottom); g.stroke();
      const y = fault ? bottom - (6 + 14 * (faults++ % 3)) * dpr : top + (12 + 13 * (lane++ % 2)) * dpr;
      const w = g.measureText(m.label).width;
      g.fillStyle = "rgba(255, 255, 255, 0.85)";
      g.fillRect(x + 2 * dpr, y - 10 * dpr, w + 4 * dpr, 13 * dpr);
      g.fillStyle = colour;
      g.fillText(m.label, x + 4 * dpr, y);
    }
    g.restore();
  }

  // What the chart shows, for tests and readers of the DOM: counts over the whole run, not the zoomed range.
  function describe(container, series, marks) {
    const xs = series.t, t1 = xs.length ? xs[xs.length - 1] + series.width_s : 0;
    container.dataset.points = String(xs.length);
    container.dataset.bucketS = String(series.width_s);
    container.dataset.warmupBands = String(warmupBands(marks, t1).length);
    container.dataset.boundaries = String(marks.filter((m) => m.what === "start" || m.what === "level").length);
    container.dataset.faults = String(marks.filter((m) => m.what === "fault").length);
  }

  // Draw the timeline of `data` ({series, marks}) in `container`, replacing `previous` (a handle mount
  // returned); returns the chart's handle.
  function mount(container, data, previous) {
    if (previous) { previous.plot.destroy(); if (previous.observer) previous.observer.disconnect(); }
    const state = { marks: data.marks || [], width: data.series.width_s || 1, zoomed: false, plot: null };
    const width = () => Math.max(MIN_WIDTH, container.clientWidth || 900);
    container.replaceChildren();
    state.plot = new uPlot(options(width(), state), columns(data.series), container);
    state.container = container;
    describe(container, data.series, state.marks);
    if (typeof ResizeObserver === "function") {
      let last = width();
      state.observer = new ResizeObserver(() => {
        const w = width();
        if (w !== last) { last = w; state.plot.setSize({ width: w, height: HEIGHT }); }
      });
      state.observer.observe(container);
    }
    return state;
  }

  // New data for a mounted chart: a zoomed range stays as the reader chose it.
  function update(state, data) {
    state.marks = data.marks || [];
    state.width = data.series.width_s || 1;
    state.plot.setData(columns(data.series), !state.zoomed);
    if (state.zoomed) state.plot.redraw(false);
    describe(state.container, data.series, state.marks);
  }

  return { mount, update, warmupBands };
})();

// The live page: app.js calls this once a poll with the run's id; the series come from api/timeline.
let liveTimeline = null;
let liveTimelineRun = null;

async function showTimeline(runId) {
  const container = document.getElementById("chart");
  if (!container || typeof uPlot === "undefined") return;
  const response = await fetch("api/timeline", { credentials: "same-origin", cache: "no-store" });
  const data = await response.json();
  if (!liveTimeline || liveTimelineRun !== (runId || data.run_id)) {
    liveTimeline = AuthbenchTimeline.mount(container, data, liveTimeline);
    liveTimelineRun = runId || data.run_id;
  } else {
    AuthbenchTimeline.update(liveTimeline, data);
  }
}

// report.html: every <div class="timeline"> with its data in the <script type="application/json"> after it.
function mountReportTimelines() {
  for (const container of document.querySelectorAll("div.timeline[data-source]")) {
    const data = JSON.parse(document.getElementById(container.dataset.source).textContent);
    container.timeline = AuthbenchTimeline.mount(container, data);
  }
}
