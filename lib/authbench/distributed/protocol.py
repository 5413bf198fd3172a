"""The messages authbench adds to Locust's master/worker protocol, and how a sample travels in one.

Locust carries them (`runner.register_message` / `send_message`, msgpack over ZeroMQ) in order per
worker, so a worker's statistics report sent before its last sample batch reaches the master first.
Samples travel without their pattern and repetition (the cell id stands for them) and never carry a
password: only the account's user name, as in samples.csv.
"""

from __future__ import annotations

from typing import Any

from ..results.sample import Sample

HELLO = "authbench_hello"  # worker → master {version}: sent until answered
WELCOME = "authbench_welcome"  # master → worker: versions match, the worker may get users
REFUSED = "authbench_refused"  # master → worker {reason}: it runs another authbench version
CELL = "authbench_cell"  # master → worker {cell, users, runs, repetition, warmup_end, indexes}
SAMPLES = "authbench_samples"  # worker → master {cell, samples: [row…], finished: [user…], last: bool}
STOP = "authbench_stop"  # master → worker {cell}: the time limit cut the cell short, stop its users
STOPPED = "authbench_stopped"  # worker → master {cell}: users stopped, every sample sent
LEVEL = "authbench_level"  # master → worker {cell, level, arrivals, repetition, epoch, time_limit, share, of}
LEVEL_DONE = "authbench_level_done"  # worker → master {cell, counters, first_sent, last_sent, histograms}
FAILURE = "authbench_failure"  # worker → master {evidence}: a failing journey's trail and page (results.failures)

Row = list[Any]


def sample_row(sample: Sample) -> Row:
    return [sample.start, sample.duration_ms, sample.user, sample.iteration, sample.outcome, sample.reason,
            sample.phase, sample.account, sample.detail, sample.session, sample.journey]


def row_sample(row: Row, pattern: str, repetition: int, worker: str = "") -> Sample:
    start, duration_ms, user, iteration, outcome, reason, phase, account, detail, session, journey = row
    return Sample(start=float(start), duration_ms=float(duration_ms), user=int(user), iteration=int(iteration),
                  outcome=str(outcome), reason=str(reason), phase=str(phase), pattern=pattern,
                  repetition=int(repetition), account=str(account), detail=str(detail), worker=worker,
                  session=str(session), journey=str(journey))
