"""The wheel is the whole product: built from a copy of the sources, installed outside the checkout, it runs.

The fresh venv gets authbench from the wheel only; its third-party dependencies come from the test venv
through a .pth line (installing ~60 packages again would add minutes to every `make test`; the container
image build installs them for real from the wheel's own requirements). The test venv's editable install
of authbench is not visible there: a .pth in a directory added by a .pth is never processed.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "lib", "deploy/lab")
COMMAND_TIMEOUT = 120
# What a wheel that installs a working `authbench` must carry, beyond modules found by discovery.
REQUIRED_FILES = ("authbench/cli/__init__.py", "authbench/distributed/master.py", "authbench/ldap/__init__.py",
                  "authbench/report/templates/report.html.j2", "authbench/web/static/index.html",
                  "authbench_lab/idp/app.py", "authbench_lab/sp/__init__.py")


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT, env=env, check=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the sources (a stray file in the checkout cannot leak into it)."""
    src, dist = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    result = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, src,
                 cwd=src)
    assert result.returncode == 0, result.stderr
    (built,) = dist.glob("authbench-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(bin directory, environment) of a fresh venv outside the checkout with the wheel installed."""
    venv = tmp_path_factory.mktemp("venv")
    assert run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv).returncode == 0
    result = run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-deps",
                 wheel, cwd=venv)
    assert result.returncode == 0, result.stderr
    site = Path(run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                    cwd=venv).stdout.strip())
    (site / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return venv / "bin", {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}


def test_wheel_carries_every_package_and_its_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in REQUIRED_FILES if name not in names]
    assert not missing
    packages = {path.parent.relative_to(ROOT / "lib").as_posix() for path in (ROOT / "lib").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names  # a new sub-package is never left out
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info/METADATA")
    assert b"Requires-Dist: locust" in metadata and b"Requires-Dist: python-ldap" in metadata


def test_installed_command_runs_from_the_wheel(installed, tmp_path):
    bin_dir, env = installed
    where = run(bin_dir / "python", "-c", "import authbench, authbench_lab; print(authbench.__file__, "
                "authbench_lab.__file__)", cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and where.stdout.count(str(bin_dir.parent)) == 2
    version = run(bin_dir / "authbench", "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0 and version.stdout.startswith("authbench "), version
    help_text = run(bin_dir / "authbench", "run", "--help", cwd=tmp_path, env=env)
    assert help_text.returncode == 0 and "--expect-workers" in help_text.stdout, help_text.stderr


def test_installed_command_runs_a_pattern_against_the_lab(installed, lab, tmp_path):
    bin_dir, env = installed
    result = run(bin_dir / "authbench", "run", "--target", "lab:stateless", "--pattern", "1x3", "--results",
                 tmp_path / "results", "--run-id", "from-wheel", cwd=tmp_path,
                 env={**env, "AUTHBENCH_LAB_DIR": str(lab.run_dir)})
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "results" / "from-wheel" / "samples.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["outcome"] for row in rows] == ["ok"] * 3
