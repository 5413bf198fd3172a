"""What the real-Keycloak tests share: a lab of one design, the 2012 checks and a Test 4 run on it, and a
`lab down` that must leave nothing behind."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from authbench.cli import main
from authbench_lab import lab as lab_api
from authbench_lab import processes
from authbench_lab.config import LabConfig

from ports import KEYCLOAK as KEYCLOAK_BASE_PORT

USERS = 50
NODE_STOP = "at=5s stop keycloak-b; at=15s start keycloak-b"  # Test 4: node B down for 10 s under returning users


@contextmanager
def design_lab(tmp_path_factory: pytest.TempPathFactory, design: str = "") -> Iterator[LabConfig]:
    """`lab up --with keycloak [--keycloak-design DESIGN]` for a module (its start time printed), down at its end."""
    config = LabConfig(run_dir=tmp_path_factory.mktemp(f"keycloak-{design or 'lab'}"), base_port=KEYCLOAK_BASE_PORT,
                       backends=["terracotta"], users=USERS, extras=["postgres", "keycloak"],
                       **({"keycloak_design": design} if design else {}))
    began = time.perf_counter()
    try:
        result = lab_api.up(config)
        print(f"\nlab up --with keycloak{f' --keycloak-design {design}' if design else ''}: "
              f"{time.perf_counter() - began:.1f} s; install steps that ran: "
              f"{result['state'].get('keycloak_install') or 'none (cached)'}")
        yield config
    finally:
        lab_api.down(config.run_dir)


def cluster_check_marks(lab: LabConfig, cluster: str, capsys: pytest.CaptureFixture,
                        oidc: bool = False) -> tuple[tuple[bool, ...], str]:
    """`check-cluster --target lab:CLUSTER` (with `oidc`, `oidc+lab:CLUSTER`): (passed per Test 1-3, its output)."""
    code = main(["check-cluster", "--target", f"{'oidc+' if oidc else ''}lab:{cluster}", "--lab-dir", str(lab.run_dir)])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, out + captured.err
    return tuple(line.split()[2] == "○" for line in out.splitlines() if line.startswith("Test ")), out


def node_stop_run(lab: LabConfig, cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture,
                  *options: str, target: str = "") -> tuple[int, str, dict, dict]:
    """4 returning users for 25 journeys each while node B stops and starts (SAML through the lab's SP unless
    `target` says otherwise): (exit status, output, the cell, the stop's Test 4 entry)."""
    code = main(["run", "--target", target or f"lab:{cluster}", *options, "--pattern", "4x25", "--warmup", "0",
                 "--reuse-session", "--fault", NODE_STOP, "--lab-dir", str(lab.run_dir), "--results", str(tmp_path),
                 "--run-id", "t4"])
    captured = capsys.readouterr()
    cell = json.loads((tmp_path / "t4" / "summary.json").read_text())["cells"][0]
    return code, captured.out + captured.err, cell, cell["failover"]["faults"][0]


def assert_down_leaves_nothing(lab: LabConfig) -> None:
    """`lab down`: no process started from the lab's folder and no port of its plan still taken."""
    lab_api.down(lab.run_dir)
    assert not [proc.info for proc in psutil.process_iter(["pid", "cmdline"])
                if str(lab.run_dir) in " ".join(proc.info["cmdline"] or [])]
    assert all(processes.port_is_free(port) for port in lab.all_ports().values())
