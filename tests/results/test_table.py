"""Terminal tables: Grinder's columns plus percentiles, aligned, with an average row per pattern."""

from __future__ import annotations

from authbench.results.summary import DISTRIBUTION_LABELS, Summary
from authbench.results.table import format_comparison, format_runs, run_label

LT50, LT300, LT1000, GE1000 = DISTRIBUTION_LABELS
HEADER = [
    "Tests", "Errors", "Mean", "SD", "TPS", "Peak TPS", "Median", "p90", "p99", "p99.9", "Min", "Max",
    "<50%", "<300%", "<1000%", ">=1000%",
]  # fmt: skip


def summary(pattern: str, repetition: int, tps: float, errors: int = 0, **changes: object) -> Summary:
    fields: dict[str, object] = dict(
        pattern=pattern,
        repetition=repetition,
        tests=2000,
        errors=errors,
        successes=2000 - errors,
        mean_ms=123.456,
        sd_ms=45.0,
        tps=tps,
        peak_tps=31.0,
        median_ms=110.0,
        p90_ms=200.04,
        p99_ms=400.0,
        p999_ms=900.0,
        min_ms=20.0,
        max_ms=1500.0,
        distribution={LT50: 100, LT300: 1700, LT1000: 190, GE1000: 10},
        distribution_pct={LT50: 5.0, LT300: 85.0, LT1000: 9.5, GE1000: 0.5},
    )
    fields.update(changes)
    return Summary(**fields)  # type: ignore[arg-type]


def table_lines(text: str) -> list[str]:
    return text.split("\n\n")[0].splitlines()


def cells(line: str, rule: str) -> list[str]:
    """Cut a row at the column spans the dashed rule marks."""
    spans, start = [], 0
    for dashes in rule.split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    return [line[a:b] for a, b in spans]


def test_rows_average_and_formats() -> None:
    rows = [(run_label("10x200", r), summary("10x200", r, tps=20.0 + r, errors=r - 1)) for r in (1, 2, 3)]
    text = format_runs(rows)
    lines = table_lines(text)
    header, rule, *body = lines
    assert [c.strip() for c in cells(header, rule)] == ["", *HEADER]
    assert [line.split()[0] + " " + line.split()[1] for line in body] == [
        "10x200 #1",
        "10x200 #2",
        "10x200 #3",
        "10x200 average",
    ]
    average_row = cells(body[3], rule)
    assert [c.strip() for c in average_row[1:]] == [
        "2000", "1", "123.5", "45.0", "22.00", "31.00", "110.0", "200.0", "400.0", "900.0", "20.0", "1500.0",
        "5.0", "85.0", "9.5", "0.5",
    ]  # fmt: skip
    assert "10x200 #2: " not in text  # no warnings given, none printed


def test_columns_are_aligned_and_numbers_right_aligned() -> None:
    rows = [
        ("10x200 #1", summary("10x200", 1, tps=5.0)),
        ("10x200 #2", summary("10x200", 2, tps=1234.5678, mean_ms=None, p999_ms=None, tests=1_000_000)),
    ]
    header, rule, *body = table_lines(format_runs(rows))
    assert len({len(header), len(rule), *(len(line) for line in body)}) == 1
    for line in [header, *body]:
        row = cells(line, rule)
        assert line is header or not row[0].startswith(" ")  # labels left-aligned
        assert all(cell.strip() and not cell.endswith(" ") for cell in row[1:])  # numbers right-aligned
    second = [c.strip() for c in cells(body[1], rule)]
    assert second[1] == "1000000" and second[3] == "-" and second[5] == "1234.57" and second[10] == "-"


def test_groups_by_pattern_and_lists_warnings() -> None:
    rows = [
        ("10x200 #1", summary("10x200", 1, tps=10.0)),
        ("50x40 #1", summary("50x40", 1, tps=30.0, warnings=["p99.9 rests on 500 samples (fewer than 1000)."])),
        ("10x200 #2", summary("10x200", 2, tps=12.0)),
    ]
    text = format_runs(rows)
    labels = [line.split("  ")[0].strip() for line in table_lines(text)[2:] if not line.startswith("-")]
    assert labels == ["10x200 #1", "10x200 #2", "10x200 average", "50x40 #1"]  # one repetition: no average row
    assert "50x40 #1: p99.9 rests on 500 samples (fewer than 1000)." in text
    assert "50x40 #1: p99.9" not in format_runs(rows, show_warnings=False)


def test_comparison_targets_side_by_side() -> None:
    by_target = {
        "shib-1node": [
            ("10x200 #1", summary("10x200", 1, tps=10.0)),
            ("10x200 #2", summary("10x200", 2, tps=11.0)),
            ("50x40 #1", summary("50x40", 1, tps=40.0, errors=2)),
        ],
        "shib-2node": [
            ("10x200 #1", summary("10x200", 1, tps=18.0)),
            ("10x200 #2", summary("10x200", 2, tps=19.0)),
        ],
    }
    text = format_comparison(by_target)
    header, rule, *body = table_lines(text)
    assert header.split() == ["pattern", "shib-1node", "shib-2node"]
    assert [line.split() for line in body] == [["10x200", "10.50", "18.50"], ["50x40", "40.00*", "-"]]
    assert [cells(line, rule)[1].rstrip(" *")[-1] for line in body] == ["0", "0"]  # decimal points in line
    assert "* errors in at least one repetition." in text


def test_comparison_without_errors_has_no_mark() -> None:
    text = format_comparison({"ldap": [("10x200 #1", summary("10x200", 1, tps=99.999))]})
    assert "*" not in text and "100.00" in text
