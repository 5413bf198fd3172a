"""A run checked and ready, whatever its journey: what `authbench run` and the web UI's form both start.

Each journey's CLI module (run.py for SAML, ldap_run, pg_run, pi_run) turns the options into a `PreparedRun`:
the Locust user class, its settings, the record of the run (no secrets) and the one-journey preflight that
must pass before any load. The web UI starts any of them the same way.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..targets_lock import lab_key, url_key

if TYPE_CHECKING:
    from ..cluster.faults.plan import Fault
    from ..patterns import Plan

LAB_PREFIX = "lab:"


@dataclass
class PreparedRun:
    """A run's plan and journey settings, checked; `config` describes it for the record (no secrets)."""

    plan: Plan
    settings: Any  # the journey's settings (users.saml.SAMLSettings, users.ldap.LDAPSettings, …)
    config: dict[str, Any]
    target: str
    cell_time_limit: float
    keep_failures: int
    load_key: str  # what the run loads, for targets_lock: the lab as a whole, or the target's origin
    user_class: type  # the journey's Locust user (users.saml.SAMLUser, users.ldap.LDAPUser, …)
    preflight: Callable[[Any], Any]  # settings → a check with lines(), problem() and save(folder)
    faults: list[Fault] = field(default_factory=list)  # the --fault plan (docs/failover.md), lab components resolved
    lab_run_dir: str = ""  # where the lab the faults act on (or the sampled servers) run
    sampled: tuple[str, ...] = ()  # the lab's servers whose CPU a lab-target run samples per cell (cluster/resources)

    def execute(self, run_dir: Path, **options: Any) -> Any:
        """headless.execute of this run into `run_dir` (a claimed folder); `options` are execute's own (say,
        resume, cell_extras, listen, environment, metrics_port, …). The RunReport."""
        from .. import headless

        return headless.execute(self.plan, self.user_class, self.settings, config=self.config,
                                results_base=run_dir.parent, run_id=run_dir.name,
                                cell_time_limit=self.cell_time_limit, keep_failures=self.keep_failures, **options)

    @contextmanager
    def cell_listeners(self, run_dir: Path,
                       say: Callable[[str], None]) -> Iterator[tuple[Any, Callable[[], dict[str, Any]]]]:
        """(listen, extras) for `execute`: what every journey's run adds to each cell beside its samples — the
        fault plan played in the measured phase and what it did (docs/failover.md), and the CPU and memory of
        the lab servers `sampled` names (and of the generator) in summary.json's `resources`, as `compare`
        records them. (None, empty) when there is neither; sampler and plan stop when the block ends."""
        from ..cluster.faults.execute import FaultSchedule

        with _lab_sampler(self, run_dir) as sampler:
            schedule = FaultSchedule(self.faults, self.lab_run_dir, say) if self.faults else None
            parts = [part for part in (sampler, schedule) if part is not None]
            if not parts:
                yield None, dict
                return

            def listen(context: Any) -> None:
                for part in parts:
                    part.listen(context)

            def extras() -> dict[str, Any]:
                return {**({"resources": sampler.cell_summary()} if sampler else {}),
                        **(schedule.finish() if schedule else {})}

            try:
                yield listen, extras
            finally:
                if schedule:
                    schedule.close()


@contextmanager
def _lab_sampler(prepared: PreparedRun, run_dir: Path) -> Iterator[Any]:
    """The resource sampler of a lab-target run's `sampled` servers, started; None when there are none."""
    from authbench_lab import lab

    from ..cluster.resources import GENERATOR, RESOURCES_FILE, ResourceSampler, lab_components, lab_pids

    if not prepared.sampled or not prepared.lab_run_dir:
        yield None
        return
    state = lab.read_state(prepared.lab_run_dir) or {}
    shared = lab_components(state, "")  # the lab's servers outside its clusters, and the generator
    components = {name: pid for name, pid in shared.items() if name in (*prepared.sampled, GENERATOR)}
    sampler = ResourceSampler(components, run_dir / RESOURCES_FILE, not_generator=lab_pids(state)).start()
    try:
        yield sampler
    finally:
        sampler.stop()


def load_key(args: argparse.Namespace, target: str) -> str:
    """The lab as a whole for a `lab:` target (its servers share the machine), else the target's origin."""
    return lab_key(args.lab_dir) if args.target.startswith(LAB_PREFIX) else url_key(target)


@dataclass
class OneJourneyCheck:
    """The preflight of a journey that answers only "ok" or why not (LDAP, database, privacyIDEA), shown and
    saved like the SAML walk's trail."""

    target: str
    failure: str | None

    def lines(self) -> list[str]:
        return [f"preflight: one journey against {self.target}: " + (f"failed: {self.failure}" if self.failure
                                                                       else "ok")]

    def problem(self, saved: Path | None = None) -> str | None:
        return self.failure

    def save(self, folder: Path) -> Path:
        from ..users.saml import PREFLIGHT_FILE

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / PREFLIGHT_FILE
        path.write_text("\n".join(self.lines()) + "\n", encoding="utf-8")
        return path


def one_journey_preflight(check: Callable[[Any], str | None], target: str) -> Callable[[Any], OneJourneyCheck]:
    """A journey's `preflight(settings) -> why it fails, or None` as a PreparedRun.preflight."""
    return lambda settings: OneJourneyCheck(target, check(settings))
