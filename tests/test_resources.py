"""The resource sampler on real processes: a busy one saturates, an idle one does not."""

from __future__ import annotations

import subprocess
import sys
import time

from authbench.cluster.resources import (
    GENERATOR,
    GENERATOR_SATURATED_PCT,
    Reading,
    ResourceSampler,
    lab_components,
    summarize_readings,
)
from authbench.patterns import Pattern
from authbench.results.sample import MEASURED, Sample

BUSY_SECONDS = 3


def test_busy_process_is_flagged_saturated_and_idle_one_is_not(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {BUSY_SECONDS}\n"
                             "while time.time() < end: pass"])
    idle = subprocess.Popen(["sleep", str(BUSY_SECONDS)])
    try:
        sampler = ResourceSampler({GENERATOR: busy.pid, "idle": idle.pid}, tmp_path / "r.csv", interval=0.2)
        sampler.cell_start(Pattern(1, 1), 1, warmup_s=0)
        sampler.start()
        sampler.sample(Sample(time.time(), 1.0, 0, 0, "ok", "", MEASURED, "1x1", 1))
        time.sleep(1.5)
        summary = sampler.cell_summary()
        sampler.stop()
    finally:
        busy.kill()
        idle.kill()
        busy.wait()
        idle.wait()
    generator, idle_one = summary["components"][GENERATOR], summary["components"]["idle"]
    # A spinning process always runs or waits for a core: the two add up to ~100% however loaded the
    # machine is, and the flag follows its CPU share (all of a core on an idle machine).
    assert generator["cpu_pct_mean"] + summary["generator_waiting_pct"] > 80
    assert summary["generator_saturated"] is (generator["cpu_pct_mean"] > GENERATOR_SATURATED_PCT)
    assert generator["cpu_s"] > 0 and generator["cpu_pct_max"] > idle_one["cpu_pct_max"]
    assert generator["cpu_ms_per_journey"] == round(generator["cpu_s"] * 1000, 3)  # one measured journey
    assert idle_one["cpu_pct_max"] < 5
    rows = (tmp_path / "r.csv").read_text().splitlines()
    assert len(rows) > 10 and rows[1].split(",")[3] == MEASURED


def test_lab_components_keep_one_cluster_and_the_shared_servers():
    state = {"components": {"ldap": {"pid": 10}, "lb": {"pid": 11}, "local/idp-a": {"pid": 12},
                            "stateless/idp-a": {"pid": 13}, "stateless/sp": {"pid": None}}}
    components = lab_components(state, "stateless")
    assert components.pop(GENERATOR) > 0
    assert components == {"ldap": 10, "lb": 11, "idp-a": 13}


def _readings(cpu: float, waiting: float, n: int = 5) -> list[Reading]:
    return [Reading(float(t), MEASURED, GENERATOR, cpu, cpu / 100, 1 << 20, {7: cpu}, {7: waiting}) for t in range(n)]


def test_saturation_is_the_generator_using_its_core_not_waiting_for_one():
    def flag(cpu: float, waiting: float) -> bool:
        return summarize_readings(_readings(cpu, waiting), {GENERATOR: 7}, 10, 1.0)["generator_saturated"]

    assert flag(97.0, 2.0) is True  # CPU-bound: more load needs another generator process
    assert flag(40.0, 58.0) is False  # starved by the servers it shares the machine with
    assert summarize_readings(_readings(40.0, 58.0), {GENERATOR: 7}, 10, 1.0)["generator_waiting_pct"] == 58.0


def test_a_few_milliseconds_at_a_cell_edge_do_not_decide_its_cpu():
    """A reading covering 5 ms where the kernel's 10 ms accounting charged one tick reads 200 %: weighted by the
    time it covers, it barely moves the mean, and it is no maximum."""
    full = [Reading(float(t), MEASURED, GENERATOR, 30.0, 0.3, 1 << 20, {7: 30.0}, {7: 0.0}, 1.0) for t in range(3)]
    edge = Reading(3.005, MEASURED, GENERATOR, 200.0, 0.01, 1 << 20, {7: 200.0}, {7: 0.0}, 0.005)
    summary = summarize_readings([*full, edge], {GENERATOR: 7}, 10, 1.0)
    part = summary["components"][GENERATOR]
    assert part["cpu_pct_mean"] == 30.3 and part["cpu_pct_max"] == 30.0  # unweighted: 72.5 and 200
    assert summary["generator_saturated"] is False


def test_a_server_the_generator_started_is_not_counted_as_the_generator(tmp_path):
    """`compare` starts its own lab: the lab's servers are the generator's children, but their CPU is theirs."""
    spin = f"import time\nend = time.time() + {BUSY_SECONDS}\nwhile time.time() < end: pass"
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys\n"
                               f"server = subprocess.Popen([sys.executable, '-c', {spin!r}])\n"
                               "print(server.pid, flush=True)\nserver.wait()"], stdout=subprocess.PIPE, text=True)
    try:
        server = int(parent.stdout.readline())
        sampler = ResourceSampler({GENERATOR: parent.pid, "server": server}, tmp_path / "r.csv", interval=0.2,
                                  not_generator=frozenset({server}))
        sampler.cell_start(Pattern(1, 1), 1, warmup_s=0)
        sampler.start()
        sampler.measuring(Pattern(1, 1), 1)
        time.sleep(1.5)
        summary = sampler.cell_summary()
        sampler.stop()
    finally:
        parent.kill()
        parent.wait()
    parts = summary["components"]
    assert parts["server"]["cpu_pct_mean"] > 20 and parts[GENERATOR]["cpu_pct_mean"] < 10, parts


def test_a_restarted_server_is_measured_under_its_new_pid(tmp_path):
    """A fault plan's `start` brings a node back as a new process (a Keycloak JVM booting again costs much CPU): the
    sampler asks `repoint` for the current pids, so the new process is measured, not the ended one."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    busy = subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {BUSY_SECONDS}\n"
                             "while time.time() < end: pass"])
    try:
        sampler = ResourceSampler({"node": ended.pid}, tmp_path / "r.csv", interval=0.2,
                                  repoint=lambda: {"node": busy.pid, "not-sampled": 1})
        sampler.cell_start(Pattern(1, 1), 1, warmup_s=0)
        sampler.start()
        time.sleep(1.0)
        summary = sampler.cell_summary()
        sampler.stop()
    finally:
        busy.kill()
        busy.wait()
    assert summary["components"]["node"]["pid"] == busy.pid and summary["components"]["node"]["cpu_s"] > 0
    assert "not-sampled" not in summary["components"]
