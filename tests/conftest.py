"""The one lab every test of a pytest worker shares: all backends, started once per worker; a small tmpfs on demand.

`make test` runs the suite on two pytest-xdist workers (tests/parallel.py): each has its own copy of every lab, on
its own ports (tests/ports.py). docs/development.md says how the suite is laid out.
"""

from __future__ import annotations

from pathlib import Path

# Locust monkey-patches the standard library with gevent when imported; it must come before anything
# imports ssl (requests, urllib3), as it does in `authbench run` and in Locust itself.
import locust  # noqa: F401, I001  (first on purpose)
import pytest

from authbench_lab import lab as lab_api
from authbench_lab.config import BACKENDS, LabConfig

from ports import SESSION as SESSION_BASE_PORT

SESSION_USERS = 200
pytest_plugins = ("parallel",)  # tests/parallel.py: how two workers share the suite


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
        timings="fast",  # docs/lab.md: the same behaviour as standard, in less wall time
    )
    try:
        lab_api.up(config)
        yield config
    finally:
        lab_api.down(config.run_dir)  # also after a failed up: stops whatever did start


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    """`mount(size)`: a tmpfs of `size` (e.g. "32k") on a fresh folder, the way a full disk is met; unmounted
    after the test. Skipped when not root or when the mount is refused (a container without the right)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = []

    def mount(size: str) -> Path:
        point = tmp_path / f"tmpfs-{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "--lazy", str(point)], capture_output=True, timeout=30)
