"""authrate's loop on gevent: `-c` connections, each a greenlet binding back to back (or paced by `-M`).

Every authentication is one timed operation: generate the arguments, optionally search the DN, bind.
A failed bind is an error counted under its LDAP result code; a lost server is an error too, and the
loop carries on until its duration or iteration count, so a restarted server is seen binding again.
Every run is bounded: without `-d` and `-m` it stops after `UNBOUNDED_LIMIT_S`.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import gevent

from ..kinds.ldap.client import CONNECT_ERROR, Connection, Endpoint, LdapFailure, tls_cause
from ..sockets import ports_running_low, time_wait_count
from .ratetable import Counts, Row, format_row, header, row
from .templates import Arguments, Template

UNBOUNDED_LIMIT_S = 3600.0  # neither -d nor -m: the run still ends by itself
STOP_GRACE_S = 1.0  # seconds past the deadline an operation in flight may take before it is abandoned
CONNECT_BACKOFF_S = 0.01  # after a refused connection, so a stopped server is not spun against
UNKNOWN_ERROR = "(unknown error code)"  # libldap's info when it knows no cause (an untrusted certificate)
INVALID_SUFFIX = "-not-the-password"  # -I: what turns a good password into a wrong one


@dataclass(frozen=True)
class Search:
    base: Template
    scope: int
    deref: int
    filter: Template
    identity: tuple[str, str] | None = None  # bind DN and password for the searches; None: as authrate


@dataclass
class BindPlan:
    """What one authentication does; the password is never printed or stored."""

    bind_dn: Template
    password: str = field(repr=False)
    arguments: Arguments
    invalid_percent: float = 0.0
    search: Search | None = None


@dataclass(frozen=True)
class Limits:
    connections: int = 1
    keep_open: bool = False
    target_rate: float = 0.0  # operations per second over all connections; 0: as fast as possible
    warmup_s: float = 0.0
    duration_s: float = 0.0  # from the start, warm-up included; 0: until -m, at most UNBOUNDED_LIMIT_S
    iterations: int = 0  # authentications over all connections, warm-up included; 0: unlimited
    interval_s: float = 5.0


@dataclass
class Outcome:
    total: Counts  # after the warm-up
    measured_s: float
    reasons: Counter
    behind_max_s: float = 0.0  # -M: how far the slowest operation started after its slot
    late_ops: int = 0
    connections_opened: int = 0
    time_wait: int | None = None
    unanswered: int = 0  # operations still waiting for the server when the run ended: in no count above


class Pacer:
    """-M: operation n starts at start + n / rate; late ones start at once, so the average is held."""

    def __init__(self, rate: float, start: float) -> None:
        self.rate, self.start, self.issued = rate, start, 0
        self.behind_max_s, self.late = 0.0, 0

    def wait(self, deadline: float) -> bool:
        """Sleep until the next slot; False when that slot is past the deadline (the run is over)."""
        slot = self.start + self.issued / self.rate
        if slot >= deadline:
            return False
        self.issued += 1
        delay = slot - time.perf_counter()
        if delay > 0:
            gevent.sleep(delay)
        elif -delay > 1 / self.rate:
            self.late += 1
            self.behind_max_s = max(self.behind_max_s, -delay)
        return True


def authenticate(plan: BindPlan, conn: Connection, searcher: Connection, rng: random.Random) -> None:
    """One authentication; raises LdapFailure with the reason when it fails."""
    args = plan.arguments.next()
    if plan.search is not None:
        s = plan.search
        if s.identity is not None:
            searcher.bind_once(*s.identity)
        args.append(searcher.find_dn(s.base.fill(args), s.scope, s.filter.fill(args), s.deref))
    password = plan.password
    if plan.invalid_percent and rng.random() * 100 < plan.invalid_percent:
        password += INVALID_SUFFIX
    conn.bind(plan.bind_dn.fill(args), password)


class Table:
    """Where each interval's counts go: authrate's table (or CSV), with a warning when ports run low."""

    def __init__(self, say: Callable[[str], None], csv: bool, percentiles: tuple[float, ...],
                 churn_port: int | None = None) -> None:
        self.say, self.csv, self.percentiles, self.churn_port = say, csv, percentiles, churn_port
        self.total = Counts()
        self.warned = False

    def start(self) -> None:
        for line in header(self.percentiles, self.csv):
            self.say(line)

    def interval(self, recent: Counts, recent_s: float, total_s: float) -> Row:
        self.total.absorb(recent)
        r = row(recent, recent_s, self.total, total_s, self.percentiles)
        self.say(format_row(r, self.csv))
        if self.churn_port is not None and not self.warned:
            warning = ports_running_low(time_wait_count(self.churn_port))
            if warning:
                self.warned = True
                self.say(warning)
        return r


class Run:
    """The shared state of one authrate run: counters, limits, pacing; intervals go to `table`."""

    def __init__(self, plan: BindPlan, limits: Limits, endpoint: Endpoint, table: Table) -> None:
        self.plan, self.limits, self.endpoint, self.table = plan, limits, endpoint, table
        self._tls_cause: str | None = None
        self.start = time.perf_counter()
        self.deadline = self.start + (limits.duration_s or UNBOUNDED_LIMIT_S)
        self.measure_from = self.start + limits.warmup_s
        self.started = 0
        self.total, self.recent = Counts(), Counts()
        self.reasons: Counter = Counter()
        self.emitted = 0
        self.pacer = Pacer(limits.target_rate, self.start) if limits.target_rate else None
        self.connections: list[Connection] = []
        self.in_flight = 0

    def _ticket(self) -> bool:
        if time.perf_counter() >= self.deadline:
            return False
        if self.limits.iterations and self.started >= self.limits.iterations:
            return False
        self.started += 1
        return True

    def worker(self) -> None:
        conn, searcher = Connection(self.endpoint), Connection(self.endpoint)
        self.connections += [conn, searcher]
        search = self.plan.search
        separate = search is not None and search.identity is not None
        try:
            while self._ticket():
                if self.pacer is not None and not self.pacer.wait(self.deadline):
                    break
                began = time.perf_counter()
                self.in_flight += 1  # left counted when the run ends before the server answers
                try:
                    authenticate(self.plan, conn, searcher if separate else conn, self.plan.arguments.random)
                    ok, reason = True, ""
                except LdapFailure as failure:
                    ok, reason = False, failure.reason
                    if reason == CONNECT_ERROR:  # with its cause, e.g. TLS: certificate verify failed
                        reason = f"{CONNECT_ERROR}: {self.connect_cause(failure.detail)}"
                self.in_flight -= 1
                ended = time.perf_counter()
                if ended >= self.measure_from:
                    self.recent.add((ended - began) * 1000, ok)
                    if not ok:
                        self.reasons[reason] += 1
                if not self.limits.keep_open:
                    conn.close()
                    searcher.close()
                if reason.startswith(CONNECT_ERROR):
                    gevent.sleep(CONNECT_BACKOFF_S)
        finally:
            conn.close()
            searcher.close()

    def connect_cause(self, detail: str) -> str:
        """libldap's word for a failed connection, or the TLS handshake's when libldap has none (asked once)."""
        if detail and detail != UNKNOWN_ERROR:
            return detail
        if self._tls_cause is None:
            self._tls_cause = tls_cause(self.endpoint) or detail or "no answer"
        return self._tls_cause

    def _emit(self, since: float, now: float) -> None:
        recent, self.recent = self.recent, Counts()
        self.total.absorb(recent)
        self.emitted += 1
        self.table.interval(recent, now - since, now - self.measure_from)

    def reporter(self) -> None:
        gevent.sleep(max(0.0, self.measure_from - time.perf_counter()))
        self.table.start()
        last = self.measure_from
        while True:
            gevent.sleep(max(0.0, last + self.limits.interval_s - time.perf_counter()))
            now = time.perf_counter()
            self._emit(last, now)
            last = now

    def execute(self) -> Outcome:
        reporter = gevent.spawn(self.reporter)
        workers = [gevent.spawn(self.worker) for _ in range(self.limits.connections)]
        # An operation still waiting at the deadline (a server that never answers) does not hold the run up.
        gevent.joinall(workers, timeout=max(0.0, self.deadline - time.perf_counter()) + STOP_GRACE_S,
                       raise_error=True)
        gevent.killall(workers, block=True)
        reporter.kill()
        now = time.perf_counter()
        last = self.measure_from + self.limits.interval_s * self.emitted
        if self.recent.ops and now > self.measure_from:
            self._emit(max(last, self.measure_from), now)
        return Outcome(self.total, max(0.0, now - self.measure_from), self.reasons,
                       self.pacer.behind_max_s if self.pacer else 0.0, self.pacer.late if self.pacer else 0,
                       sum(c.opened for c in self.connections),
                       None if self.limits.keep_open else time_wait_count(self.endpoint.port),
                       unanswered=self.in_flight)
