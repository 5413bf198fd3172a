"""One `authbench authrate` run: the loop in this process, the table on stdout, a closing summary."""

from __future__ import annotations

import sys

from ..kinds.ldap.client import Endpoint
from .loop import BindPlan, Limits, Outcome, Run, Table


def summary_lines(outcome: Outcome, limits: Limits) -> list[str]:
    """What the table does not say: totals, errors by LDAP result code, pacing, connection churn."""
    total = outcome.total
    rate = total.ops / outcome.measured_s if outcome.measured_s else 0.0
    lines = [f"{total.ops} authentications in {outcome.measured_s:.1f} s after the warm-up: {rate:.1f}/s, "
             f"{total.errors} errors"]
    lines += [f"  {count} × {reason}" for reason, count in outcome.reasons.most_common()]
    if outcome.unanswered:
        lines.append(f"{outcome.unanswered} operations were still waiting for the server when the run ended "
                     "(in no figure above: the server did not answer them within the run)")
    if limits.target_rate:
        lines.append(f"target {limits.target_rate:g}/s: at most {outcome.behind_max_s * 1000:.0f} ms behind "
                     f"schedule, {outcome.late_ops} operations started late")
    if not limits.keep_open:
        lines.append(f"{outcome.connections_opened} connections opened; sockets in TIME_WAIT towards the server "
                     f"after the run: {outcome.time_wait}")
    return lines


def say(line: str) -> None:
    print(line, flush=True)


def finish(outcome: Outcome, limits: Limits, csv: bool) -> int:
    for line in summary_lines(outcome, limits):
        if csv:
            print(line, file=sys.stderr, flush=True)
        else:
            say(line)
    return 0


def run(plan: BindPlan, limits: Limits, endpoint: Endpoint, *, csv: bool = False,
        percentiles: tuple[float, ...]) -> int:
    table = Table(say, csv, percentiles, None if limits.keep_open else endpoint.port)
    return finish(Run(plan, limits, endpoint, table).execute(), limits, csv)
