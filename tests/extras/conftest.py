"""One lab with the optional servers for every test that needs them: started once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from authbench_lab import lab as lab_api
from authbench_lab.config import LabConfig
from authbench_lab.privacyidea import server as privacyidea

from ports import EXTRAS as EXTRAS_BASE_PORT

EXTRAS_USERS = 50
# privacyIDEA's venv sits in the tools cache beside helm's (deploy/k8s/tools.sh), outside the clone, so only the first
# `make test` on a machine installs it (~1.5 min), not each fresh clone's.
TOOLS_CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
PRIVACYIDEA_VENV = TOOLS_CACHE / "privacyidea-venv"


@pytest.fixture(scope="session")
def extras_lab(tmp_path_factory: pytest.TempPathFactory):
    config = LabConfig(timings="fast", run_dir=tmp_path_factory.mktemp("extras-lab"), base_port=EXTRAS_BASE_PORT,
                       backends=["local"], users=EXTRAS_USERS, extras=["postgres", "privacyidea"])
    patch = pytest.MonkeyPatch()
    patch.setenv(privacyidea.VENV_ENV, str(PRIVACYIDEA_VENV))
    try:
        lab_api.up(config)
        yield config
    finally:
        lab_api.down(config.run_dir)
        patch.undo()


@pytest.fixture
def extras_env(extras_lab, monkeypatch):
    """`lab:postgres` and friends resolve to the extras lab."""
    monkeypatch.setenv("AUTHBENCH_LAB_DIR", str(extras_lab.run_dir))
    return extras_lab
