"""authrate's statistics: an HDR histogram of response times and the table printed every `-i` seconds.

Columns as authrate prints them: throughput recent/average (operations per second), response time
recent/average and the chosen percentiles (milliseconds), err/sec; `-S` prints the same rows as
authrate's CSV, led by the seconds since the warm-up ended.
Percentiles come from the histogram (microsecond resolution, 3 significant digits), never sampled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

DEFAULT_PERCENTILES = (99.9, 99.99, 99.999)
LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # an hour: anything slower is clamped, not lost
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


@dataclass
class Counts:
    """Operations, errors and the response times of the successful ones over a stretch of the run.

    A failed operation counts in ops and errors only: a refused connection answers in microseconds,
    a hung one at the timeout, and either would make the latency figures describe the failure.
    """

    ops: int = 0
    errors: int = 0
    total_ms: float = 0.0  # successful operations only
    histogram: HdrHistogram = field(default_factory=new_histogram)  # successful operations only

    def add(self, elapsed_ms: float, ok: bool) -> None:
        self.ops += 1
        if not ok:
            self.errors += 1
            return
        self.total_ms += elapsed_ms
        self.histogram.record_value(min(max(int(elapsed_ms * 1000), LOWEST_US), HIGHEST_US))

    def absorb(self, other: Counts) -> None:
        self.ops += other.ops
        self.errors += other.errors
        self.total_ms += other.total_ms
        self.histogram.add(other.histogram)

    def mean_ms(self) -> float:
        return self.total_ms / (self.ops - self.errors) if self.ops > self.errors else 0.0

    def percentile_ms(self, percentile: float) -> float:
        return self.histogram.get_value_at_percentile(percentile) / 1000 if self.ops > self.errors else 0.0


@dataclass
class Row:
    elapsed_s: float  # since the end of the warm-up
    recent_tps: float
    average_tps: float
    recent_ms: float
    average_ms: float
    percentiles_ms: tuple[float, ...]
    errors_per_s: float


def row(recent: Counts, recent_s: float, total: Counts, total_s: float, percentiles: tuple[float, ...]) -> Row:
    return Row(total_s, recent.ops / recent_s if recent_s > 0 else 0.0, total.ops / total_s if total_s > 0 else 0.0,
               recent.mean_ms(), total.mean_ms(), tuple(total.percentile_ms(p) for p in percentiles),
               recent.errors / recent_s if recent_s > 0 else 0.0)


def _label(percentile: float) -> str:
    return f"{percentile:g}%"


def header(percentiles: tuple[float, ...], csv: bool) -> list[str]:
    labels = [_label(p) for p in percentiles]
    if csv:  # authrate's own CSV header
        return [",".join(["Time (seconds)", "Recent throughput (ops/second)", "Average throughput (ops/second)",
                          "Recent response time (milliseconds)", "Average response time (milliseconds)",
                          *(f"{label} response time (milliseconds)" for label in labels), "Errors/second"])]
    rt_width = 9 * (2 + len(labels)) + 1
    columns = "|   recent  average |   recent  average" + "".join(f"{lab:>9}" for lab in labels) + " |  err/sec |"
    rule = "-" * len(columns)
    return [rule, f"|     Throughput    |{'Response Time'.center(rt_width)}|          |",
            f"|    (ops/second)   |{'(milliseconds)'.center(rt_width)}|          |", columns, rule]


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 1000 else f"{value:.0f}"


def format_row(r: Row, csv: bool) -> str:
    times = [_ms(r.recent_ms), _ms(r.average_ms), *(_ms(p) for p in r.percentiles_ms)]
    if csv:
        return ",".join([f"{r.elapsed_s:.3f}", f"{r.recent_tps:.1f}", f"{r.average_tps:.1f}", *times,
                         f"{r.errors_per_s:.1f}"])
    return (f"| {r.recent_tps:8.1f} {r.average_tps:8.1f} |" + "".join(f" {t:>8}" for t in times)
            + f" | {r.errors_per_s:8.1f} |")
