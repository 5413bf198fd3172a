"""A master in this process, real worker processes: exact patterns, warm-up, samples merged, a worker killed.

The workers run `count_worker.py` (a journey that needs no server), so thousands of journeys take
seconds; the master, Locust's protocol, authbench's messages and `kill -9` are real.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import gevent
import pytest
from count_worker import SleepUser
from test_metrics import scrape

from authbench import __version__
from authbench.distributed import DistributedError, master
from authbench.metrics import serve
from authbench.patterns import parse_plan
from authbench.results.sample import WARMUP
from authbench.runner import create_environment, run_plan

from ports import DISTRIBUTED

HERE = Path(__file__).resolve().parent
MASTER_PORT = DISTRIBUTED + 10  # this file's ports: +10..+19
METRICS_PORT = DISTRIBUTED + 11
METRICS_URL = f"http://127.0.0.1:{METRICS_PORT}/metrics"
WAIT = 30.0  # seconds for workers to connect
CELL_LIMIT = 60.0
LIVENESS = 5  # heartbeats a worker may miss before it counts as lost: short, so a killed one is noticed soon


def _start_master(port: int):
    environment = create_environment(SleepUser, settings=None)
    coordinator = master.create_master(environment, "127.0.0.1", port, liveness=LIVENESS)
    samples, cells = [], []
    environment.authbench.events.sample.add_listener(lambda sample: samples.append(sample))
    environment.authbench.events.cell_stop.add_listener(lambda cell: cells.append(cell))
    return environment, coordinator, samples, cells


def _workers(count: int, port: int, journey_ms: float, master_timeout: float = 10) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    return [subprocess.Popen([sys.executable, str(HERE / "count_worker.py"), str(port), str(journey_ms),
                              str(master_timeout)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for _ in range(count)]


def _reap(environment, processes: list[subprocess.Popen]) -> list[int]:
    environment.runner.quit()
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=15))
        except subprocess.TimeoutExpired:
            process.kill()
            codes.append(process.wait())
    return codes


def test_20x200_over_3_workers_is_4000_tests_with_warmup_and_metrics():
    environment, coordinator, samples, cells = _start_master(MASTER_PORT)
    processes = _workers(3, MASTER_PORT, journey_ms=2)
    server = serve(environment, METRICS_PORT)
    scrapes: list[dict[str, float]] = []

    def scrape_while_running() -> None:
        while not cells:
            scrapes.append(scrape(METRICS_URL))
            gevent.sleep(0.2)

    try:
        coordinator.wait_for_workers(3, WAIT)
        scraper = gevent.spawn(scrape_while_running)
        (cell,) = run_plan(environment, parse_plan("20x200", "1s"), cell_time_limit=CELL_LIMIT)
        scraper.join(timeout=5)
        final = scrape(METRICS_URL)
    finally:
        server.shutdown()
        server.server_close()
        codes = _reap(environment, processes)
    assert codes == [0, 0, 0]  # the master's quit ends every worker cleanly
    assert cell.complete and cell.degraded is None and len(cell.samples) == 4000
    per_user = Counter(s.user for s in cell.samples)
    assert per_user == {user: 200 for user in range(20)}
    assert all(sorted(s.iteration for s in cell.samples if s.user == u) == list(range(200)) for u in range(20))
    warm = [s for s in samples if s.phase == WARMUP]
    assert warm and max(s.start for s in warm) < min(s.start for s in cell.samples)
    assert sorted(samples, key=lambda s: (s.phase, s.user, s.iteration)) == sorted(
        warm + cell.samples, key=lambda s: (s.phase, s.user, s.iteration))  # every sample reached the master
    assert cell.steps["sleep journey"]["requests"] >= 4000  # Locust's own stats came from the workers
    errors = sum(s.outcome == "error" for s in cell.samples)
    assert errors > 0
    taken = {worker: {s.account for s in cell.samples if s.worker == worker} for worker in {s.worker for s in samples}}
    assert len(taken) == 3 and sum(map(len, taken.values())) == len(set().union(*taken.values()))  # each its own
    # /metrics during the run saw the warm-up and then progress; at the end its counters equal the results
    assert any(seen.get('authbench_phase{authbench_phase="warmup"}') == 1 for seen in scrapes)
    assert any(0 < seen.get("authbench_cell_journeys_done", 0) < 4000 for seen in scrapes)
    assert any(seen.get("authbench_workers") == 3 for seen in scrapes)
    assert final['authbench_journeys_total{outcome="ok",phase="measured",reason=""}'] == 4000 - errors
    assert final['authbench_journeys_total{outcome="error",phase="measured",reason="injected"}'] == errors
    assert final['authbench_journeys_total{outcome="ok",phase="warmup",reason=""}'] + final.get(
        'authbench_journeys_total{outcome="error",phase="warmup",reason="injected"}', 0) == len(warm)
    assert final['authbench_journey_duration_seconds_count{phase="measured"}'] == 4000
    assert final["authbench_cell_journeys_done"] == final["authbench_cell_journeys_planned"] == 4000
    assert final['authbench_phase{authbench_phase="idle"}'] == 1


def test_a_worker_killed_mid_pattern_degrades_the_cell_and_the_run_goes_on():
    environment, coordinator, samples, cells = _start_master(MASTER_PORT + 2)
    processes = _workers(3, MASTER_PORT + 2, journey_ms=20)
    killed: list[int] = []

    def kill_one_worker() -> None:
        while min(Counter(s.user for s in samples).get(user, 0) for user in range(6)) < 10:
            gevent.sleep(0.05)  # every worker has sent some samples
        processes[0].send_signal(signal.SIGKILL)
        killed.append(len(samples))

    try:
        coordinator.wait_for_workers(3, WAIT)
        killer = gevent.spawn(kill_one_worker)
        first, second = run_plan(environment, parse_plan("6x100,4x5"), cell_time_limit=CELL_LIMIT)
        killer.join(timeout=5)
    finally:
        codes = _reap(environment, processes)
    assert killed and codes[0] == -signal.SIGKILL and codes[1:] == [0, 0]
    lost = first.degraded
    assert lost is not None and lost["workers_lost"] == 1 and lost["users_lost"] == 2  # 6 users over 3 workers
    received = Counter(s.user for s in first.samples)
    assert lost["journeys_lost"] == 600 - len(first.samples) > 0
    short = [user for user in range(6) if received[user] < 100]
    assert len(short) == 2 and all(received[user] > 0 for user in short)  # what the dead worker sent is kept
    assert all(received[user] == 100 for user in range(6) if user not in short)
    assert len([s for s in samples if s.pattern == "6x100"]) == len(first.samples)
    assert second.complete and second.degraded is None and len(second.samples) == 20  # on the two left
    assert cells == [first, second]


def test_version_mismatch_is_refused_on_both_sides():
    environment, coordinator, _, _ = _start_master(MASTER_PORT + 4)
    code = ("import locust, sys, authbench; authbench.__version__ = '0.0.1-other'; "
            "from count_worker import main; sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-c", code, str(MASTER_PORT + 4), "1"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(DistributedError, match=f"runs authbench 0.0.1-other, this master {__version__}") as info:
            coordinator.wait_for_workers(1, WAIT)
        assert info.value.exit_code == 2
        _, err = process.communicate(timeout=WAIT)
    finally:
        _reap(environment, [process])
    assert process.returncode == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"authbench: error: the master runs authbench {__version__}, this worker 0.0.1-other")
    assert "Traceback" not in err


def test_a_level_on_workers_shows_its_rate_on_the_masters_metrics_as_it_runs():
    """The workers send their counters with their samples, so the master's level gauges follow the level."""
    from authbench.openmodel.rates import Arrivals, Level, LevelPlan
    from authbench.openmodel.runner import run_any

    environment, coordinator, _samples, cells = _start_master(MASTER_PORT + 6)
    processes = _workers(2, MASTER_PORT + 6, journey_ms=2)
    server = serve(environment, METRICS_PORT + 6)
    scrapes: list[dict[str, float]] = []

    def scrape_while_running() -> None:
        while not cells:
            scrapes.append(scrape(f"http://127.0.0.1:{METRICS_PORT + 6}/metrics"))
            gevent.sleep(0.2)

    try:
        coordinator.wait_for_workers(2, WAIT)
        scraper = gevent.spawn(scrape_while_running)
        run_any(environment, LevelPlan((Level("40/s", 40.0, 3.0),), Arrivals()), cell_time_limit=CELL_LIMIT)
        scraper.join(timeout=5)
    finally:
        server.shutdown()
        server.server_close()
        codes = _reap(environment, processes)
    assert codes == [0, 0]
    (cell,) = cells
    assert cell.open["started"] == 120 and cell.complete
    during = [seen for seen in scrapes if seen.get("authbench_level_achieved_rate", 0) > 0
              and seen.get("authbench_cell_journeys_done", 0) < 120]
    assert during, scrapes[-3:]  # a rate while the level still ran, not only its final figures
    assert all(seen["authbench_level_target_rate"] == 40 for seen in during)
    assert max(seen["authbench_level_achieved_rate"] for seen in during) > 20
