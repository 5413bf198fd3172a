"""How `make test`'s two pytest-xdist workers share the suite: whole files each, the slowest first, a temporary folder
of their own, and a wait for the next test that Locust's gevent patching does not break. Loaded by tests/conftest.py.

Each worker runs whole files (a file's module fixtures start once, its tests run in their written order), and the
files of a folder in SHARED_GROUPS together. AUTHBENCH_TEST_SHUFFLE=SEED shuffles files and tests, to prove that no
test needs another's order (a `runs_last` test, which checks what its file's other tests did, stays last).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import pytest

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


def pytest_unconfigure(config: pytest.Config) -> None:
    """The worker's temporary folder goes with the worker (pytest keeps its own tmp_path folders apart)."""
    if os.environ.get("PYTEST_XDIST_WORKER") and tempfile.tempdir:
        shutil.rmtree(tempfile.tempdir, ignore_errors=True)


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
    raise RuntimeError("pytest-xdist's worker queue was not found: tests/parallel.py needs updating for this version")


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
