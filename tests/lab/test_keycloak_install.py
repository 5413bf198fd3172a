"""Keycloak's installer against a local stand-in for Maven Central: the SHA-1 decides, each step runs once."""

from __future__ import annotations

import hashlib
import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest

from authbench_lab.config import LabConfig
from authbench_lab.keycloak import containers, install, server

STUB_KC = """#!/bin/sh
# stands in for Keycloak's kc.sh: `build` leaves a trace of each run in the tree it built
echo "$@" >> "$(dirname "$0")/../builds.txt"
"""


def stub_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, text, mode in ((f"keycloak-{install.VERSION}/bin/kc.sh", STUB_KC, 0o755),
                                 (f"keycloak-{install.VERSION}/conf/cache-ispn.xml", "<infinispan/>", 0o644),
                                 (f"keycloak-{install.VERSION}/lib/quarkus-run.jar", "jar", 0o644)):
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zipped.writestr(info, text)
        for folder in ("themes/", "providers/"):
            zipped.writestr(f"keycloak-{install.VERSION}/{folder}", "")
    return buffer.getvalue()


@pytest.fixture
def maven(monkeypatch, tmp_path):
    """A loopback HTTP server serving the zip and its .sha1; `files` may be changed by a test."""
    body = stub_zip()
    files = {install.ZIP_NAME: body, install.ZIP_NAME + ".sha1": hashlib.sha1(body).hexdigest().encode()}  # noqa: S324

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = files.get(self.path.rsplit("/", 1)[-1])
            self.send_response(200 if data is not None else 404)
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(install, "MAVEN", f"http://127.0.0.1:{server.server_address[1]}/keycloak-quarkus-dist")
    monkeypatch.setenv(install.CACHE_ENV, str(tmp_path / "cache"))
    yield files
    server.shutdown()
    server.server_close()


def test_fetched_unpacked_and_built_once_then_reused(maven, tmp_path):
    built, spent = install.ensure(["--db=postgres"])
    assert set(spent) == {"download", "unpack", "build"}
    assert (built / "bin" / "kc.sh").stat().st_mode & 0o111
    assert (built / "builds.txt").read_text() == "build --db=postgres\n"
    again, spent = install.ensure(["--db=postgres"])
    assert again == built and spent == {}
    assert (built / "builds.txt").read_text().count("build") == 1
    other, spent = install.ensure(["--db=postgres", "--health-enabled=true"])  # another option set: built apart
    assert other != built and set(spent) == {"build"}


def test_a_zip_that_does_not_match_its_sha1_is_refused_and_not_kept(maven):
    maven[install.ZIP_NAME + ".sha1"] = b"0" * 40
    with pytest.raises(install.InstallError, match="does not match its published SHA-1"):
        install.ensure(["--db=postgres"])
    assert not list(install.cache_root().glob("keycloak-quarkus-dist*"))  # neither the zip nor a .part


def test_each_node_home_has_its_own_files_and_shares_the_built_tree(maven, tmp_path):
    built, _spent = install.ensure(["--db=postgres"])
    homes = [install.node_home(built, tmp_path / node) for node in ("a", "b")]
    for home in homes:
        assert not (home / "bin").is_symlink() and not (home / "conf").is_symlink()
        assert (home / "data" / "import").is_dir()
        assert all((home / name).resolve() == (built / name).resolve() for name in install.LINKED)
    assert install.node_home(built, tmp_path / "a") == homes[0]  # a second up keeps the links


def test_no_java_is_one_actionable_error(maven, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(Path("/nonexistent")))
    with pytest.raises(install.InstallError, match="openjdk-17"):
        install.ensure(["--db=postgres"])


def test_an_image_keeps_one_build_per_option_set_and_a_node_runs_from_it(maven, monkeypatch, tmp_path):
    """compose's Keycloak image: every design's build made at the image's build, the zip and the unbuilt tree
    dropped; a node's home then links to its design's build, and a missing build is one error."""
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # the stub kc.sh needs no Java
    assert install.main() == 0
    trees = sorted(install.cache_root().iterdir())
    assert [tree.name for tree in trees] == sorted(  # owners2, owners1 and local share one build
        f"built-{install.options_key(server.build_options(LabConfig(keycloak_design=design)))}"
        for design in ("owners2", "persistent"))
    config = LabConfig(run_dir=tmp_path / "lab", extras=["postgres", "keycloak"], keycloak_design="persistent")
    command = containers.node_command(config, "b", "172.18.0.6", "172.18.0.0/16")
    assert command[0] == str(server.home(config, "b") / "bin" / "kc.sh")
    built = install.find_built(install.cache_root(), server.build_options(config))
    assert (server.home(config, "b") / "lib").resolve() == (built / "lib").resolve()
    (built / install.MARKER).unlink()
    with pytest.raises(install.InstallError, match="no Keycloak build for the design persistent"):
        containers.node_command(config, "b", "172.18.0.6", "172.18.0.0/16")


def test_an_image_build_that_cannot_install_says_why_in_one_line(maven, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    maven[install.ZIP_NAME + ".sha1"] = b"0" * 40
    assert install.main() == 2
    assert capsys.readouterr().err.count("\n") == 1
