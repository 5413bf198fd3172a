"""Evidence of failed journeys: the first few of each reason, kept under `<run>/failures/`.

A table of 100 % errors says nothing an operator can act on; the trail of one failing journey and the
page it ended on usually say everything. Users build `Evidence` only when `FailureBudget.wants` says the
reason still needs examples (so a run failing a thousand times a second pays for three); the
`FailureKeeper` writes them, as the run goes, and lists them for summary.json, the console and the report.
Nothing kept holds a secret: trails carry no query strings, pages are redacted (`journeys.trail`).
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .writes import WriteGuard

FAILURES_DIR = "failures"
DEFAULT_KEEP = 3  # failing journeys kept per reason (--keep-failures)
MAX_DETAIL_CHARS = 300  # samples.csv's detail column is a pointer, not a page


@dataclass(frozen=True)
class Evidence:
    reason: str
    detail: str  # the step and the page (status, title, URL without query)
    account: str  # the user name, never a password
    trail: list[str]  # journeys.trail.Trail.lines()
    page_html: str = ""  # the last page, redacted
    page_url: str = ""  # without query

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


class FailureBudget:
    """How many more examples each failure reason wants, in one process (a worker has its own)."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.keep = keep
        self._taken: Counter[str] = Counter()

    def wants(self, reason: str) -> bool:
        """True (and counted) while `reason` has had fewer than `keep` examples."""
        if self._taken[reason] >= self.keep:
            return False
        self._taken[reason] += 1
        return True


def slug(reason: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-") or "unknown"


def example_name(reason: str, number: int) -> str:
    """The file (in FAILURES_DIR) of a reason's n-th example: its trail; the page is the same stem in .html."""
    return f"{slug(reason)}-{number}.txt"


def short_detail(step: str, detail: str) -> str:
    """samples.csv's detail: where the journey stopped and on which page."""
    text = f"{step}: {detail}" if step else detail
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS - 1] + "…"


class FailureKeeper:
    """Writes the first `keep` pieces of evidence per reason under `run_dir/failures/`; a write the folder
    refuses goes to `guard` (results.writes: the run stops) and nothing more is written."""

    def __init__(self, run_dir: Path, keep: int = DEFAULT_KEEP, guard: WriteGuard | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.keep = keep
        self.guard = guard or WriteGuard(detached=True)
        self.examples: dict[str, list[str]] = {}  # reason → paths relative to run_dir
        existing = self.run_dir / FAILURES_DIR
        if existing.is_dir():  # a resumed run keeps what it had
            for path in sorted(existing.glob("*.txt")):
                reason = _reason_of(path)
                if reason:
                    self.examples.setdefault(reason, []).append(f"{FAILURES_DIR}/{path.name}")

    def keep_evidence(self, evidence: Evidence, **_kwargs: Any) -> None:
        """A RunEvents.failure listener."""
        kept = self.examples.setdefault(evidence.reason, [])
        if len(kept) >= self.keep or self.guard.failure is not None:
            return
        folder = self.run_dir / FAILURES_DIR
        stem = example_name(evidence.reason, len(kept) + 1).removesuffix(".txt")
        lines = [f"reason: {evidence.reason}", f"detail: {evidence.detail}", f"account: {evidence.account}", "",
                 "trail:", *evidence.trail]
        path = folder
        try:
            folder.mkdir(exist_ok=True)
            if evidence.page_html:
                path = folder / f"{stem}.html"
                path.write_text(evidence.page_html, encoding="utf-8")
                lines += ["", f"last page: {stem}.html ({evidence.page_url}, redacted)"]
            path = folder / f"{stem}.txt"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            if path.suffix == ".txt":  # a partial trail would be listed when the run is resumed
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            self.guard.failed(path, exc)
            return
        kept.append(f"{FAILURES_DIR}/{stem}.txt")


def _reason_of(path: Path) -> str:
    first = path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    return first.removeprefix("reason: ") if first.startswith("reason: ") else ""


def failures_section(reasons: dict[str, int], examples: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """summary.json's `failures`: for each reason, the measured count and where its examples are."""
    names = list(reasons) + [r for r in examples if r not in reasons]
    return {reason: {"journeys": reasons.get(reason, 0), "examples": examples.get(reason, [])} for reason in names}


def format_failures(section: dict[str, dict[str, Any]], run_dir: Path) -> list[str]:
    """The console's footnote under the table: each reason and the path of its first example."""
    lines = []
    for reason, entry in section.items():
        where = f" — e.g. {run_dir / entry['examples'][0]}" if entry["examples"] else ""
        lines.append(f"  {reason}: {entry['journeys']} measured{where}")
    return ["failures:", *lines] if lines else []
