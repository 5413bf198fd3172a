"""Regenerate the stored campaign the report tests read: `python tests/report/make_fixture.py`.

Needs a running lab (`authbench lab up --backend all --base-port 10000 --lab-dir /tmp/report-lab`).
Runs `authbench run` per backend, samples the CPU and RSS of the lab's processes and of the generator
with psutil while it goes, writes `campaign.json` with the cluster checks (the layout of
docs/results-layout.md), then crafts `killed/`: one run whose summary.json lost its last cell, as a
`kill -9` in the middle of that cell leaves it.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil

from authbench.cluster.checks import Account, Cluster, run_checks
from authbench.results.provenance import machine, versions
from authbench.results.recorder import read_samples, write_json_atomic
from authbench.results.summary import Summary, average, split_runs
from authbench_lab import lab
from authbench_lab.config import LabConfig, password_for, username

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
CAMPAIGN = FIXTURES / "campaign"
KILLED = FIXTURES / "killed"
LAB_DIR = os.environ.get("AUTHBENCH_LAB_DIR", "/tmp/report-lab")
BACKENDS = ("terracotta", "memcached", "stateless")
PATTERNS = "2x20,4x10"
WARMUP = "2s"
REPEAT = 2
KILLED_PARTIAL_CHARS = 30  # a half-written row: what a kill -9 during a write leaves
INTERVAL_S = 0.25  # shorter than the lead's 1 s: the fixture's cells last a second or two
SATURATED_CPU_PCT = 90.0  # generator busier than this share of one core: it was the limit
SHARED = {"ldap": "slapd", "lb": "haproxy", "memcached-a": "memcached-a", "memcached-b": "memcached-b",
          "redis-primary": "redis-primary", "redis-replica": "redis-replica"}
RESOURCE_COLUMNS = ("time", "pattern", "repetition", "phase", "component", "pid", "cpu_pct", "rss_bytes")
AUTHBENCH = Path(sys.executable).with_name("authbench")


def components(state: dict, backend: str) -> dict[str, psutil.Process]:
    """The lab's processes one backend's load touches, by the layout's component names."""
    out = {}
    for key, entry in state["components"].items():
        name = SHARED.get(key)
        if key.startswith(f"{backend}/"):
            part = key.split("/", 1)[1]
            name = f"sp-{backend}" if part == "sp" else f"{part.split('-')[0]}-{backend}-{part.split('-')[1]}"
        if name and entry.get("pid"):
            out[name] = psutil.Process(entry["pid"])
    return out


def tree_times(process: psutil.Process) -> tuple[float, int]:
    """CPU seconds and RSS of a process and its children (gunicorn's workers)."""
    cpu, rss = 0.0, 0
    for p in [process, *process.children(recursive=True)]:
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
            rss += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return cpu, rss


def sample_while(run: subprocess.Popen, procs: dict[str, psutil.Process]) -> list[dict]:
    procs = {"generator": psutil.Process(run.pid), **procs}
    last = {name: (time.monotonic(), tree_times(p)[0]) for name, p in procs.items()}
    rows = []
    while run.poll() is None:
        time.sleep(INTERVAL_S)
        now = time.time()
        for name, process in procs.items():
            try:
                cpu, rss = tree_times(process)
            except psutil.NoSuchProcess:
                continue
            then, before = last[name]
            mono = time.monotonic()
            rows.append({"time": now, "component": name, "pid": process.pid,
                         "cpu_pct": 100.0 * (cpu - before) / (mono - then), "rss_bytes": rss})
            last[name] = (mono, cpu)
    return rows


def cell_spans(run_dir: Path) -> dict[tuple[str, int], dict[str, tuple[float, float]]]:
    spans: dict[tuple[str, int], dict[str, tuple[float, float]]] = {}
    for key, samples in split_runs(read_samples(run_dir / "samples.csv")).items():
        for phase in ("warmup", "measured"):
            chosen = [s for s in samples if s.phase == phase]
            if chosen:
                spans.setdefault(key, {})[phase] = (min(s.start for s in chosen), max(s.end for s in chosen))
    return spans


def attach(run_dir: Path, rows: list[dict]) -> None:
    """Write resources.csv and add each cell's `resources` (its measured phase) to summary.json."""
    spans = cell_spans(run_dir)
    placed = []
    for row in rows:
        for (pattern, repetition), phases in spans.items():
            for phase, (begin, end) in phases.items():
                if begin <= row["time"] <= end + INTERVAL_S:
                    placed.append({**row, "pattern": pattern, "repetition": repetition, "phase": phase})
    with (run_dir / "resources.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, RESOURCE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in placed:
            writer.writerow({**row, "time": f"{row['time']:.3f}", "cpu_pct": f"{row['cpu_pct']:.1f}"})
    summary_path = run_dir / "summary.json"
    document = json.loads(summary_path.read_text())
    for cell in document["cells"]:
        mine = [r for r in placed if (r["pattern"], r["repetition"], r["phase"]) ==
                (cell["pattern"], cell["repetition"], "measured")]
        journeys = cell["summary"]["tests"] or 1
        parts = {}
        for name in dict.fromkeys(r["component"] for r in mine):
            own = [r for r in mine if r["component"] == name]
            cpu = [r["cpu_pct"] for r in own]
            rss = [r["rss_bytes"] / 2**20 for r in own]
            cpu_s = sum(cpu) / 100 * INTERVAL_S
            parts[name] = {"pid": own[0]["pid"], "cpu_pct_mean": round(sum(cpu) / len(cpu), 1),
                           "cpu_pct_max": round(max(cpu), 1), "cpu_s": round(cpu_s, 3),
                           "rss_mib_mean": round(sum(rss) / len(rss), 1), "rss_mib_max": round(max(rss), 1),
                           "cpu_ms_per_journey": round(1000 * cpu_s / journeys, 2)}
        generator = parts.get("generator", {}).get("cpu_pct_mean", 0.0)
        cell["resources"] = {"interval_s": INTERVAL_S, "samples": len({r["time"] for r in mine}),
                             "components": parts, "generator_saturated": generator >= SATURATED_CPU_PCT}
    write_json_atomic(summary_path, document)


def checks(config: LabConfig) -> dict[str, list[dict]]:
    user = username(0, config.users)
    account = Account(user, password_for(user))
    out = {}
    for backend in BACKENDS:
        cluster = Cluster(sp_url=config.sp_url(backend) + "/secure/", lb_url=config.lb_url(backend),
                          nodes={"A": config.node_url(backend, "a"), "B": config.node_url(backend, "b")},
                          verify=str(config.ca_cert))
        out[backend] = [{"test": r.test, "passed": r.passed, "evidence": r.evidence}
                        for r in run_checks(cluster, account)]
    return out


def craft_killed() -> None:
    """A copy of one run whose summary.json lacks its last cell; samples.csv keeps that cell's rows."""
    shutil.rmtree(KILLED, ignore_errors=True)
    shutil.copytree(CAMPAIGN / "runs" / BACKENDS[-1], KILLED)
    path = KILLED / "summary.json"
    document = json.loads(path.read_text())
    last = document["cells"].pop()
    document["finished"] = None
    by_pattern: dict[str, list[Summary]] = {}
    for cell in document["cells"]:
        by_pattern.setdefault(cell["pattern"], []).append(Summary.from_dict(cell["summary"]))
    document["averages"] = {p: average(items).to_dict() for p, items in by_pattern.items()}
    write_json_atomic(path, document)
    # The kill came halfway through the cell's measured phase, in the middle of writing a row.
    lost = [last["pattern"], str(last["repetition"])]
    lines = (KILLED / "samples.csv").read_text().splitlines(keepends=True)
    measured = [i for i, line in enumerate(lines) if line.split(",")[7:10] == ["measured", *lost]]
    cut = lines[:measured[len(measured) // 2]]
    (KILLED / "samples.csv").write_text("".join(cut) + lines[len(cut)][:KILLED_PARTIAL_CHARS])


def main() -> int:
    state = lab.read_state(LAB_DIR)
    if not state:
        print(f"no lab in {LAB_DIR}; start it first", file=sys.stderr)
        return 2
    config = LabConfig.from_dict(state["config"])
    shutil.rmtree(CAMPAIGN, ignore_errors=True)
    (CAMPAIGN / "runs").mkdir(parents=True)
    started = time.time()
    check_results = checks(config)
    cells = []
    for backend in BACKENDS:
        command = [str(AUTHBENCH), "run", "--target", f"lab:{backend}", "--pattern", PATTERNS, "--warmup", WARMUP,
                   "--repeat", str(REPEAT), "--results", str(CAMPAIGN / "runs"), "--run-id", backend]
        run = subprocess.Popen(command, env={**os.environ, "AUTHBENCH_LAB_DIR": LAB_DIR})
        rows = sample_while(run, components(state, backend))
        if run.returncode:
            print(f"{backend}: authbench run exited {run.returncode}", file=sys.stderr)
            return 1
        attach(CAMPAIGN / "runs" / backend, rows)
        summary = json.loads((CAMPAIGN / "runs" / backend / "summary.json").read_text())
        cells += [{"backend": backend, "pattern": c["pattern"], "repetition": c["repetition"],
                   "status": "done" if c["complete"] else "cut short", "run": f"runs/{backend}"}
                  for c in summary["cells"]]
    targets = {b: {"kind": "lab", "url": config.sp_url(b) + "/secure/",
                   "nodes": {"A": config.node_url(b, "a"), "B": config.node_url(b, "b")}} for b in BACKENDS}
    write_json_atomic(CAMPAIGN / "campaign.json", {
        "campaign_id": CAMPAIGN.name, "started": started, "finished": time.time(),
        "config": {"backends": list(BACKENDS), "patterns": PATTERNS.split(","), "warmup_s": float(WARMUP[:-1]),
                   "repeat": REPEAT, "cell_time_limit_s": 3600.0, "targets": targets,
                   "lab": {"base_port": config.base_port, "stickiness": config.stickiness, "users": config.users}},
        "versions": versions(), "machine": machine(), "checks": check_results, "cells": cells,
    })
    craft_killed()
    return 0


if __name__ == "__main__":
    sys.exit(main())
