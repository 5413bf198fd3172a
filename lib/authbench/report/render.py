"""report.html (self-contained: CSS and plots inline) and report.md (plots as PNG files beside it).

Configuration is rendered from an allow-list of known keys, never by dumping `config`: a future config
key holding a password or token then stays out of the report until someone adds it here on purpose.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from authbench.results import verdicts

from .findings import caveats, design_expects, findings
from .levels import capacity_tables, levels_table
from .load import Results, clean_url
from .plots import Plot
from .tables import (
    Table,
    checks_evidence_table,
    checks_table,
    cpu_tables,
    distribution_table,
    failover_table,
    failures_table,
    overview_table,
    run_tables,
)
from .timeline import assets, timelines

TEMPLATES = Path(__file__).with_name("templates")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S UTC"
# Allow-lists: (key path in the document, label). Only these are ever shown.
CAMPAIGN_KEYS = (
    ("backends", "backends"), ("patterns", "patterns"), ("warmup_s", "warm-up (s)"), ("repeat", "repetitions"),
    ("cell_time_limit_s", "cell time limit (s)"), ("lab.base_port", "lab base port"),
    ("lab.stickiness", "lab stickiness"), ("lab.users", "lab accounts"),
)
RUN_KEYS = (
    ("target_name", "target name"), ("target", "target"), ("sp", "SP mode"), ("tls_verify", "TLS verification"),
    ("verify_signature", "signature verified in-process"), ("timeout_s", "request timeout (s)"),
    ("accounts.type", "accounts"), ("accounts.template", "account template"), ("accounts.file", "accounts file"),
    ("accounts.accounts", "number of accounts"), ("accounts.user", "account"),
    ("accounts.order", "account order"), ("reuse_session", "reuse session"),
    ("new_connection", "new connection per journey"), ("pace_s", "pace (s)"),
)
PLAN_KEYS = (("patterns", "patterns"), ("warmup_s", "warm-up (s)"), ("repeat", "repetitions"))
MACHINE_KEYS = (("node", "host"), ("platform", "platform"), ("cores", "cores"), ("python", "Python"))
PAIR_HEADER = ("setting", "value")
TARGET_KEYS = (("kind", "kind"), ("url", "URL"), ("nodes", "nodes"))


def sections(results: Results, plots: list[Plot]) -> dict[str, Any]:
    """Everything both templates show, computed once."""
    by_name = {plot.name: plot for plot in plots}
    return {
        "results": results,
        "title": f"authbench report: {results.name}",
        "when": _span(results.started, results.finished),
        "verdicts": verdict_panel(results),
        "findings": findings(results),
        "caveats": caveats(results),
        "overview": overview_table(results),
        "checks": checks_table(results),
        "failover": failover_table(results),
        "checks_evidence": checks_evidence_table(results),
        "runs": run_tables(results),
        "levels": levels_table(results),
        "capacity": capacity_tables(results),
        "distribution": distribution_table(results),
        "failures": failures_table(results),
        "cpu": cpu_tables(results),
        "plots": by_name,
        "timelines": timelines(results),
        "configuration": configuration(results),
    }


def verdict_panel(results: Results) -> dict[str, Any]:
    """The panel at the top: every backend's checks (results.verdicts, as summary.json and the console have them)
    and whether all that was judged passed."""
    per_run = {backend: verdicts.compute(run.document) for backend, run in results.runs.items()}
    rows = []
    for backend, panel in per_run.items():
        named = [backend] if len(per_run) > 1 else []
        if results.checks.get(backend):
            rows.append([*named, "·", "cluster checks (Tests 1–3)", _cluster_checks(results, backend)])
        for check in panel["checks"]:
            rows.append([*named, check["mark"], check["title"], check["figure"]])
    header = [*(["backend"] if len(per_run) > 1 else []), "", "check", "figure that decided it"]
    judged = [panel["passed"] for panel in per_run.values() if panel["passed"] is not None]
    passed = all(judged) if judged else None
    head = {True: "all passed", False: "FAILED", None: "nothing to judge"}[passed]
    notes = ["✓ passed, ✗ failed, · shown without a criterion to judge it by; Test 4: ○ no logged-in user lost "
             "SSO, △ some, × all, - not measured (docs/report.md)."]
    return {"passed": passed, "head": head, "table": Table(f"Verdicts: {head}", header, rows, text=True, notes=notes)}


def _cluster_checks(results: Results, backend: str) -> str:
    """'Test 1 ○, Test 2 ○, Test 3 ×*': what the design does (not judged: a design may lack a property)."""
    marks = []
    for index, check in enumerate(results.checks[backend]):
        passed = bool(check.get("passed"))
        expected = "" if passed or not design_expects(results, backend, index, passed=False) else "*"
        marks.append(f"{check.get('test', '?')} {'○' if passed else '×'}{expected}")
    return ", ".join(marks) + (" (* as the 2012 design table expects)" if any(m.endswith("*") for m in marks) else "")


def configuration(results: Results) -> list[Table]:
    """The run's set-up, so a reader can reproduce it: plan, targets, versions, machine (allow-listed)."""
    tables = []
    if results.kind == "campaign":
        tables.append(_pairs("Campaign", results.config, CAMPAIGN_KEYS))
        targets = results.config.get("targets") or {}
        rows = [[backend, *(_value(_get(target, key)) for key, _ in TARGET_KEYS)]
                for backend, target in targets.items() if isinstance(target, dict)]
        if rows:
            tables.append(Table("Targets", ["backend", *(label for _, label in TARGET_KEYS)], rows, text=True))
        tables.append(_lab_starts(results.lab_starts))
    else:
        tables.append(_pairs("Plan", results.plan, PLAN_KEYS))
    for backend, run in results.runs.items():
        title = f"Run {backend}" if len(results.runs) > 1 else "Run"
        tables.append(_pairs(title, run.document.get("config") or {}, RUN_KEYS))
    versions = {k: v for k, v in results.versions.items() if isinstance(v, str | int | float)}
    tables.append(Table("Versions", list(PAIR_HEADER), [[str(k), _value(v)] for k, v in versions.items()], text=True))
    tables.append(_pairs("Machine", results.machine, MACHINE_KEYS))
    return [t for t in tables if t.rows]


def html(results: Results, plots: list[Plot]) -> str:
    data = sections(results, plots)
    data["images"] = {p.name: "data:image/png;base64," + base64.b64encode(p.png).decode("ascii") for p in plots}
    data["timeline_assets"] = assets() if data["timelines"] else {}
    return _environment(autoescape=True).get_template("report.html.j2").render(data)


def markdown(results: Results, plots: list[Plot], image_names: dict[str, str]) -> str:
    data = sections(results, plots)
    data["images"] = image_names
    return _environment(autoescape=False).get_template("report.md.j2").render(data)


def md_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table; averages in bold."""
    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rows = [[f"**{c}**" if i in table.strong and c else c for c in row] for i, row in enumerate(table.rows)]
    align = ":---:" if table.centered else "---" if table.text else "---:"
    aligns = ["---", *(align for _ in table.header[1:])]
    return "\n".join([line(table.header), line(aligns), *(line(r) for r in rows)])


def _environment(autoescape: bool) -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=autoescape, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["md_table"] = md_table
    return env


def _lab_starts(starts: list[dict[str, Any]]) -> Table:
    """Each lab the campaign brought up (one per Keycloak design) and what its start took."""
    rows = [[_value(start.get("clusters") or []),
             time.strftime(TIME_FORMAT, time.gmtime(start["started"])) if start.get("started") else "",
             _value(start.get("seconds")), _value(start.get("keycloak_seconds", "")),
             _value(start.get("keycloak_install") or "")] for start in starts if isinstance(start, dict)]
    return Table("Lab starts", ["clusters", "began", "lab up (s)", "Keycloak ready (s)", "installed (s)"], rows,
                 text=True, notes=["Keycloak ready: from node A's launch until the cluster answered through HAProxy."])


def _pairs(title: str, document: dict[str, Any], keys: tuple[tuple[str, str], ...]) -> Table:
    rows = [[label, _value(value)] for key, label in keys if (value := _get(document, key)) is not None]
    return Table(title, list(PAIR_HEADER), rows, text=True)


def _get(document: dict[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    return clean_url(text) if text.startswith(("http://", "https://")) else text


def _span(started: float | None, finished: float | None) -> str:
    def stamp(value: float | None) -> str:
        return time.strftime(TIME_FORMAT, time.gmtime(value)) if isinstance(value, int | float) else "?"

    return f"{stamp(started)} to {stamp(finished)}" if finished else f"started {stamp(started)}, not finished"
