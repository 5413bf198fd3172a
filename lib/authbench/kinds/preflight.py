"""Preflights that answer only "ok" or why not, shown and saved like the SAML walk's trail.

A kind with a walk worth showing (SAML) has its own; LDAP, database and privacyIDEA journeys say ok or
the reason, and a journey of your own is tried once exactly as the load will run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFLIGHT_FILE = "preflight.txt"  # in the run folder: the preflight's trail and verdict


@dataclass
class OneJourneyCheck:
    target: str
    failure: str | None
    keep_on_failure = False  # one line, said in the error: nothing more to read in the folder

    def lines(self) -> list[str]:
        return [f"preflight: one journey against {self.target}: " + (f"failed: {self.failure}" if self.failure
                                                                       else "ok")]

    def problem(self, saved: Path | None = None) -> str | None:
        return self.failure

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / PREFLIGHT_FILE
        path.write_text("\n".join(self.lines()) + "\n", encoding="utf-8")
        return path


def try_one_journey(user_class: type, settings: Any, target: str) -> OneJourneyCheck:
    """One journey of any JourneyUser outside a run: started, run once, stopped; its failure, or ok."""
    from ..runner import create_environment
    from ..user import UNEXPECTED_ERROR, JourneyOutcome

    environment = create_environment(user_class, settings)
    user = user_class(environment)
    try:
        user.on_start()
        try:
            outcome = user.journey()
        finally:
            user.on_stop()
    except Exception as exc:  # the user's own code: its exception is the reason, as in a run
        outcome = JourneyOutcome(False, UNEXPECTED_ERROR, f"{type(exc).__name__}: {exc}")
    failure = None if outcome.ok else (f"{outcome.reason}" + (f" at step {outcome.step!r}" if outcome.step else "")
                                       + (f": {outcome.detail}" if outcome.detail else ""))
    return OneJourneyCheck(target, failure)
