"""Writes samples as the run goes, so a crashed or killed run keeps everything it had measured.

`samples.csv` gets one flushed row per finished journey (no fsync: the data only has to outlive the
process, not the machine), `summary.json` is replaced atomically after every pattern × repetition.
The reader accepts the one kind of damage a `kill -9` can do: a partial last line. A write the folder
refuses (a full disk) stops the run instead (results.writes), and leaves no partial row.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from authbench.names import safe_name
from authbench.results.sample import Sample
from authbench.results.writes import SpaceReserve, WriteGuard

SAMPLES_FILE = "samples.csv"
SUMMARY_FILE = "summary.json"
CAMPAIGN_FILE = "campaign.json"  # a campaign folder (docs/results-layout.md) …
RUNS_DIR = "runs"  # … and the folder of its run folders
SUMMARY_MODE = 0o644
COLUMNS = (
    "start",
    "time",
    "duration_ms",
    "user",
    "iteration",
    "outcome",
    "reason",
    "phase",
    "pattern",
    "repetition",
    "account",
    "target",  # the run's target (URL or campaign target name): combined files stay separable
    "worker",  # the distributed worker that ran the journey ("" when local)
    "detail",
    "session",
    "journey",  # --mix: the journey's name in the mix ("" for a run of one journey)
)
# older files lack these; read all the same
OPTIONAL_COLUMNS = ("time", "target", "worker", "detail", "session", "journey")
RUN_ID_TIME_FORMAT = "%Y%m%d-%H%M%S"  # UTC, so ids sort in run order whatever the host's time zone
RUN_ID_SUFFIX_BYTES = 2  # 4 hex digits: two runs started in the same second still get distinct ids
RUN_ID_ATTEMPTS = 20
_ISO_SECOND_FORMAT = "%Y-%m-%dT%H:%M:%S"
_SCAN_BLOCK = 64 * 1024


class Recorder:
    """Appends samples to `<run_dir>/samples.csv`, one row per write(2) call, and replaces summary.json.

    Safe to share between threads and greenlets (one lock around the write). Opening an existing file
    appends to it, after cutting off a partial last line a killed writer may have left. A write the folder
    refuses goes to `guard` (results.writes: the run stops; without one it is only remembered there) and
    leaves no partial row; later rows are counted in `unwritten`, not written.
    """

    def __init__(self, run_dir: Path, target: str = "", guard: WriteGuard | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.target = target
        self.guard = guard or WriteGuard(detached=True)
        self.samples_path = self.run_dir / SAMPLES_FILE
        self.summary_path = self.run_dir / SUMMARY_FILE
        self.reserve = SpaceReserve(self.run_dir)
        self._lock = threading.Lock()
        self._iso_second = -1
        self._iso_prefix = ""
        self._line = io.StringIO()
        self._writer = csv.writer(self._line, lineterminator="\n")
        self._fd = -1
        self.count = 0  # rows written by this Recorder (not counting an appended-to file's earlier rows)
        self.unwritten = 0  # rows that came after a write error
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            _drop_partial_last_line(self.samples_path)
            if self.samples_path.exists() and self.samples_path.stat().st_size:
                upgrade_header(self.samples_path)
            self._fd = os.open(self.samples_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, SUMMARY_MODE)
            self._size = os.fstat(self._fd).st_size
        except OSError as exc:
            self.close()
            self.guard.failed(Path(exc.filename or self.samples_path), exc)
            raise
        if self._size == 0:
            self._append(COLUMNS)

    def record(self, sample: Sample) -> None:
        """Append one row and hand it to the OS before returning, so a killed process loses nothing."""
        start = sample.start
        with self._lock:
            if self._fd < 0 or self.guard.failure is not None:
                self.unwritten += 1
                return
            if self._append(
                (
                    f"{start:.6f}",
                    self._iso(start),
                    f"{sample.duration_ms:.3f}",
                    sample.user,
                    sample.iteration,
                    sample.outcome,
                    sample.reason,
                    sample.phase,
                    sample.pattern,
                    sample.repetition,
                    sample.account,
                    self.target,
                    sample.worker,
                    sample.detail,
                    sample.session,
                    sample.journey,
                )
            ):
                self.count += 1
            else:
                self.unwritten += 1

    def _append(self, row: tuple[Any, ...]) -> bool:
        """One whole row or none: a short write (a full disk) is cut back, so the file stays valid."""
        self._line.seek(0)
        self._line.truncate()
        self._writer.writerow(row)
        data = self._line.getvalue().encode("utf-8")
        try:
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            with contextlib.suppress(OSError):  # else the reader drops a partial last line all the same
                os.ftruncate(self._fd, self._size)
            self.guard.failed(self.samples_path, exc)
            return False
        self._size += written
        return True

    def write_summary(self, data: dict[str, Any]) -> None:
        """Replace `summary.json` in one step: readers see the old file or the new one, never half of one.
        The reserve grows with it, so that the last one can still be written on a full disk."""
        text = _json_text(data)
        try:
            write_text_atomic(self.summary_path, text)
            self.reserve.fit(len(text.encode("utf-8")))
        except OSError as exc:
            self.guard.failed(self.summary_path, exc)
            raise

    def write_last_summary(self, data: dict[str, Any]) -> OSError | None:
        """The run's last summary.json, after a write error or a signal: the reserve is given up for it; the
        error, if even that failed."""
        try:
            self.reserve.free()
            write_text_atomic(self.summary_path, _json_text(data))
        except OSError as exc:
            return exc
        return None

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        with contextlib.suppress(OSError):  # a folder gone read-only: the reserve stays, as zeros
            self.reserve.free()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _iso(self, start: float) -> str:
        # strftime costs a few µs; it only changes once a second, so only the milliseconds are formatted per row.
        second, millis = divmod(round(start * 1000), 1000)  # rounded, not truncated: 0.999 stays .999
        if second != self._iso_second:
            self._iso_second = second
            self._iso_prefix = time.strftime(_ISO_SECOND_FORMAT, time.gmtime(second))
        return f"{self._iso_prefix}.{millis:03d}Z"


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write JSON next to `path`, fsync it, then rename over `path` (rare call: the fsync is affordable)."""
    write_text_atomic(path, _json_text(data))


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n"


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, SUMMARY_MODE)  # mkstemp makes it private; a summary is meant to be shared
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def keep_cells(path: Path, cells: set[tuple[str, int]]) -> int:
    """Drop the rows of every cell not in `cells` (pattern label, repetition); returns the rows dropped.

    Before a resumed run measures an interrupted cell again, its first attempt's rows must go, so
    that every row belongs to exactly one finished cell.
    """
    path = Path(path)
    if not path.exists():
        return 0
    _drop_partial_last_line(path)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return 0
    index = _column_index(rows[0], path)
    kept = [rows[0], *(row for row in rows[1:]
                       if (row[index["pattern"]], int(row[index["repetition"]])) in cells)]
    if len(kept) == len(rows):
        return 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as tmp:
        csv.writer(tmp, lineterminator="\n").writerows(kept)
    os.chmod(tmp_name, SUMMARY_MODE)
    os.replace(tmp_name, path)
    return len(rows) - len(kept)


def read_samples(path: Path) -> Iterator[Sample]:
    """Yield the samples of a `samples.csv`, skipping a last row cut short by a killed writer.

    The last row counts only if the file ends in a newline (and it parses); damage anywhere else is real
    corruption and raises ValueError naming the line, rather than being skipped silently.
    """
    path = Path(path)
    complete = _ends_with_newline(path)
    # A cut can split a multi-byte character; only the dropped partial line can hold one.
    with path.open(newline="", encoding="utf-8", errors="strict" if complete else "replace") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        row = next(reader, None)
        if header is None or (row is None and not complete):
            return  # empty, or killed while writing the header
        index = _column_index(header, path)
        while row is not None:
            line = reader.line_num
            following = next(reader, None)
            if following is not None:
                yield _parse(row, index, path, line)
            elif complete:
                try:
                    sample = _parse(row, index, path, line)
                except ValueError:
                    return  # cut inside a quoted field right after an embedded newline: still a partial row
                yield sample
            row = following


def results_dir(base: Path, run_id: str | None = None) -> Path:
    """Create and return `base/<run-id>/`; `base` is the results root (e.g. `Path("results")`).

    The default id is `YYYYmmdd-HHMMSS-xxxx` (UTC time, 4 random hex digits), so `ls` lists runs in the
    order they started. A given run id may already exist (the recorder then appends to it); a generated
    one never reuses a directory.
    """
    base = Path(base)
    base.mkdir(parents=True, exist_ok=True)
    if run_id is not None:
        path = base / safe_name(run_id, "run id")
        path.mkdir(exist_ok=True)
        return path
    for _ in range(RUN_ID_ATTEMPTS):
        path = base / new_run_id()
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free run id under {base} after {RUN_ID_ATTEMPTS} attempts")


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime(RUN_ID_TIME_FORMAT, time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(RUN_ID_SUFFIX_BYTES)}"


def _column_index(header: list[str], path: Path) -> dict[str, int]:
    # By name, so columns added later (or reordered) do not break reading old or new files.
    index = {name: i for i, name in enumerate(header)}
    missing = [name for name in COLUMNS if name not in OPTIONAL_COLUMNS and name not in index]
    if missing:
        raise ValueError(f"{path}: not a samples file, missing columns {', '.join(missing)}")
    return index


def _parse(row: list[str], index: dict[str, int], path: Path, line: int) -> Sample:
    try:
        return Sample(
            start=float(row[index["start"]]),
            duration_ms=float(row[index["duration_ms"]]),
            user=int(row[index["user"]]),
            iteration=int(row[index["iteration"]]),
            outcome=row[index["outcome"]],
            reason=row[index["reason"]],
            phase=row[index["phase"]],
            pattern=row[index["pattern"]],
            repetition=int(row[index["repetition"]]),
            account=row[index["account"]],
            worker=row[index["worker"]] if "worker" in index else "",
            detail=row[index["detail"]] if "detail" in index else "",
            session=row[index["session"]] if "session" in index else "",
            journey=row[index["journey"]] if "journey" in index else "",
        )
    except (IndexError, ValueError) as e:
        raise ValueError(f"{path}:{line}: bad sample row {row!r}: {e}") from e


def header_problem(path: Path) -> str | None:
    """Why rows of today's layout cannot be appended to `path`, or None (also when it is missing or older)."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), None)
    except FileNotFoundError:
        return None
    if header is None or list(COLUMNS[:len(header)]) == header:
        return None
    return f"{path}: its columns {header} are not authbench's ({', '.join(COLUMNS)}); use a new run directory"


def upgrade_header(path: Path) -> bool:
    """Bring a samples file written by an older authbench (today's columns, fewer at the end) to today's
    layout, the new columns empty, so a resumed run appends rows of one layout; True when it was rewritten.
    Refuses (ValueError) a file whose columns are not authbench's: one file, one layout."""
    problem = header_problem(path)
    if problem:
        raise ValueError(problem)
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header is None or len(header) == len(COLUMNS):
            return False
        missing = [""] * (len(COLUMNS) - len(header))
        partial = path.with_name(path.name + ".upgrading")
        with partial.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows([*row, *missing] for row in rows)
    os.replace(partial, path)  # whole or not at all
    return True


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _drop_partial_last_line(path: Path) -> None:
    """Cut a killed writer's partial last line so the next row does not get glued onto it."""
    if not path.exists() or _ends_with_newline(path):
        return
    with path.open("r+b") as f:
        end = f.seek(0, os.SEEK_END)
        while end > 0:  # scan back in blocks: the file may be large, the partial line is short
            begin = max(0, end - _SCAN_BLOCK)
            f.seek(begin)
            newline = f.read(end - begin).rfind(b"\n")
            if newline >= 0:
                f.truncate(begin + newline + 1)
                return
            end = begin
        f.truncate(0)
