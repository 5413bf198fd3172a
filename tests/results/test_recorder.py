"""The recorder keeps every measured row through a crash; the reader tolerates exactly a partial last line."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from authbench.results.recorder import (
    COLUMNS,
    SAMPLES_FILE,
    SUMMARY_FILE,
    Recorder,
    header_problem,
    new_run_id,
    read_samples,
    results_dir,
)
from authbench.results.sample import ERROR, MEASURED, OK, WARMUP, Sample
from authbench.results.writes import RESERVE_FILE

KILL_AFTER_S = 0.3
CHILD_MAX_ROWS = 100_000
CHILD_MAX_SECONDS = 10


def sample(i: int, **changes: object) -> Sample:
    # Values with at most 6 (start) and 3 (duration) decimals survive the CSV round trip exactly.
    fields: dict[str, object] = dict(
        start=1795264764.125 + i,
        duration_ms=12.5 + i,
        user=i % 3,
        iteration=i,
        outcome=OK,
        reason="",
        phase=MEASURED,
        pattern="10x200",
        repetition=1,
        account=f"user{i:04d}",
    )
    fields.update(changes)
    return Sample(**fields)  # type: ignore[arg-type]


def write_rows(run_dir: Path, samples: list[Sample], target: str = "") -> Path:
    with Recorder(run_dir, target) as recorder:
        for s in samples:
            recorder.record(s)
    return run_dir / SAMPLES_FILE


def test_round_trip_with_header_and_awkward_text(tmp_path: Path) -> None:
    samples = [
        sample(0),
        sample(1, outcome=ERROR, reason='idp said "no", then 500', phase=WARMUP),
        sample(2, outcome=ERROR, reason="line one\nline two", account="o'brien, pat", detail='ACS: 403 "x", y'),
        sample(3, pattern="", repetition=0, account=""),
        sample(4, worker="node1_5f3a"),
        sample(5, session="lost"),
        sample(6, journey="returning-sso"),
    ]
    path = write_rows(tmp_path / "run", samples, target="https://sp.example/secure/")
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[1] == ("1795264764.125000,2026-11-21T12:39:24.125Z,12.500,0,0,ok,,measured,10x200,1,user0000,"
                        "https://sp.example/secure/,,,,")
    assert lines[-3].endswith(",https://sp.example/secure/,node1_5f3a,,,")
    assert lines[-2].endswith(",https://sp.example/secure/,,,lost,")
    assert lines[-1].endswith(",https://sp.example/secure/,,,,returning-sso")
    assert list(read_samples(path)) == samples


def test_iso_column_matches_start(tmp_path: Path) -> None:
    path = write_rows(tmp_path, [sample(0, start=0.25), sample(1, start=86400.999)])
    rows = [line.split(",") for line in path.read_text().splitlines()[1:]]
    assert rows[0][:3] == ["0.250000", "1970-01-01T00:00:00.250Z", "12.500"]
    assert rows[1][1] == "1970-01-02T00:00:00.999Z"


def test_each_row_is_on_disk_before_record_returns(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    try:
        for i in range(3):
            recorder.record(sample(i))
            # Another reader sees the row while the recorder is still open: nothing waits in a buffer.
            assert [s.iteration for s in read_samples(tmp_path / SAMPLES_FILE)] == list(range(i + 1))
    finally:
        recorder.close()


def test_truncated_anywhere_in_last_line_keeps_all_complete_rows(tmp_path: Path) -> None:
    samples = [sample(i) for i in range(4)] + [sample(4, account="usér-名前")]  # cuts split characters too
    full = write_rows(tmp_path / "run", samples).read_bytes()
    last_line_start = full.rstrip(b"\n").rfind(b"\n") + 1
    for cut in range(last_line_start, len(full) + 1):
        path = tmp_path / f"cut{cut}.csv"
        path.write_bytes(full[:cut])  # what a kill -9 in the middle of the last write leaves
        expected = samples if cut == len(full) else samples[:-1]
        assert list(read_samples(path)) == expected, cut


def test_truncated_inside_quoted_field_is_dropped(tmp_path: Path) -> None:
    samples = [sample(0), sample(1, outcome=ERROR, reason="first\nsecond")]
    full = write_rows(tmp_path, samples).read_bytes()
    for marker in (b"first\n", b"first"):
        path = tmp_path / "cut.csv"
        path.write_bytes(full[: full.index(marker) + len(marker)])
        assert list(read_samples(path)) == samples[:1]


def test_partial_header_or_empty_file_reads_as_no_samples(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    for content in (b"", b"start,time,dur"):
        path.write_bytes(content)
        assert list(read_samples(path)) == []


def test_damage_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    path = write_rows(tmp_path, [sample(i) for i in range(3)])
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:20] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=r":3: bad sample row"):
        list(read_samples(path))


def test_not_a_samples_file(tmp_path: Path) -> None:
    path = tmp_path / SAMPLES_FILE
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing columns"):
        list(read_samples(path))
    assert "are not authbench's" in header_problem(path)  # what resuming such a folder says
    with pytest.raises(ValueError, match="use a new run directory"):
        Recorder(tmp_path)  # nor appends to one
    assert path.read_text() == "a,b\n1,2\n"  # untouched


def test_reopening_after_a_kill_cuts_the_partial_line_and_appends(tmp_path: Path) -> None:
    path = write_rows(tmp_path, [sample(i) for i in range(3)])
    path.write_bytes(path.read_bytes()[:-7])
    write_rows(tmp_path, [sample(10), sample(11)])
    assert [s.iteration for s in read_samples(path)] == [0, 1, 10, 11]
    assert path.read_text().count("start,") == 1  # no second header


def test_threads_share_one_recorder(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)

    def work(user: int) -> None:
        for i in range(250):
            recorder.record(sample(i, user=user))

    threads = [threading.Thread(target=work, args=(u,)) for u in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.close()
    rows = list(read_samples(tmp_path / SAMPLES_FILE))
    assert recorder.count == len(rows) == 1000
    assert sorted((s.user, s.iteration) for s in rows) == [(u, i) for u in range(4) for i in range(250)]


def test_summary_is_replaced_atomically(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    recorder.write_summary({"runs": [1]})
    recorder.write_summary({"runs": [1, 2]})
    assert json.loads((tmp_path / SUMMARY_FILE).read_text()) == {"runs": [1, 2]}
    with pytest.raises(TypeError):
        recorder.write_summary({"runs": object()})  # fails half way through serialising
    assert json.loads((tmp_path / SUMMARY_FILE).read_text()) == {"runs": [1, 2]}
    # no temp files left; the reserve (results.writes) holds room for the last summary.json until the run ends
    assert sorted(p.name for p in tmp_path.iterdir()) == [RESERVE_FILE, SAMPLES_FILE, SUMMARY_FILE]
    assert (tmp_path / SUMMARY_FILE).stat().st_mode & 0o777 == 0o644
    recorder.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [SAMPLES_FILE, SUMMARY_FILE]


def test_results_dir_default_ids_sort_by_time(tmp_path: Path) -> None:
    first = results_dir(tmp_path / "results")
    second = results_dir(tmp_path / "results")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == tmp_path / "results"
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", first.name)
    earlier, later = new_run_id(1_700_000_000), new_run_id(1_800_000_000)
    assert earlier < later
    assert new_run_id(0).startswith("19700101-000000-")


def test_results_dir_given_id(tmp_path: Path) -> None:
    path = results_dir(tmp_path, "shib-2node")
    assert path == tmp_path / "shib-2node" and path.is_dir()
    assert results_dir(tmp_path, "shib-2node") == path  # resuming a run reuses its directory
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(ValueError):
            results_dir(tmp_path, bad)


CHILD = r"""
import os, sys, time
from pathlib import Path
from authbench.results.recorder import Recorder
from authbench.results.sample import Sample

recorder = Recorder(Path(sys.argv[1]))
max_rows, deadline = int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
i = 0
while i < max_rows and time.monotonic() < deadline:
    recorder.record(Sample(start=1e9 + i, duration_ms=1.5, user=0, iteration=i, outcome="ok", reason="",
                           phase="measured", pattern="1x1", repetition=1, account="user%d" % i))
    i += 1
    os.write(1, b"%d\n" % i)  # confirmed: record() has returned, so this row is in the file
"""


def test_kill_9_loses_no_confirmed_row(tmp_path: Path) -> None:
    args = [sys.executable, "-c", CHILD, str(tmp_path), str(CHILD_MAX_ROWS), str(CHILD_MAX_SECONDS)]
    child = subprocess.Popen(args, stdout=subprocess.PIPE)
    confirmed: list[int] = []
    started = threading.Event()

    def drain() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.endswith(b"\n"):
                confirmed.append(int(line))
                started.set()

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        assert started.wait(CHILD_MAX_SECONDS), "child never recorded a row"
        time.sleep(KILL_AFTER_S)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        reader.join()
    assert child.returncode == -signal.SIGKILL, "child finished before the kill: the test proved nothing"
    rows = list(read_samples(tmp_path / SAMPLES_FILE))
    # Every confirmed row is there; at most one more (written, killed before it could confirm).
    assert confirmed[-1] <= len(rows) <= confirmed[-1] + 1
    assert [s.iteration for s in rows] == list(range(len(rows)))


def test_files_without_the_later_columns_are_read(tmp_path: Path) -> None:
    """samples.csv from before `time`, `detail` and `session` existed: read by name, those left empty."""
    path = tmp_path / SAMPLES_FILE
    path.write_text("start,duration_ms,user,iteration,outcome,reason,phase,pattern,repetition,account\n"
                    "1795264764.125,12.5,0,0,ok,,measured,10x200,1,user0000\n")
    [old] = read_samples(path)
    assert (old.account, old.detail, old.session) == ("user0000", "", "")


def test_appending_to_a_file_of_an_older_layout_brings_it_to_todays(tmp_path: Path) -> None:
    """A run resumed after an upgrade: its old rows keep their values, the new columns empty, one header."""
    path = write_rows(tmp_path, [sample(0), sample(1)])
    rows = path.read_text().splitlines()
    old_width = COLUMNS.index("detail")  # the layout before `detail` and `session`
    path.write_text("".join(",".join(row.split(",")[:old_width]) + "\n" for row in rows))
    write_rows(tmp_path, [sample(2)])
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 4
    assert [s.iteration for s in read_samples(path)] == [0, 1, 2]
