"""Distributed runs: a Locust master and its workers, keeping patterns exact across processes.

`protocol` names the messages authbench adds to Locust's own, `master` runs cells on a MasterRunner and
merges every worker's samples into the master's events, `worker` runs the users the master assigns,
`local` starts and reaps worker processes on this machine (`authbench run --workers N`).
"""

from __future__ import annotations

from ..errors import EXIT_FAILURE, AuthbenchError


class DistributedError(AuthbenchError):
    """A distributed run cannot go on; the message is one line naming the cause and what to do."""

    exit_code = EXIT_FAILURE
