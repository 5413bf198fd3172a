"""compose.yaml checked offline by Compose itself (`docker compose config`, no daemon, no network) for every
backend, stickiness, profile and Keycloak design, and what its services may see: authbench's never mount the
secrets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from authbench_lab.config import BACKENDS, KEYCLOAK_DESIGNS, STICKINESS

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
COMPOSE = CACHE / "bin" / "docker-compose"  # built by `deploy/k8s/tools.sh docker` (make test-compose)
PROFILES = ((), ("web",), ("shibboleth",), ("keycloak",))
AUTHBENCH_SERVICES = ("master", "worker", "web")
TIMEOUT = 60
SHIB_DIR = ROOT / "deploy" / "compose" / "shibboleth-idp"
STORAGES = ("client", "memcached", "jdbc")

needs_compose = pytest.mark.skipif(not COMPOSE.exists(), reason="docker compose not built: run 'make test-compose'")


def config(*args: str, **env: str) -> subprocess.CompletedProcess:
    offline = ["unshare", "-n"] if os.geteuid() == 0 and shutil.which("unshare") else []
    return subprocess.run([*offline, str(COMPOSE), "-f", str(ROOT / "compose.yaml"), *args], capture_output=True,
                          text=True, timeout=TIMEOUT, check=False, cwd=ROOT,
                          env={**os.environ, "DOCKER_HOST": "unix:///nonexistent", **env})


def rendered(*profiles: str, **env: str) -> dict:
    flags = [flag for profile in profiles for flag in ("--profile", profile)]
    result = config(*flags, "config", "--format", "json", **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stickiness", STICKINESS)
@pytest.mark.parametrize("profiles", PROFILES)
@needs_compose
def test_every_backend_stickiness_and_profile_is_valid(backend, stickiness, profiles):
    flags = [flag for profile in profiles for flag in ("--profile", profile)]
    result = config(*flags, "config", "-q", BACKEND=backend, STICKINESS=stickiness)
    assert result.returncode == 0, result.stderr
    environment = rendered(*profiles, BACKEND=backend, STICKINESS=stickiness)["services"]["init"]["environment"]
    assert (environment["BACKEND"], environment["STICKINESS"]) == (backend, stickiness)


@needs_compose
def test_the_idp_network_is_internal_and_only_the_web_ui_publishes_a_port():
    project = rendered("web", "shibboleth", "keycloak")
    assert project["networks"]["idp"]["internal"] is True
    published = sorted(name for name, service in project["services"].items() if service.get("ports"))
    assert published == ["web"]
    assert all(port["host_ip"] == "127.0.0.1" for port in project["services"]["web"]["ports"])


@needs_compose
def test_secrets_stay_in_the_lab_volume_away_from_authbench():
    services = rendered("web", "shibboleth", "keycloak")["services"]
    for name in AUTHBENCH_SERVICES:
        sources = {volume["source"] for volume in services[name].get("volumes", [])}
        assert "lab" not in sources, name
    readers = {name: volume.get("read_only", False) for name, service in services.items()
               for volume in service.get("volumes", []) if volume["source"] == "lab"}
    assert readers["sp"] is True  # the SP only reads what init wrote


@needs_compose
def test_the_default_profile_has_every_component_of_the_issue():
    services = set(rendered()["services"])
    assert {"init", "ldap", "memcached-a", "memcached-b", "redis", "redis-replica", "idp-a", "idp-b", "lb", "sp",
            "master", "worker"} <= services


@needs_compose
def test_the_shibboleth_profile_puts_shibboleth_idp_nodes_in_the_reference_nodes_place():
    services = rendered("shibboleth")["services"]
    assert "idp-a" not in services and "idp-b" not in services
    for node in ("a", "b"):
        service = services[f"shib-idp-{node}"]
        assert service["networks"]["idp"]["aliases"] == [f"idp-{node}"]  # where the balancer sends
        assert service["command"] == ["node", node]
    assert services["shib-init"]["build"]["context"].endswith("deploy/compose/shibboleth-idp")
    for storage in STORAGES:
        environment = rendered("shibboleth", SHIB_STORAGE=storage)["services"]["shib-idp-a"]["environment"]
        assert environment["SHIB_STORAGE"] == storage


def test_every_shibboleth_idp_file_is_well_formed_and_every_storage_has_its_overlay():
    files = sorted(SHIB_DIR.rglob("*.xml"))
    assert len(files) >= 4
    for path in files:
        etree.parse(str(path))  # raises on a file that is not well-formed XML
    assert sorted(path.name for path in (SHIB_DIR / "overlays").iterdir()) == sorted(STORAGES)
    for storage in STORAGES:
        properties = (SHIB_DIR / "overlays" / storage / "storage.properties").read_text()
        assert "idp.session.StorageService = " in properties
    entrypoint = (SHIB_DIR / "entrypoint.sh").read_text()
    assert "client|memcached|jdbc)" in entrypoint


def test_the_shell_entrypoints_parse_and_the_dockerfile_verifies_its_downloads():
    for script in (SHIB_DIR / "entrypoint.sh", ROOT / "deploy" / "compose" / "sp" / "run.sh"):
        assert subprocess.run(["sh", "-n", str(script)], capture_output=True, check=False).returncode == 0
    dockerfile = (SHIB_DIR / "Dockerfile").read_text()
    assert "sha256sum -c" in dockerfile and "sha1sum -c" in dockerfile
    assert 'rm -rf "$IDP_HOME"/credentials/*' in dockerfile  # the installer's keys never stay in a layer


@needs_compose
def test_the_keycloak_profile_puts_keycloaks_nodes_behind_the_balancer_and_the_sp():
    services = rendered("keycloak")["services"]
    assert not {"idp-a", "idp-b", "memcached-a", "memcached-b", "redis", "redis-replica"} & set(services)
    assert {"init", "ldap", "keycloak-init", "keycloak-db", "keycloak-a", "keycloak-b", "keycloak-descriptor",
            "lb", "sp", "master", "worker"} <= set(services)
    for node in ("a", "b"):
        service = services[f"keycloak-{node}"]
        assert service["build"]["target"] == "keycloak" and service["command"] == ["serve", f"keycloak-{node}"]
        assert list(service["networks"]) == ["idp"]  # the internal network alone
    assert services["keycloak-b"]["depends_on"]["keycloak-a"]["condition"] == "service_healthy"
    assert set(services["lb"]["depends_on"]) >= {"keycloak-a", "keycloak-b", "sp"}
    # the SP starts once Keycloak's descriptor was fetched from node A: no lb -> sp -> lb cycle
    assert services["sp"]["depends_on"]["keycloak-descriptor"]["condition"] == "service_completed_successfully"
    assert services["keycloak-descriptor"]["depends_on"]["keycloak-a"]["condition"] == "service_healthy"
    for design in KEYCLOAK_DESIGNS:
        environment = rendered("keycloak", KEYCLOAK_DESIGN=design)["services"]["keycloak-init"]["environment"]
        assert environment["KEYCLOAK_DESIGN"] == design


def test_the_keycloak_image_verifies_its_download_and_bakes_no_secret():
    dockerfile = (ROOT / "Dockerfile").read_text()
    stage = dockerfile[dockerfile.index("FROM runtime AS keycloak"):dockerfile.index("# -- the default target")]
    assert "openjdk-17-jre-headless" in stage and "python3 /opt/keycloak/install.py" in stage  # SHA-1 checked
    copied = [line.split()[1] for line in stage.splitlines() if line.startswith("COPY ")]
    assert copied == ["deploy/lab/authbench_lab/keycloak/install.py", "--from=build"]  # code, never a key
    assert stage.rstrip().splitlines()[-2:] == ["USER 10001:10001", "WORKDIR /home/authbench"]
