"""compose.yaml checked offline by Compose itself (`docker compose config`, no daemon, no network) for every
backend, stickiness and profile, and what its services may see: authbench's never mount the secrets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from authbench_lab.config import BACKENDS, STICKINESS

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
COMPOSE = CACHE / "bin" / "docker-compose"  # built by deploy/k8s/tools.sh (make tools)
PROFILES = ((), ("web",), ("shibboleth",))
AUTHBENCH_SERVICES = ("master", "worker", "web")
TIMEOUT = 60

pytestmark = pytest.mark.skipif(not COMPOSE.exists(), reason="docker compose not built: run 'make tools'")


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
def test_every_backend_stickiness_and_profile_is_valid(backend, stickiness, profiles):
    flags = [flag for profile in profiles for flag in ("--profile", profile)]
    result = config(*flags, "config", "-q", BACKEND=backend, STICKINESS=stickiness)
    assert result.returncode == 0, result.stderr
    environment = rendered(*profiles, BACKEND=backend, STICKINESS=stickiness)["services"]["init"]["environment"]
    assert (environment["BACKEND"], environment["STICKINESS"]) == (backend, stickiness)


def test_the_idp_network_is_internal_and_only_the_web_ui_publishes_a_port():
    project = rendered("web", "shibboleth")
    assert project["networks"]["idp"]["internal"] is True
    published = sorted(name for name, service in project["services"].items() if service.get("ports"))
    assert published == ["web"]
    assert all(port["host_ip"] == "127.0.0.1" for port in project["services"]["web"]["ports"])


def test_secrets_stay_in_the_lab_volume_away_from_authbench():
    services = rendered("web", "shibboleth")["services"]
    for name in AUTHBENCH_SERVICES:
        sources = {volume["source"] for volume in services[name].get("volumes", [])}
        assert "lab" not in sources, name
    readers = {name: volume.get("read_only", False) for name, service in services.items()
               for volume in service.get("volumes", []) if volume["source"] == "lab"}
    assert readers["sp"] is True  # the SP only reads what init wrote


def test_the_default_profile_has_every_component_of_the_issue():
    services = set(rendered()["services"])
    assert {"init", "ldap", "memcached-a", "memcached-b", "redis", "redis-replica", "idp-a", "idp-b", "lb", "sp",
            "master", "worker"} <= services
