"""The errors every layer may raise: bad input or a missing prerequisite (one line for the user, an exit code),
and a journey's authentication that failed for a named reason.

It lives outside `cli` so that the packages the CLI drives (the web UI, the runner) can raise it without
importing the CLI back. `cli.main` prints it as `authbench: error: <message>` and exits with `exit_code`.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_FAILURE = 1  # something failed at run time
EXIT_USAGE = 2  # bad input, configuration or environment (argparse uses 2 as well)


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = EXIT_USAGE, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.details = list(details)  # e.g. a failing component's last log lines


class AuthFailure(Exception):
    """An authentication a journey tried failed: `reason` is its category in the results (an LDAP result code,
    a PostgreSQL condition, a connection problem), `detail` what the server said (never a secret)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
