"""Findings and caveats follow the data: change a figure or a check, and the sentence changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from authbench.report.findings import GROWTH_PCT, TIE_PCT, caveats, findings
from authbench.report.load import Results, load
from authbench.results.summary import SAMPLES_FOR_PERCENTILE

CAMPAIGN = Path(__file__).parent / "fixtures" / "campaign"


@pytest.fixture
def results() -> Results:
    return load(CAMPAIGN)


def set_tps(results: Results, backend: str, pattern: str, tps: float) -> None:
    for cell in results.runs[backend].cells:
        if cell.pattern == pattern:
            cell.summary.tps = tps


def test_fastest_backend_per_concurrency_follows_tps(results):
    set_tps(results, "terracotta", "2x20", 80.0)
    set_tps(results, "memcached", "2x20", 40.0)
    set_tps(results, "stateless", "2x20", 20.0)
    expected = ("At 2 threads (2x20) terracotta has the highest TPS (80.00), 100% above memcached (40.00); every "
                "repetition above memcached's.")
    assert expected in findings(results)
    set_tps(results, "stateless", "2x20", 90.0)
    expected = "At 2 threads (2x20) stateless has the highest TPS (90.00), 12% above terracotta (80.00); every"
    assert any(f.startswith(expected) for f in findings(results))


def test_a_winner_is_named_only_beyond_the_repetitions_spread(results):
    # The 2012-style trap: averages 36 % apart, repetitions overlapping.
    for backend, values in (("memcached", (89.1, 53.2)), ("stateless", (40.5, 76.4))):
        cells = [c for c in results.runs[backend].cells if c.pattern == "2x20"]
        for cell, tps in zip(cells, values, strict=False):
            cell.summary.tps = tps
    set_tps(results, "terracotta", "2x20", 10.0)
    [sentence] = [f for f in findings(results) if f.startswith("At 2 threads")]
    assert sentence.startswith("At 2 threads (2x20) memcached and stateless are level: their repetitions overlap")
    assert "memcached 53.20–89.10" in sentence and "stateless 40.50–76.40" in sentence


def test_short_windows_and_a_shared_machine_get_caveats(results):
    said = " ".join(caveats(results))
    shortest = min(c.summary.duration_s for c in results.cells)
    assert f"were measured for less than 10 s (the shortest {shortest:.1f} s)" in said
    assert ("same machine as the lab's servers" in said) == bool(results.config.get("lab"))
    for cell in results.cells:
        cell.summary.duration_s = 60.0
    assert "measured for less than" not in " ".join(caveats(results))
    for cell in results.cells:
        cell.resources = {"samples": 2, "components": {}}
    assert f"CPU figures of {len(results.cells)} of {len(results.cells)} cells rest on fewer than" in " ".join(
        caveats(results))


def test_backends_within_the_tie_threshold_are_called_level(results):
    set_tps(results, "terracotta", "4x10", 50.0)
    set_tps(results, "memcached", "4x10", 50.0 * (1 + TIE_PCT / 200))
    set_tps(results, "stateless", "4x10", 10.0)
    [sentence] = [f for f in findings(results) if f.startswith("At 4 threads")]
    assert sentence.startswith("At 4 threads (4x10) memcached and terracotta are level")


def test_where_tps_stops_growing(results):
    set_tps(results, "memcached", "2x20", 40.0)
    set_tps(results, "memcached", "4x10", 40.0 * (1 + GROWTH_PCT / 100 / 2))  # grows by half the threshold
    assert "memcached's TPS stops growing between 2 and 4 threads (+5%)." in findings(results)
    set_tps(results, "memcached", "4x10", 30.0)
    assert "memcached's TPS falls between 2 and 4 threads (-25%)." in findings(results)
    set_tps(results, "memcached", "4x10", 80.0)
    growing = [f for f in findings(results) if f.startswith("TPS still grows from 2 to 4 threads for ")]
    assert len(growing) == 1 and "memcached (+100%)" in growing[0]


def test_failing_checks_are_named_per_test(results):
    # The lab's memcached and stateless fail Test 3 by design; a terracotta failure is not expected.
    assert "Test 3 fails for memcached, stateless, as the 2012 design table expects of them (×*)." in findings(results)
    results.checks["terracotta"][2]["passed"] = False
    results.checks["stateless"][1]["passed"] = False
    said = findings(results)
    assert "Test 3 fails for terracotta, memcached, stateless." in said
    assert "Test 2 fails for stateless." in said
    for checks in results.checks.values():
        for check in checks:
            check["passed"] = True
    assert "Every backend passes the cluster checks (3 backends)." in findings(results)


def test_errors_saturation_and_missing_cpu_become_caveats(results):
    assert not any("failed" in c or "saturated" in c or "not sampled" in c for c in caveats(results))
    cell = results.runs["memcached"].cells[0]
    cell.summary.errors = 3
    cell.summary.warnings = ["3 of 40 journeys failed (7.5%); times, percentiles and TPS count successful only."]
    cell.resources["generator_saturated"] = True
    for other in results.runs["stateless"].cells:
        other.resources = None
    said = caveats(results)
    assert "memcached 2x20 #1: 3 of 40 journeys failed (7.5%); times, percentiles and TPS count successful only." \
        in said
    assert any(c.startswith("memcached 2x20 #1: the load generator was saturated") for c in said)
    assert "CPU was not sampled for stateless: no server CPU figures for stateless." in said
    assert "Errors: memcached had 3 in 2x20." in findings(results)


def test_percentile_caveat_counts_cells_instead_of_repeating(results):
    said = caveats(results)
    needed = SAMPLES_FOR_PERCENTILE["p99"]
    assert f"p99 rests on fewer than {needed} successful journeys in 12 of 12 cells: treat it as a rough figure." \
        in said
    assert not any("rests on 40 samples" in c for c in said)  # the per-cell wording is folded into the count


def test_a_folder_of_run_folders_is_compared_like_a_campaign():
    results = load(CAMPAIGN / "runs")  # what `make demo` writes: one `authbench run` per backend, side by side
    assert results.kind == "set of runs" and not results.checks
    assert sorted(results.runs) == ["memcached", "stateless", "terracotta"]
    assert results.patterns == ["2x20", "4x10"]
    said = findings(results)
    assert sum(s.startswith("At ") for s in said) == 2 and not any("fails for" in s for s in said)
