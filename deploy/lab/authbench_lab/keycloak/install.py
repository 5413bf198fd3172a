"""Keycloak's distribution, fetched once from Maven Central into a cache outside the clone, built once per option set.

The zip is checked against the SHA-1 Maven Central publishes beside it, unpacked into a pristine tree, and
`kc.sh build` runs on a copy of that tree per set of build options (a marker file in the copy names the options),
so a second `lab up`, another design or another lab reuses it. Each node runs from a home of its own: a real
`bin/kc.sh`, `conf/` and `data/` (its realm import, temporary files) and symbolic links to the built `lib/`,
`themes/` and `providers/`, so nodes never share mutable files.

    python3 install.py      # an image's build (compose's keycloak target): every design's build, nothing else kept

The module needs only Python's standard library, so an image can run it before authbench is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

VERSION = "26.7.3"
MAVEN = "https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist"
ZIP_NAME = f"keycloak-quarkus-dist-{VERSION}.zip"
CACHE_ENV = "AUTHBENCH_TOOLS_CACHE"  # the project's cache of tools built or fetched once (deploy/k8s/tools.sh)
DEFAULT_CACHE = "/opt/authbench-cache"
DOWNLOAD_TIMEOUT = 600.0  # seconds for the ~170 MB zip
CHUNK = 1 << 20
BUILD_TIMEOUT = 600.0  # `kc.sh build` takes about a minute on two shared cores
MARKER = ".authbench-build.json"
LINKED = ("lib", "themes", "providers")  # shared, read-only at run time (after `build`)
SETUP_HINT = "install Java 17 or newer (apt-get install openjdk-17-jre-headless)"
# Build options (`kc.sh build`): PostgreSQL, health endpoints, and but for the persistent design no persistent user
# sessions (the others keep user sessions in memory only). The cache options (server.py) are run-time options, so
# owners2, owners1 and local share one build; persistent has its own (the installer builds once per option set).
BUILD_OPTIONS = ["--db=postgres", "--health-enabled=true", "--features-disabled=persistent-user-sessions"]
PERSISTENT_BUILD_OPTIONS = ["--db=postgres", "--health-enabled=true"]  # persistent-user-sessions: on by default
BUILDS = (BUILD_OPTIONS, PERSISTENT_BUILD_OPTIONS)  # what every design needs: owners2, owners1 and local share one


class InstallError(RuntimeError):
    """The distribution could not be fetched, checked, unpacked or built; the message says which."""


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE) / "keycloak" / VERSION


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One installer at a time per cache (two labs starting together must not build twice into one tree)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _fetch(url: str, timeout: float = DOWNLOAD_TIMEOUT) -> Iterator[bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 (a fixed https URL)
            while chunk := answer.read(CHUNK):
                yield chunk
    except OSError as exc:
        raise InstallError(f"cannot download {url}: {exc}") from None


def download(root: Path) -> Path:
    """The checked zip in the cache; downloaded when absent (the .sha1 file decides whether it is whole)."""
    target = root / ZIP_NAME
    if target.is_file():
        return target
    url = f"{MAVEN}/{VERSION}/{ZIP_NAME}"
    expected = b"".join(_fetch(url + ".sha1")).decode().split()[0].lower()
    digest, part = hashlib.sha1(), target.with_suffix(".part")  # noqa: S324 (Maven Central publishes SHA-1)
    with open(part, "wb") as out:
        for chunk in _fetch(url):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != expected:
        part.unlink()
        raise InstallError(f"{url} does not match its published SHA-1 {expected} (got {digest.hexdigest()})")
    part.replace(target)
    return target


def unpack(root: Path, archive: Path) -> Path:
    """The pristine tree (keycloak-VERSION/), unpacked once with the zip's executable bits."""
    tree = root / "dist"
    if (tree / "bin" / "kc.sh").is_file():
        return tree
    staging = root / "dist.part"
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(archive) as zipped:
        prefix = f"keycloak-{VERSION}/"
        for info in zipped.infolist():
            if not info.filename.startswith(prefix) or ".." in info.filename.split("/"):
                continue
            path = staging / info.filename[len(prefix):]
            if info.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, open(path, "wb") as out:
                shutil.copyfileobj(source, out)
            mode = (info.external_attr >> 16) & 0o777
            if mode & stat.S_IXUSR:
                path.chmod(0o755)
    staging.replace(tree)
    return tree


def options_key(options: list[str]) -> str:
    return hashlib.sha256(json.dumps(sorted(options)).encode()).hexdigest()[:12]


def find_built(root: Path, options: list[str]) -> Path | None:
    """The tree `kc.sh build OPTIONS` made, if there is one; only reads (a container's image is read-only)."""
    built = root / f"built-{options_key(options)}"
    marker = built / MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("options") == sorted(options):
        return built
    return None


def build(root: Path, tree: Path, options: list[str]) -> Path:
    """A copy of the tree on which `kc.sh build OPTIONS` ran (kept, with a marker naming the options)."""
    if found := find_built(root, options):
        return found
    built = root / f"built-{options_key(options)}"
    staging = built.with_name(built.name + ".part")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(built, ignore_errors=True)
    shutil.copytree(tree, staging, symlinks=True)
    began = time.perf_counter()
    log = staging / "build.log"
    try:
        with open(log, "wb") as out:
            done = subprocess.run([str(staging / "bin" / "kc.sh"), "build", *options], stdout=out,
                                  stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise InstallError(f"kc.sh build took over {BUILD_TIMEOUT:g} s; log: {log}") from None
    except FileNotFoundError as exc:
        raise InstallError(f"cannot run kc.sh build ({exc}); {SETUP_HINT}") from None
    if done.returncode != 0:
        raise InstallError(f"kc.sh build failed (exit {done.returncode}); log: {log}")
    (staging / MARKER).write_text(json.dumps({"options": sorted(options),
                                              "seconds": round(time.perf_counter() - began, 1)}))
    staging.replace(built)
    return built


def ensure(options: list[str]) -> tuple[Path, dict[str, float]]:
    """The built distribution for `options`, fetching, unpacking and building what is missing; returns it and
    what each step that ran cost ({step: seconds})."""
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise InstallError(f"Keycloak needs Java and none is on PATH; {SETUP_HINT}")
    root = cache_root()
    spent: dict[str, float] = {}

    def timed(step: str, done: Path, work):
        began, had = time.perf_counter(), done.is_file()
        result = work()
        if not had:
            spent[step] = round(time.perf_counter() - began, 1)
        return result

    with _locked(root):
        archive = timed("download", root / ZIP_NAME, lambda: download(root))
        tree = timed("unpack", root / "dist" / "bin" / "kc.sh", lambda: unpack(root, archive))
        built = timed("build", root / f"built-{options_key(options)}" / MARKER, lambda: build(root, tree, options))
    return built, spent


def prune(root: Path) -> list[Path]:
    """Drop the zip and the pristine tree once every build needed is made (an image keeps the builds only)."""
    gone = [path for path in (root / ZIP_NAME, root / "dist", root / ".lock") if path.exists()]
    for path in gone:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return gone


def node_home(built: Path, home: Path) -> Path:
    """A node's own home: real bin/kc.sh (kc.sh takes its home from its own path), conf/ and data/; links to
    the built lib/, themes/ and providers/."""
    (home / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(built / "bin" / "kc.sh", home / "bin" / "kc.sh")
    (home / "conf").mkdir(exist_ok=True)
    shutil.copy2(built / "conf" / "cache-ispn.xml", home / "conf" / "cache-ispn.xml")
    (home / "data" / "import").mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = home / name
        if link.is_symlink() and link.resolve() == (built / name).resolve():
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(built / name)
    return home


def main() -> int:
    """Every build the designs need, then only the builds are kept (the zip and the unbuilt tree are dropped)."""
    try:
        trees = [ensure(options)[0] for options in BUILDS]
    except InstallError as exc:
        print(f"authbench keycloak install: {exc}", file=sys.stderr)
        return 2
    prune(cache_root())
    print(f"authbench keycloak install: Keycloak {VERSION} built in {', '.join(map(str, trees))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
