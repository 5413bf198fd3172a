"""The one lab every test of a pytest worker shares: all backends, started once per worker; a small tmpfs on demand.

`make test` runs the suite on two pytest-xdist workers (`-n 2`). Each worker has its own copy of
every lab, on its own ports (tests/ports.py) and in its own temporary folder, and runs whole files: a file's
module fixtures start once, and a test that stops a component of its worker's lab restores it before the next.
docs/development.md says how the suite is laid out.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path

# Locust monkey-patches the standard library with gevent when imported; it must come before anything
# imports ssl (requests, urllib3), as it does in `authbench run` and in Locust itself.
import locust  # noqa: F401, I001  (first on purpose)
import pytest

from authbench_lab import lab as lab_api
from authbench_lab.config import BACKENDS, LabConfig

from ports import SESSION as SESSION_BASE_PORT

SESSION_USERS = 200
# Files whose tests share a fixture wider than a module run on one worker together, under one group name.
SHARED_GROUPS = {"extras": "extras"}  # tests/extras: one lab with PostgreSQL and privacyIDEA for the whole folder
# The slowest files start first, so both workers finish at about the same time (`make test` prints the slowest
# tests: move a file here when it grows past a minute).
SLOW_FIRST = ("tests/cli/test_run_failover.py", "extras", "tests/openmodel/test_open_cli.py",
              "tests/journeys/test_pysaml2_failover.py", "tests/cli/test_authrate.py", "tests/test_packaging.py")
SHUFFLE_ENV = "AUTHBENCH_TEST_SHUFFLE"  # a seed: files and their tests in a random order, to prove no order is needed
XDIST_POLL_S = 0.01  # how often a worker looks for its next test


def pytest_configure(config: pytest.Config) -> None:
    """A worker's own temporary folder, so no test sees another worker's temporary files."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        folder = tempfile.mkdtemp(prefix=f"authbench-{worker}-")
        os.chmod(folder, 0o711)  # servers running as another user (Apache's www-data) reach their files inside
        os.environ["TMPDIR"] = folder
        tempfile.tempdir = folder
        _let_the_worker_wait_across_threads(config)


class _CrossThreadFlag:
    """An Event that another OS thread can set while gevent's hub runs in this one: a flag, polled."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def clear(self) -> None:
        self._set = False

    def wait(self) -> None:
        while not self._set:
            time.sleep(XDIST_POLL_S)  # gevent's sleep: the hub and any greenlet run meanwhile


def _let_the_worker_wait_across_threads(config: pytest.Config) -> None:
    """pytest-xdist puts the tests a worker is given in its queue from execnet's receiver thread, an OS thread started
    before Locust's gevent patching; the main thread waits for them on a threading.Event that the patching made a
    gevent Event, which no other OS thread can wake (LoopExit, "This operation would block forever"). The queue gets
    a lock gevent left alone and a polled flag instead."""
    from gevent.monkey import get_original

    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(queue, "_has_items_event"):
            queue._lock = get_original("_thread", "allocate_lock")()
            queue._has_items_event = _CrossThreadFlag()
            return
    raise RuntimeError("pytest-xdist's worker queue was not found: tests/conftest.py needs updating for this version")


def _group(nodeid: str) -> str:
    """The file a test is in, or its folder's name for a folder in SHARED_GROUPS: what one worker runs together."""
    path = Path(nodeid.split("::", 1)[0])
    folder = path.parts[1] if len(path.parts) > 2 else ""
    return SHARED_GROUPS.get(folder, str(path))


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Whole groups to each worker (pytest-xdist's loadscope, grouped by `_group`), in collection order: slow first.
    (xdist's own `--dist loadgroup` renames tests to group them, which pytest 9 no longer lets it do.)"""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    config.option.loadscopereorder = False  # keep pytest_collection_modifyitems' order, not the biggest group first
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The groups in SLOW_FIRST first, each group's tests together; all shuffled when AUTHBENCH_TEST_SHUFFLE is set."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(_group(item.nodeid), []).append(item)
    order = list(groups)
    if seed := os.environ.get(SHUFFLE_ENV):
        shuffle = random.Random(seed).shuffle
        shuffle(order)
        for members in groups.values():
            shuffle(members)
            members.sort(key=lambda item: item.get_closest_marker("runs_last") is not None)
    else:
        # stable: the rest keep their collection order
        order.sort(key=lambda group: SLOW_FIRST.index(group) if group in SLOW_FIRST else len(SLOW_FIRST))
    items[:] = [item for group in order for item in groups[group]]


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
