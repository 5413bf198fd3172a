"""A results folder (a campaign or a single run) read into plain data the report can lay out.

Reading is the only place that knows the on-disk layout (docs/results-layout.md); everything after it
works on `Results`. Cells a crash cut off (samples without an entry in summary.json) are summarised
from their samples here and marked incomplete, so later stages never look at the files again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from authbench.results.recorder import CAMPAIGN_FILE, RUNS_DIR, SAMPLES_FILE, SUMMARY_FILE, read_samples
from authbench.results.sample import Sample
from authbench.results.summary import Summary, average, split_runs, summarize

from ..errors import AuthbenchError
from ..prepared import TARGET_NAME

DONE, CUT_SHORT, INCOMPLETE, STOPPED = "done", "cut short", "incomplete", "stopped by the user"
WRITE_CUT = "cut by a write error"  # the results folder refused a write (a full disk): the run stopped in it


class ReportError(AuthbenchError):
    """Bad input: the message says what is wrong and what to do (the CLI prints it as one line)."""


@dataclass
class Cell:
    """One pattern × repetition of one backend, with its figures and how far it got."""

    backend: str
    pattern: str
    repetition: int
    summary: Summary
    status: str = DONE  # DONE, CUT_SHORT (time limit), INCOMPLETE (killed during it), STOPPED (by a person), WRITE_CUT
    resources: dict[str, Any] | None = None
    degraded: dict[str, Any] | None = None  # a lost worker's users and journeys (distributed runs)
    open: dict[str, Any] | None = None  # an open-model level's rates, starts and two latencies (openmodel)
    journeys: dict[str, Summary] = field(default_factory=dict)  # a --mix: each journey's own (results.journeys)

    @property
    def threads(self) -> int:
        return threads_of(self.pattern)

    @property
    def counted(self) -> bool:
        """Whether its figures enter averages: not when the time limit, a signal or a person cut it (partial)."""
        return self.status == DONE

    @property
    def remarks(self) -> str:
        """What follows the cell's name in every table and plot: how it ended, if not normally, and a lost worker."""
        return ("" if self.status == DONE else f" ({self.status})") + (" (degraded)" if self.degraded else "")


@dataclass
class Run:
    """One backend's run folder: its cells in order and every sample (for the plots)."""

    backend: str
    folder: Path
    document: dict[str, Any]  # summary.json as written
    cells: list[Cell]
    samples: list[Sample]

    def averages(self) -> dict[str, Summary]:
        """Pattern → average over its repetitions; incomplete cells are left out (their figures are partial)."""
        groups: dict[str, list[Summary]] = {}
        for cell in self.cells:
            if cell.counted:
                groups.setdefault(cell.pattern, []).append(cell.summary)
        return {pattern: average(items) for pattern, items in groups.items()}


@dataclass
class Results:
    folder: Path
    kind: str  # "campaign" or "run"
    name: str
    started: float | None
    finished: float | None
    config: dict[str, Any]  # campaign config, or the run's summary.json config
    plan: dict[str, Any]
    versions: dict[str, Any]
    machine: dict[str, Any]
    runs: dict[str, Run]
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lab_starts: list[dict[str, Any]] = field(default_factory=list)  # the labs a campaign brought up (compare_lab)

    @property
    def cells(self) -> list[Cell]:
        return [cell for run in self.runs.values() for cell in run.cells]

    @property
    def patterns(self) -> list[str]:
        """Patterns in plan order, then any others the cells hold."""
        ordered = list(self.plan.get("patterns") or [])
        ordered += [c.pattern for c in self.cells if c.pattern not in ordered]
        return sorted(dict.fromkeys(ordered), key=lambda p: (threads_of(p), ordered.index(p)))


def threads_of(pattern: str) -> int:
    """The users (threads) of a 'USERSxRUNS' pattern; 0 when the label is not one."""
    head = pattern.partition("x")[0]
    return int(head) if head.isdigit() else 0


def load(folder: Path) -> Results:
    """Read a campaign folder or a run folder; ReportError names what is missing or unreadable."""
    try:
        return _load(Path(folder))
    except OSError as exc:  # a folder or file we may not read: bad input, not a crash
        raise ReportError(f"cannot read {exc.filename or folder}: {exc.strerror or exc}") from None


def _load(folder: Path) -> Results:
    if not folder.is_dir():
        raise ReportError(f"{folder} is not a folder; give a results folder (results/<id>)")
    if (folder / CAMPAIGN_FILE).is_file():
        return _campaign(folder)
    if (folder / SUMMARY_FILE).is_file():
        run = _run(folder, _target_label(folder))
        doc = run.document
        return Results(folder, "run", folder.name, doc.get("started"), doc.get("finished"), doc.get("config") or {},
                       doc.get("plan") or {}, doc.get("versions") or {}, doc.get("machine") or {}, {run.backend: run})
    members = sorted(p for p in folder.iterdir() if (p / SUMMARY_FILE).is_file())
    if members:  # several runs side by side, e.g. `authbench run --results DIR --run-id <backend>` per backend
        return _side_by_side(folder, members)
    raise ReportError(f"{folder} is not a results folder: it has neither {CAMPAIGN_FILE} nor {SUMMARY_FILE} "
                      "(nor run folders); give the folder 'authbench run' or 'authbench compare' wrote")


def _side_by_side(folder: Path, members: list[Path]) -> Results:
    """Runs in one folder, compared like a campaign's backends (no cluster checks: none were stored)."""
    loaded = sorted((_run(p, p.name) for p in members), key=lambda r: (r.document.get("started") or 0, r.backend))
    runs = {run.backend: run for run in loaded}  # in the order they ran
    docs = [run.document for run in runs.values()]
    first = docs[0]
    patterns = list(dict.fromkeys(p for doc in docs for p in (doc.get("plan") or {}).get("patterns") or []))
    finished = [doc.get("finished") for doc in docs]
    return Results(folder, "set of runs", folder.name, min((d.get("started") or 0 for d in docs), default=None),
                   None if None in finished else max(finished), {}, {**(first.get("plan") or {}), "patterns": patterns},
                   first.get("versions") or {}, first.get("machine") or {}, runs)


def _campaign(folder: Path) -> Results:
    doc = _json(folder / CAMPAIGN_FILE)
    config = doc.get("config") or {}
    backends = list(config.get("backends") or [])
    runs_dir = folder / RUNS_DIR
    if runs_dir.is_dir():
        backends += sorted(p.name for p in runs_dir.iterdir() if p.is_dir() and p.name not in backends)
    runs = {b: _run(runs_dir / b, b) for b in backends if (runs_dir / b / SUMMARY_FILE).is_file()}
    plan = {"patterns": config.get("patterns") or [], "warmup_s": config.get("warmup_s"),
            "repeat": config.get("repeat")}
    return Results(folder, "campaign", str(doc.get("campaign_id") or folder.name), doc.get("started"),
                   doc.get("finished"), config, plan, doc.get("versions") or {}, doc.get("machine") or {}, runs,
                   checks=doc.get("checks") or {}, lab_starts=doc.get("lab_starts") or [])


def _run(folder: Path, backend: str) -> Run:
    doc = _json(folder / SUMMARY_FILE)
    samples: list[Sample] = []
    if (folder / SAMPLES_FILE).is_file():
        try:
            samples = list(read_samples(folder / SAMPLES_FILE))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ReportError(f"cannot read {folder / SAMPLES_FILE}: {exc}") from None
    cells = []
    listed = set()
    for entry in doc.get("cells") or []:
        try:
            summary = Summary.from_dict(entry["summary"])
            key = (str(entry["pattern"]), int(entry["repetition"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"{folder / SUMMARY_FILE}: a cell lacks {exc}; the file is damaged") from None
        listed.add(key)
        status = DONE if entry.get("complete", True) else CUT_SHORT
        journeys = {str(name): Summary.from_dict(data) for name, data in (entry.get("journeys") or {}).items()}
        cells.append(Cell(backend, key[0], key[1], summary, status, entry.get("resources"), entry.get("degraded"),
                          entry.get("open"), journeys))
    ended = doc.get("interrupted") or {}
    status = WRITE_CUT if doc.get("write_error") else STOPPED if ended.get("by_user") else INCOMPLETE
    for (pattern, repetition), group in split_runs(samples).items():
        if (pattern, repetition) not in listed:  # the run ended during this cell: its figures come from its samples
            summary = summarize(group)
            summary.pattern, summary.repetition = pattern, repetition
            named = sorted({sample.journey for sample in group if sample.journey})
            journeys = {name: summarize(s for s in group if s.journey == name) for name in named}
            cells.append(Cell(backend, pattern, repetition, summary, status, journeys=journeys))
    return Run(backend, folder, doc, cells, samples)


def clean_url(url: str) -> str:
    """A URL without user info, query or fragment: where a token or password could hide."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc += f":{parts.port}"
    except ValueError:
        return "(unreadable URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _target_label(folder: Path) -> str:
    """A single run is named as the user named its target (lab:memcached), else by the URL it loaded (results
    written before the name was recorded), not by its run id."""
    try:
        config = _json(folder / SUMMARY_FILE).get("config") or {}
    except ReportError:
        config = {}
    if config.get(TARGET_NAME):
        return str(config[TARGET_NAME])
    target = config.get("target")
    return clean_url(str(target)) if target else folder.name


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path} is not valid JSON ({exc}); was it damaged or cut short?") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path} holds no JSON object; it is not an authbench results file")
    return data
