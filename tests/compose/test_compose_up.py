"""compose.yaml's default profile for real: images built from a Debian base made with mmdebstrap, `docker
compose up` with the reference IdP nodes, the real Shibboleth SP, the stores and two workers; per backend
the cluster checks give the lab's ○/× table and a pattern completes with exact counts and 0 errors; the
teardown leaves no container, network, volume, mount or process behind. Then the keycloak profile the same
way: real Keycloak's two nodes (one Infinispan cluster) behind the same balancer and SP.

The compose network is internal and its bridge has no IPv4 address on the host: no route out.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from authbench_lab.config import EXPECTED_CLUSTER_CHECKS

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "deploy" / "k8s"
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
IMAGE_BUILD_TIMEOUT = 1800  # a cold base image, pip install and Debian's Apache + Shibboleth SP
UP_TIMEOUT = 300
KEYCLOAK_UP_TIMEOUT = 900  # two JVMs, one after the other, each within its healthcheck's 300 s start period
MASTER_TIMEOUT = 300
COMMAND_TIMEOUT = 120
PROJECT = os.environ.get("AUTHBENCH_COMPOSE_PROJECT", "abcompose")  # another name beside a running CI's
BACKENDS = ("memcached", "stateless")  # one with Test 3 ×, one more; both ○○× in the 2012 table
PATTERN, USERS, RUNS, WORKERS = "2x5", 2, 5, 2
IMAGES = {"AUTHBENCH_IMAGE": "authbench:ci", "AUTHBENCH_LAB_IMAGE": "authbench-lab:ci",
          "AUTHBENCH_SP_IMAGE": "authbench-sp:ci", "AUTHBENCH_KEYCLOAK_IMAGE": "authbench-keycloak:ci"}
MARKS = {"○": True, "×": False}
KEYCLOAK = "keycloak-owners2"  # the profile's default design
CLUSTER_VIEW = re.compile(r"ISPN000094: Received new cluster view .*\(2\) \[")  # both nodes are members
# the secrets init writes into the lab volume; none may show in a log, the results or the public volume
SECRETS = {"database password": f"clusters/{KEYCLOAK}/db.password", "LDAP bind password": "ldap/idp.password",
           "realm signing key": f"clusters/{KEYCLOAK}/signing.key"}
PRIVATE = [*SECRETS.values(), "keycloak-a/home/conf/keycloak.conf", "keycloak-a/home/data/import/authbench-realm.json"]


class Compose:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.env = {**os.environ, **IMAGES, "DOCKER_HOST": f"unix://{workdir}/docker/docker.sock",
                    "PATTERN": PATTERN, "WORKERS": str(WORKERS), "WARMUP": "0", "REPEAT": "1"}

    def run(self, *command: str, timeout: float = COMMAND_TIMEOUT, check: bool = True, binary: bool = False,
            **env: str) -> subprocess.CompletedProcess:
        result = subprocess.run(command, env={**self.env, **env}, capture_output=True, text=not binary,
                                timeout=timeout, check=False, cwd=ROOT)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited {result.returncode}: {result.stderr!r}"[-3000:])
        return result

    def docker(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return self.run("/usr/bin/docker", *args, **kwargs)

    def compose(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return self.docker("compose", "-p", PROJECT, *args, **kwargs)

    def diagnose(self, *profile: str, services: tuple[str, ...] = ("init", "idp-a", "sp", "lb", "master", "worker"),
                 ) -> str:
        parts = [self.compose(*profile, "ps", "-a", check=False).stdout]
        for service in services:
            parts.append(self.compose(*profile, "logs", "--tail=15", service, check=False).stdout)
        return "\n".join(parts)[-6000:]

    def master(self, *profile: str) -> tuple[str, str]:
        """Wait for the master; its container and log, asserting it ended with exit status 0."""
        self.compose(*profile, "wait", "master", timeout=MASTER_TIMEOUT, check=False)
        master = self.compose(*profile, "ps", "-aq", "master").stdout.strip()
        status = self.docker("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", master).stdout.split()
        log = self.compose(*profile, "logs", "--no-log-prefix", "master").stdout
        assert status == ["exited", "0"], log[-4000:] + self.diagnose(*profile)
        return master, log

    def results(self, master: str, log: str) -> str:
        """The run's results read back from the volume: exact counts, 0 errors, the report and the checks."""
        run_id = re.search(r"folder (compose-\S+);", log).group(1)
        archive = self.docker("cp", f"{master}:/results/{run_id}", "-", binary=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            names = {member.name for member in tar}
            summary = json.loads(tar.extractfile(f"{run_id}/summary.json").read())
            samples = tar.extractfile(f"{run_id}/samples.csv").read().decode().splitlines()
        cell = summary["cells"][0]["summary"]
        assert (cell["tests"], cell["errors"]) == (USERS * RUNS, 0)
        assert len(samples) == 1 + USERS * RUNS and all(",ok," in line for line in samples[1:])
        assert {f"{run_id}/report.html", f"{run_id}/cluster-checks.txt"} <= names
        return "\n".join(samples) + json.dumps(summary)


@pytest.fixture(scope="module")
def compose():
    workdir = Path(tempfile.mkdtemp(prefix="abcompose-", dir="/tmp"))
    bridges_before = _bridges()
    try:
        start = subprocess.run([str(SCRIPTS / "dockerd.sh"), "start", str(workdir)], capture_output=True,
                               text=True, timeout=COMMAND_TIMEOUT * 8, check=False)
        assert start.returncode == 0, start.stderr[-3000:]
        images = subprocess.run([str(SCRIPTS / "images.sh"), str(workdir)], capture_output=True, text=True,
                                env={**os.environ, "IMAGES_SAVE": "0"}, timeout=IMAGE_BUILD_TIMEOUT, check=False)
        assert images.returncode == 0, images.stderr[-3000:]
        handle = Compose(workdir)
        yield handle
        handle.compose("down", "-v", "--remove-orphans", timeout=UP_TIMEOUT, check=False)
        assert not handle.docker("ps", "-aq").stdout.strip()
        assert not handle.docker("volume", "ls", "-q").stdout.strip()
        assert PROJECT not in handle.docker("network", "ls").stdout
    finally:
        subprocess.run([str(SCRIPTS / "dockerd.sh"), "stop", str(workdir)], capture_output=True,
                       timeout=COMMAND_TIMEOUT, check=False)
        assert f" {workdir}/" not in Path("/proc/mounts").read_text()
        assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _mentions(pid, workdir)]
        assert _bridges() == bridges_before
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cluster_checks_and_a_pattern_through_the_real_shibboleth_sp(compose, backend):
    compose.compose("down", "-v", "--remove-orphans", timeout=UP_TIMEOUT)  # a fresh volume per backend
    up = compose.compose("up", "-d", "--no-build", "--pull", "never", "--scale", f"worker={WORKERS}",
                         timeout=UP_TIMEOUT, check=False, BACKEND=backend)
    assert up.returncode == 0, up.stderr[-3000:] + compose.diagnose()
    _assert_no_route_out(compose)
    check = compose.compose("exec", "-T", "sp", "/usr/local/bin/authbench-sp", "check", check=False)
    assert check.returncode == 0 and "overall configuration is loadable" in check.stdout + check.stderr, \
        check.stdout + check.stderr  # `shibd -t` on the SP's configuration as init wrote it
    master, log = compose.master()

    assert _checks(log) == EXPECTED_CLUSTER_CHECKS[backend], log
    assert "Protected content" in log  # the real SP's page, behind mod_shib's session
    results = compose.results(master, log)
    assert "pw-user" not in log + results
    workers = compose.compose("ps", "-aq", "worker").stdout.split()
    assert len(workers) == WORKERS


def test_keycloak_profile_cluster_checks_and_a_pattern_through_the_real_sp_and_keycloak(compose):
    """Real Keycloak's two nodes in containers: one Infinispan cluster, the SP trusting the descriptor node A
    published, Tests 1-3 ○ ○ ○ for owners2 and the pattern with exact counts; no secret in a log or the results."""
    profile = ("--profile", "keycloak")
    services = ("init", "keycloak-init", "keycloak-db", "keycloak-a", "keycloak-b", "keycloak-descriptor", "sp", "lb",
                "master")
    compose.compose("down", "-v", "--remove-orphans", timeout=UP_TIMEOUT)  # the reference profile's volume
    bad = compose.compose(*profile, "run", "--rm", "--pull", "never", "-e", "KEYCLOAK_DESIGN=owners3", "keycloak-init",
                          check=False)
    said = [line for line in bad.stderr.splitlines() if line.startswith("authbench compose:")]
    assert bad.returncode == 2 and len(said) == 1 and "KEYCLOAK_DESIGN must be one of" in said[0], bad.stderr
    began = time.monotonic()
    up = compose.compose(*profile, "up", "-d", "--no-build", "--pull", "never", "--scale", f"worker={WORKERS}",
                         timeout=KEYCLOAK_UP_TIMEOUT, check=False)
    print(f"keycloak profile up in {time.monotonic() - began:.1f} s")
    assert up.returncode == 0, up.stderr[-3000:] + compose.diagnose(*profile, services=services)
    _assert_no_route_out(compose)
    for node in ("keycloak-a", "keycloak-b"):
        container = compose.compose(*profile, "ps", "-q", node).stdout.strip()
        assert compose.docker("inspect", "-f", "{{.State.Health.Status}}", container).stdout.strip() == "healthy"
    assert CLUSTER_VIEW.search(compose.compose(*profile, "logs", "keycloak-a").stdout), "no two-member view"
    check = compose.compose(*profile, "exec", "-T", "sp", "/usr/local/bin/authbench-sp", "check", check=False)
    assert "overall configuration is loadable" in check.stdout + check.stderr, check.stdout + check.stderr

    def volume(path: str) -> str:  # read as the lab's user, from the balancer's container
        return compose.compose(*profile, "exec", "-T", "lb", "cat", f"/lab/{path}").stdout

    descriptor = volume("shibboleth-sp/idp-metadata.xml")  # what the SP trusts: Keycloak's own descriptor
    assert 'entityID="https://lb:' in descriptor and "/realms/authbench" in descriptor
    assert "".join(volume(f"clusters/{KEYCLOAK}/signing.crt").splitlines()[1:-1]) in "".join(descriptor.split())
    modes = compose.compose(*profile, "exec", "-T", "lb", "stat", "-c", "%a", *(f"/lab/{path}" for path in PRIVATE))
    assert modes.stdout.split() == ["600"] * len(PRIVATE)

    began = time.monotonic()
    master, log = compose.master(*profile)
    print(f"keycloak profile's master (warm-up, Tests 1-3, {PATTERN}) in {time.monotonic() - began:.1f} s")
    assert _checks(log) == EXPECTED_CLUSTER_CHECKS[KEYCLOAK], log  # ○ ○ ○, as the lab measured
    assert f"compose-{KEYCLOAK}-" in log and "Protected content" in log
    results = compose.results(master, log)
    logs = compose.compose(*profile, "logs", "--no-log-prefix").stdout
    secrets = {name: volume(path) for name, path in SECRETS.items()}
    secrets["realm signing key"] = "".join(secrets["realm signing key"].splitlines()[1:-1])[:64]
    for name, secret in secrets.items():
        assert secret.strip() and secret.strip() not in logs + results, name
    assert "pw-user" not in logs + results
    image = compose.docker("run", "--rm", "--network", "none", "--entrypoint", "sh",
                           IMAGES["AUTHBENCH_KEYCLOAK_IMAGE"], "-c",
                           "ls /opt/keycloak/keycloak/*; grep -rlE '^db-password|^bindCredential' /opt/keycloak",
                           check=False).stdout
    assert all(line.startswith("built-") for line in image.split()), image  # the builds only: no zip, no secret
    compose.compose(*profile, "down", "-v", "--remove-orphans", timeout=UP_TIMEOUT)


def _checks(log: str) -> tuple[bool, bool, bool]:
    """The ○/× row of check-cluster's table (the line after its header)."""
    lines = log.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["cluster"] and "Test 3" in line)
    return tuple(MARKS[mark] for mark in lines[header + 1].split()[1:4])


def _assert_no_route_out(compose: Compose) -> None:
    """The network is internal and its bridge has no IPv4 address: the containers' gateway does not exist."""
    network = json.loads(compose.docker("network", "inspect", f"{PROJECT}_idp").stdout)[0]
    assert network["Internal"] is True
    bridge = "br-" + network["Id"][:12]
    assert not compose.run("ip", "-4", "-o", "addr", "show", "dev", bridge).stdout.strip()
    subnet = network["IPAM"]["Config"][0]["Subnet"]
    assert subnet not in compose.run("ip", "-4", "route").stdout


def _bridges() -> set[str]:
    links = subprocess.run(["ip", "-o", "link", "show", "type", "bridge"], capture_output=True, text=True,
                           check=False).stdout
    return {line.split(":")[1].strip() for line in links.splitlines()}


def _mentions(pid: str, workdir: Path) -> bool:
    try:
        return f"{workdir}/".encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
