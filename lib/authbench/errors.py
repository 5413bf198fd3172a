"""The one error family: anything that ends a command with a message for the user carries its exit code.

Every layer raises `AuthbenchError` (or a subclass) for bad input, a missing prerequisite or a run that
failed; `cli.main` catches it once and prints `authbench: error: <message>`, the web UI shows it on the
page. Subclasses exist where a caller needs to tell one cause from another (a plan, a busy target, a lost
master), never to change how the error is shown.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_OK = 0
EXIT_FAILURE = 1  # something failed at run time
EXIT_USAGE = 2  # bad input, configuration or environment (argparse uses 2 as well)
EXIT_CRITERIA_FAILED = 3  # the run completed, but its measured journeys failed too often (--max-error-pct)


class AuthbenchError(Exception):
    """One line for the user and the exit code it ends the command with (2 unless the subclass says)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, exit_code: int | None = None, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
        self.details = list(details)  # e.g. a failing component's last log lines


class RunFailed(AuthbenchError):
    """Something failed while running (a component did not come up, a run broke off): exit 1."""

    exit_code = EXIT_FAILURE


class AuthFailure(Exception):
    """An authentication a journey tried failed: `reason` is its category in the results (an LDAP result code,
    a PostgreSQL condition, a connection problem), `detail` what the server said (never a secret).
    Not an AuthbenchError: a journey's failure is a measurement, not the end of a command."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
