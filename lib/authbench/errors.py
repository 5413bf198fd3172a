"""The error every layer may raise for bad input or a missing prerequisite: one line for the user, an exit code.

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
