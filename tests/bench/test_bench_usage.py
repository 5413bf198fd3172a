"""The benchmark scripts' own bad-input paths: one line and exit 2, before any lab is started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(("script", "arguments", "named"), [
    ("generator_cpu.py", ["--server", "lab,nowhere"], "--server: unknown nowhere"),
    ("generator_cpu.py", ["--kinds", "authbench,fastest"], "--kinds: unknown fastest"),
    ("journey_replay.py", ["--record", "/tmp/x.pickle"], "give --record FILE --sp-url URL --ca FILE"),
    ("master_ingest.py", ["--workers", "0"], "--workers, --users, --journeys and --rounds must be at least 1"),
    ("k6_compare.py", ["--k6", "/nonexistent/k6"], "give --k6 PATH"),
    ("keycloak_campaign.py", ["--failover", "/nonexistent"], "/nonexistent is not a campaign folder"),
    ("oidc_cpu.py", ["--kinds", "authbench,fastest"], "--kinds: unknown fastest"),
    ("oidc_cpu.py", ["--rounds", "0"], "--rounds, --users and --journeys must be at least 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(script, arguments, named):
    result = subprocess.run([sys.executable, str(BENCH / script), *arguments], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"{script}: error:")
