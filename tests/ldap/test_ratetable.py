"""The authrate table: columns, CSV, and percentiles from the histogram."""

from __future__ import annotations

from authbench.authrate.ratetable import DEFAULT_PERCENTILES, Counts, format_row, header, row


def test_rows_carry_rates_means_percentiles_and_errors():
    counts = Counts()
    for i in range(1000):
        counts.add(1.0 if i < 990 else 50.0, ok=i % 4 != 0)
    r = row(counts, 2.0, counts, 4.0, DEFAULT_PERCENTILES)
    assert r.recent_tps == 500 and r.average_tps == 250 and r.errors_per_s == 125
    assert abs(r.recent_ms - (742 * 1.0 + 8 * 50.0) / 750) < 1e-9  # the 750 successes only
    assert 49.9 < r.percentiles_ms[0] < 50.1  # the slowest 1% of the successes is at 50 ms
    line = format_row(r, csv=False)
    assert line.startswith("|    500.0    250.0 |") and line.endswith("|    125.0 |")
    assert format_row(r, csv=True).split(",")[:3] == ["4.000", "500.0", "250.0"]


def test_header_lines_up_with_rows_and_names_the_percentiles():
    lines = header((99.0, 99.9), csv=False)
    assert "99%" in lines[3] and "99.9%" in lines[3]
    r = row(Counts(), 1.0, Counts(), 1.0, (99.0, 99.9))
    assert len(format_row(r, csv=False)) == len(lines[3]) == len(lines[0])
    assert header(DEFAULT_PERCENTILES, csv=True)[0].endswith("99.999% response time (milliseconds),Errors/second")


def test_failed_operations_stay_out_of_the_latency_figures():
    counts = Counts()
    for _ in range(10):
        counts.add(2.0, ok=True)
    counts.add(30_000.0, ok=False)  # an operation that hung until its timeout
    counts.add(0.01, ok=False)  # a refused connection
    assert (counts.ops, counts.errors) == (12, 2)
    assert counts.mean_ms() == 2.0 and counts.percentile_ms(100.0) < 2.1
