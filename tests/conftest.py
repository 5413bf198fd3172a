"""The one lab every test shares: all backends, started once per test session."""

from __future__ import annotations

# Locust monkey-patches the standard library with gevent when imported; it must come before anything
# imports ssl (requests, urllib3), as it does in `authbench run` and in Locust itself.
import locust  # noqa: F401, I001  (first on purpose)
import pytest

from authbench_lab import lab as lab_api
from authbench_lab.config import BACKENDS, LabConfig

from ports import SESSION as SESSION_BASE_PORT

SESSION_USERS = 200


@pytest.fixture(scope="session", autouse=True)
def own_target_locks(tmp_path_factory: pytest.TempPathFactory):
    """This test session's target locks (targets_lock) apart from any other authbench on the machine."""
    import os

    os.environ["AUTHBENCH_LOCK_DIR"] = str(tmp_path_factory.mktemp("locks"))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory):
    config = LabConfig(
        run_dir=tmp_path_factory.mktemp("lab"),
        base_port=SESSION_BASE_PORT,
        backends=list(BACKENDS),
        users=SESSION_USERS,
    )
    try:
        lab_api.up(config)
        yield config
    finally:
        lab_api.down(config.run_dir)  # also after a failed up: stops whatever did start
