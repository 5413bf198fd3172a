"""A campaign: the 2012 report's whole method in one folder — cluster checks, then every target ×
pattern × repetition, saved as it goes and resumable where it stopped.

Layout (docs/results-layout.md): `campaign.json` holds the plan, the checks and the state of every
cell; `runs/<target>/` is an ordinary run folder per target. A target's run folder is the truth about
which of its cells are done: `campaign.json` is rewritten from it after every cell, so a crash
between the two writes loses nothing and resumes cleanly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..patterns import Pattern, Plan
from ..results.folder import NEW, OVERWRITE, claim
from ..results.lock import FolderLock
from ..results.recorder import CAMPAIGN_FILE, RUNS_DIR, SUMMARY_FILE, write_json_atomic
from .checks import Account, CheckResult, Cluster, run_checks

# What --dry-run assumes; measured on the lab on 2 cores (docs/benchmarks.md: 70–90 logins/s at saturation).
ESTIMATE_JOURNEY_S = 0.035  # one login when the target is not saturated
ESTIMATE_CAPACITY_TPS = 75.0  # logins/s a target serves at most
ESTIMATE_LAB_UP_S = 6.0
ESTIMATE_CHECKS_S = 2.0  # per target: Tests 1–3 are five logins


@dataclass(frozen=True)
class Target:
    """One system to load: a cluster of the lab or an SP URL given by the user."""

    name: str
    url: str  # the SP's protected URL
    kind: str = "url"  # "lab" or "url"
    lb: str | None = None  # the balancer's base URL, for the cluster checks
    nodes: dict[str, str] = field(default_factory=dict)  # node name → base URL bypassing the balancer

    def cluster(self, verify: bool | str) -> Cluster | None:
        """What the cluster checks need, or None when the nodes are unknown (checks are then skipped)."""
        if not self.lb or not self.nodes:
            return None
        return Cluster(sp_url=self.url, lb_url=self.lb, nodes=dict(self.nodes), verify=verify)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "lb": self.lb, "nodes": dict(self.nodes)}


def estimate_cell_s(pattern: Pattern, warmup: float) -> float:
    """Warm-up plus runs × the time one journey takes at this concurrency, assuming a saturating target."""
    if hasattr(pattern, "duration"):  # an open-model level (openmodel.rates.Level): its own warm-up and length
        return pattern.warmup + pattern.duration
    per_journey = max(ESTIMATE_JOURNEY_S, pattern.users / ESTIMATE_CAPACITY_TPS)
    return warmup + pattern.runs * per_journey


def estimate_plan_s(plan: Plan) -> float:
    """Seconds one target takes for the whole plan, by the same rule as --dry-run."""
    return sum(estimate_cell_s(pattern, plan.warmup) for pattern, _ in plan.cells())


def plan_lines(targets: list[Target], plan: Plan, done: dict[str, set[tuple[str, int]]], *,
               lab_ups: list[tuple[str, float]], checks_done: set[str]) -> tuple[list[str], float]:
    """What --dry-run prints, and the estimated seconds; `lab_ups`: (what, estimated seconds) of each lab start."""
    cells = plan.cells()
    total = sum(seconds for _, seconds in lab_ups)
    lines = [f"{len(targets)} target(s) × {len(plan.patterns)} pattern(s) × {plan.repeat} repetition(s) = "
             f"{len(targets) * len(cells)} cells; warm-up {plan.warmup:g} s before each"]
    lines += [f"  {what} (~{seconds:g} s)" for what, seconds in lab_ups]
    for target in targets:
        todo = [(p, r) for p, r in cells if (p.label, r) not in done.get(target.name, set())]
        checks = "done" if target.name in checks_done else ("Tests 1-3" if target.nodes else "no node URLs: skipped")
        seconds = sum(estimate_cell_s(p, plan.warmup) for p, _ in todo)
        if target.nodes and target.name not in checks_done:
            seconds += ESTIMATE_CHECKS_S
        total += seconds
        runs = ", ".join(f"{p.label} r{r}" for p, r in todo) or "all done"
        skipped = len(cells) - len(todo)
        lines.append(f"  {target.name} ({target.url}): checks {checks}; cells {runs}"
                     + (f" ({skipped} done, skipped)" if skipped else "") + f"  ~{format_duration(seconds)}")
    lines.append(f"estimated duration: {format_duration(total)} (assumes ~{ESTIMATE_JOURNEY_S * 1000:g} ms per "
                 f"journey and at most {ESTIMATE_CAPACITY_TPS:g} journeys/s per target, the lab's capacity on "
                 "2 cores)")
    return lines, total


def format_duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m" if hours else (f"{minutes}m {secs:02d}s" if minutes else f"{secs}s")


class Campaign:
    """The campaign folder and its campaign.json."""

    def __init__(self, folder: Path, document: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.document = document
        self._lock: FolderLock | None = None  # held while this process writes the campaign

    @classmethod
    def create(cls, base: Path, campaign_id: str | None, config: dict[str, Any], versions: dict[str, Any],
               machine: dict[str, Any], *, overwrite: bool = False) -> Campaign:
        """A new campaign folder, locked; an existing `campaign_id` is refused unless `overwrite` (moved aside)."""
        hint = f"; continue it with --resume {Path(base) / campaign_id}" if campaign_id else ""
        folder, lock = claim(base, campaign_id, what="campaign id", existing=OVERWRITE if overwrite else NEW,
                             hint=hint)
        document = {"campaign_id": folder.name, "started": time.time(), "finished": None, "config": config,
                    "versions": versions, "machine": machine, "checks": {}, "cells": [], "errors": {}}
        campaign = cls(folder, document)
        campaign._lock = lock
        campaign.save()
        return campaign

    def lock(self) -> None:
        """Refuse (FolderBusy) when another process is writing this campaign, e.g. a second --resume."""
        if self._lock is None:
            self._lock = FolderLock(self.folder).acquire()

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @classmethod
    def load(cls, folder: Path) -> Campaign:
        """An existing campaign, to resume; raises FileNotFoundError or ValueError with a readable message."""
        path = Path(folder) / CAMPAIGN_FILE
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"{folder} is not a campaign folder (no {CAMPAIGN_FILE})") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {path}: {exc}") from None
        document["finished"] = None
        return cls(Path(folder), document)

    @property
    def runs(self) -> Path:
        return self.folder / RUNS_DIR

    def save(self) -> None:
        write_json_atomic(self.folder / CAMPAIGN_FILE, self.document)

    def done_cells(self, target: str) -> set[tuple[str, int]]:
        return {(cell["pattern"], cell["repetition"]) for cell in self.run_cells(target)}

    def run_cells(self, target: str) -> list[dict[str, Any]]:
        """The finished cells of a target, as its run folder's summary.json lists them (none yet: [])."""
        return self.run_document(target).get("cells") or []

    def run_document(self, target: str) -> dict[str, Any]:
        """A target's run folder's summary.json ({} before its first cell, or when unreadable)."""
        try:
            document = json.loads((self.runs / target / SUMMARY_FILE).read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return document if isinstance(document, dict) else {}

    def sync_cells(self, targets: list[str]) -> None:
        """campaign.json's cell list, rebuilt from the run folders."""
        self.document["cells"] = [
            {"backend": target, "pattern": cell["pattern"], "repetition": cell["repetition"],
             "status": "done" if cell.get("complete", True) else "cut short", "run": f"{RUNS_DIR}/{target}"}
            for target in targets for cell in self.run_cells(target)
        ]
        self.save()

    def record_checks(self, target: str, results: list[CheckResult]) -> None:
        self.document["checks"][target] = [{"test": r.test, "passed": r.passed, "evidence": r.evidence}
                                           for r in results]
        self.save()

    def record_lab_start(self, record: dict[str, Any]) -> None:
        """A lab `compare` brought up: its clusters, when, and how long it took (Keycloak's own time apart)."""
        self.document.setdefault("lab_starts", []).append(record)
        self.save()

    def record_error(self, target: str, message: str) -> None:
        self.document["errors"][target] = message
        self.save()

    def finish(self) -> None:
        self.document["finished"] = time.time()
        self.save()


@dataclass
class TargetRun:
    """How to load one target: what `execute_target` needs beyond the campaign itself."""

    target: Target
    account: Account  # for the cluster checks
    verify: bool | str
    run: Callable[[Path, Callable[[Any], None]], bool]  # (runs folder, listen) → complete; raises on failure


def execute_target(campaign: Campaign, item: TargetRun, plan: Plan, targets: list[str],
                   say: Callable[[str], None]) -> bool:
    """Checks (unless done), then the target's cells not done yet; returns False when something failed."""
    name = item.target.name
    cluster = item.target.cluster(item.verify)
    if cluster is not None and name not in campaign.document["checks"]:
        results = run_checks(cluster, item.account)
        campaign.record_checks(name, results)
        say(f"{name}: cluster checks " + " ".join(f"{r.test} {r.mark}" for r in results))
    todo = [cell for cell in plan.cells() if (cell[0].label, cell[1]) not in campaign.done_cells(name)]
    if not todo:
        say(f"{name}: all {len(plan.cells())} cells done")
        return True

    def listen(context: Any) -> None:
        context.events.cell_stop.add_listener(lambda cell: campaign.sync_cells(targets))

    say(f"\n== {name}: {len(todo)} cell(s)")
    complete = item.run(campaign.runs, listen)
    campaign.sync_cells(targets)
    return complete
