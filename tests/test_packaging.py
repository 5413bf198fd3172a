"""The wheel is the whole product: built from a copy of the sources, installed outside the checkout, it runs.

The fresh venv sees nothing of the test venv: it gets authbench from the wheel and its dependencies from
the wheel's own Requires-Dist, pinned by requirements.txt as constraints, as the container image does. So a
dependency missing from pyproject.toml fails here, not first in a user's venv or the image.
Those dependencies come from a wheelhouse outside the clone ($AUTHBENCH_TOOLS_CACHE/wheelhouse, beside
the tools `make tools` builds): a run installs from it without the index, ~6 s; when that fails (the first
run, or requirements.txt moved on) the wheelhouse is filled from the package index and the install retried,
~25 s here (2026-11, python-ldap compiled).
"""

from __future__ import annotations

import ast
import csv
import email.parser
import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "lib", "deploy/lab")
COMMAND_TIMEOUT = 120
CONSTRAINTS = ROOT / "requirements.txt"
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
WHEELHOUSE = CACHE / "wheelhouse"
FILL_TIMEOUT = 900  # a cold fill downloads ~70 wheels and compiles python-ldap
FIRST_PARTY = {"authbench", "authbench_lab"}
# Files the wheel carries that another interpreter runs: their imports are not the wheel's dependencies.
RUNS_ELSEWHERE = {
    "deploy/lab/authbench_lab/privacyidea/seed.py": "privacyIDEA's own venv (its requirements.txt is beside it)",
}
# What a wheel that installs a working `authbench` must carry, beyond modules found by discovery.
REQUIRED_FILES = ("authbench/cli/__init__.py", "authbench/distributed/master.py", "authbench/kinds/ldap/__init__.py",
                  "authbench/report/templates/report.html.j2", "authbench/web/static/index.html",
                  "authbench/web/static/timeline.js", "authbench/web/static/vendor/uplot/uPlot.iife.min.js",
                  "authbench_lab/idp/app.py", "authbench_lab/sp/__init__.py")


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def pip(*arguments: str | Path, cwd: Path, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "pip", "--disable-pip-version-check", *arguments, cwd=cwd, timeout=timeout)


def normalise(name: str) -> str:
    """A distribution's name as PEP 503 compares them: `Flask_Login` and `flask-login` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requires_dist(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist lines a plain install follows (an extra's are installed only on request)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        metadata = email.parser.BytesParser().parsebytes(archive.read(name))
    return [line for line in metadata.get_all("Requires-Dist", []) if not re.search(r"\bextra\s*==", line)]


def imported_modules(path: Path) -> Iterator[str]:
    """Top-level names of the absolute imports in a file, those inside functions (the lazy ones) too."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.partition(".")[0]


def third_party_imports() -> dict[str, list[str]]:
    """Module -> the files importing it, for every third-party module the wheel's own code imports."""
    found: dict[str, list[str]] = {}
    for top in ("lib", "deploy/lab"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in RUNS_ELSEWHERE:
                continue
            for module in imported_modules(path):
                if module not in sys.stdlib_module_names and module not in FIRST_PARTY:
                    found.setdefault(module, []).append(relative)
    return found


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
    """(bin directory, environment) of a fresh venv outside the checkout: the wheel and its dependencies only."""
    venv = tmp_path_factory.mktemp("venv")
    assert run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv).returncode == 0
    # --no-compile: byte-compiling every dependency was 2/3 of a warm install; what the tests import compiles
    # as it loads.
    install = ("--python", venv / "bin" / "python", "install", "-q", "--no-compile", "--constraint", CONSTRAINTS,
               "--no-index", "--find-links", WHEELHOUSE, wheel)
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    # One run at a time: a concurrent `make test` (another worktree) must not install a half-copied wheel.
    with open(CACHE / "wheelhouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = pip(*install, cwd=venv)
        if result.returncode != 0:
            # The wheelhouse lacks a pinned version: fetch what the wheel requires (the wheelhouse's own
            # wheels first, so python-ldap is not compiled again), then install again without the index.
            fill = pip("wheel", "-q", "--constraint", CONSTRAINTS, "--wheel-dir", WHEELHOUSE, "--find-links",
                       WHEELHOUSE, *requires_dist(wheel), cwd=venv, timeout=FILL_TIMEOUT)
            assert fill.returncode == 0, f"filling {WHEELHOUSE} from the package index failed:\n{fill.stderr}"
            result = pip(*install, cwd=venv)
    assert result.returncode == 0, result.stderr
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return venv / "bin", {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONNOUSERSITE": "1"}


def test_wheel_carries_every_package_and_its_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in REQUIRED_FILES if name not in names]
    assert not missing
    packages = {path.parent.relative_to(ROOT / "lib").as_posix() for path in (ROOT / "lib").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names  # a new sub-package is never left out


def test_wheel_requires_every_distribution_its_code_imports(wheel):
    assert all((ROOT / path).is_file() for path in RUNS_ELSEWHERE)  # an exemption outlives no file
    declared = {normalise(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line).group()) for line in requires_dist(wheel)}
    providers = importlib.metadata.packages_distributions()  # `ldap` -> python-ldap, `hdrh` -> hdrhistogram
    problems = []
    for module, files in sorted(third_party_imports().items()):
        distributions = sorted({normalise(name) for name in providers.get(module, [])})
        if not distributions:
            problems.append(f"{module} (imported by {files[0]}): no distribution installed here provides it")
        elif not set(distributions) & declared:
            problems.append(f"{module} (imported by {files[0]}): {' or '.join(distributions)} is not a Requires-Dist "
                            "of the wheel; add it to pyproject.toml's [project] dependencies")
    assert not problems, "\n".join(problems)


def test_installed_command_runs_from_the_wheel(installed, tmp_path):
    bin_dir, env = installed
    where = run(bin_dir / "python", "-c", "import authbench, authbench_lab; print(authbench.__file__, "
                "authbench_lab.__file__)", cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and where.stdout.count(str(bin_dir.parent)) == 2
    path = run(bin_dir / "python", "-c", "import sys; print('\\n'.join(sys.path))", cwd=tmp_path, env=env)
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}  # the test venv's site-packages
    assert path.returncode == 0 and not ours & set(path.stdout.splitlines()), path
    version = run(bin_dir / "authbench", "--version", cwd=tmp_path, env=env)
    assert version.returncode == 0 and version.stdout.startswith("authbench "), version
    help_text = run(bin_dir / "authbench", "run", "--help", cwd=tmp_path, env=env)
    assert help_text.returncode == 0 and "--expect-workers" in help_text.stdout, help_text.stderr


def test_installed_database_client_finds_its_driver(installed, tmp_path):
    bin_dir, env = installed
    result = run(bin_dir / "python", "-c", "import authbench.kinds.postgres.client, pg8000; print(pg8000.__file__)",
                 cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(str(bin_dir.parent)), result.stdout


def test_installed_command_runs_a_pattern_against_the_lab(installed, lab, tmp_path):
    bin_dir, env = installed
    result = run(bin_dir / "authbench", "run", "--target", "lab:stateless", "--pattern", "1x3", "--results",
                 tmp_path / "results", "--run-id", "from-wheel", cwd=tmp_path,
                 env={**env, "AUTHBENCH_LAB_DIR": str(lab.run_dir)})
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "results" / "from-wheel" / "samples.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["outcome"] for row in rows] == ["ok"] * 3
