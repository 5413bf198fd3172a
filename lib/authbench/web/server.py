"""The web UI put together: a Locust environment, Locust's own UI, authbench's routes and /metrics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import metrics
from ..runner import create_environment
from . import app, auth
from .launch import Launcher


def create(host: str, port: int, credentials: Any, results: Path, prepare: Callable[[dict[str, str]], Any],
           allowed_hosts: tuple[str, ...], lab_dir: str | None,
           plan_of: Callable[[dict[str, str]], Any] | None = None) -> tuple[Any, Any, Launcher]:
    """(environment, web UI not yet serving — no port taken —, launcher); `prepare(form)` checks a start form,
    `plan_of(form)` its plan alone (for the estimate)."""
    from ..kinds.saml.user import SAMLUser

    environment = create_environment(SAMLUser, settings=None)  # each run sets the user class its target names
    # The UI first: made before the runner, Locust does not yet read its template arguments (app.install).
    web_ui = environment.create_web_ui(host, port, web_login=credentials is not None, delayed_start=True)
    environment.create_local_runner()
    if credentials is not None:
        auth.install(web_ui, credentials)
    launcher = app.install(environment, results, prepare, allowed_hosts, lab_dir, plan_of)
    metrics.attach_metrics(environment)  # /metrics of the runs started here
    return environment, web_ui, launcher
