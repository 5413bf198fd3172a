"""A headless run writes its samples and summaries as it goes, and summarises exactly."""

from __future__ import annotations

import json

from test_runner import CountingUser

from authbench.headless import execute
from authbench.patterns import parse_plan
from authbench.results.recorder import read_samples


def test_run_writes_samples_and_summary(tmp_path):
    lines = []
    report = execute(parse_plan("2x50,3x10", "0.2s", 2), CountingUser, None, config={"target": "none"},
                     results_base=tmp_path, run_id="test-run", say=lines.append)
    assert report.complete and report.run_dir == tmp_path / "test-run"
    samples = list(read_samples(report.run_dir / "samples.csv"))
    measured = [s for s in samples if s.phase == "measured"]
    assert len(measured) == 2 * (100 + 30)
    assert any(s.phase == "warmup" for s in samples)  # kept, marked, in the raw samples
    document = json.loads((report.run_dir / "summary.json").read_text())
    assert [c["summary"]["tests"] for c in document["cells"]] == [100, 100, 30, 30]
    assert document["finished"] and set(document["averages"]) == {"2x50", "3x10"}
    assert document["plan"] == {"patterns": ["2x50", "3x10"], "warmup_s": 0.2, "repeat": 2}
    assert len(lines) == 4 and lines[0].startswith("2x50 #1: 100 tests")
