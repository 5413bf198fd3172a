"""The lab supervisor: up/down/status, fault injection, the CLI's errors, HAProxy and LDAP set-up."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from pathlib import Path

import ldap
import pytest
import requests

from authbench_lab import components, haproxy, pki, processes, slapd
from authbench_lab import lab as lab_api
from authbench_lab.config import LDAP_IDP_DN, LDAP_PEOPLE, SCOPE_DOMAIN, LabConfig, password_for, username

from ports import IDLE as IDLE_BASE_PORT
from ports import SMALL as SMALL_BASE_PORT

CLI_TIMEOUT = 60
LB_TRIES = 6


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "authbench", *args],
        capture_output=True, text=True, timeout=CLI_TIMEOUT, env={**os.environ, **(env or {})}, check=False,
    )


def assert_usage_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("authbench: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


@pytest.fixture(scope="module")
def small_lab_config(tmp_path_factory: pytest.TempPathFactory):
    """A lab of its own (one cluster, one worker per node) that these tests may stop, restart and take down."""
    config = LabConfig(timings="fast", run_dir=tmp_path_factory.mktemp("small-lab"), base_port=SMALL_BASE_PORT,
                       backends=["local"], users=20, workers=1, threads=2)
    try:
        yield config
    finally:
        lab_api.down(config.run_dir)


@pytest.fixture
def small_lab(small_lab_config: LabConfig) -> LabConfig:
    """The small lab, whole, whatever ran before (a test here takes it down and purges it): `up` starts what is
    not running and restarts nothing that is."""
    lab_api.up(small_lab_config)
    return small_lab_config


def pids(run_dir: Path) -> dict[str, int | None]:
    return {row["name"]: row["pid"] for row in lab_api.status(run_dir)}


# -- the session lab ------------------------------------------------------------------------------------


def test_session_lab_is_healthy(lab):
    rows = lab_api.status(lab.run_dir)
    assert [row["name"] for row in rows] == components.names(lab)
    unhealthy = [(row["name"], row["detail"]) for row in rows if not row["healthy"]]
    assert not unhealthy
    assert all(isinstance(row["pid"], int) for row in rows)


def test_balanced_urls_answer_over_verified_tls(lab):
    for backend in lab.backends:
        for url in (lab.lb_url(backend), lab.node_url(backend, "a"), lab.node_url(backend, "b")):
            assert requests.get(url + "/idp/status", verify=str(lab.ca_cert), timeout=5).status_code == 200
        assert requests.get(lab.sp_url(backend) + "/Shibboleth.sso/Status", verify=str(lab.ca_cert),
                            timeout=5).status_code == 200


# -- LDAP -----------------------------------------------------------------------------------------------


def service_connection(lab: LabConfig):
    conn = ldap.initialize(lab.ldap_url())
    conn.simple_bind_s(LDAP_IDP_DN, pki.read_secret(slapd.paths(lab).idp_password))
    return conn


def test_ldap_has_the_seeded_users(lab):
    conn = service_connection(lab)
    entries = conn.search_s(LDAP_PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=inetOrgPerson)", ["uid", "mail"])
    assert len(entries) == lab.users
    last = username(lab.users - 1, lab.users)
    by_uid = {attrs["uid"][0].decode(): attrs for _dn, attrs in entries}
    assert by_uid[last]["mail"] == [f"{last}@{SCOPE_DOMAIN}".encode()]


def test_ldap_passwords_bind_but_cannot_be_read(lab):
    user = username(7, lab.users)
    dn = f"uid={user},{LDAP_PEOPLE}"
    conn = ldap.initialize(lab.ldap_url())
    conn.simple_bind_s(dn, password_for(user))
    with pytest.raises(ldap.INVALID_CREDENTIALS):
        ldap.initialize(lab.ldap_url()).simple_bind_s(dn, password_for(user) + "x")
    entry = service_connection(lab).search_s(dn, ldap.SCOPE_BASE, attrlist=["*", "userPassword"])
    assert "userPassword" not in entry[0][1]
    anonymous = ldap.initialize(lab.ldap_url())
    with pytest.raises(ldap.NO_SUCH_OBJECT):  # nothing is visible without the service account
        anonymous.search_s(LDAP_PEOPLE, ldap.SCOPE_ONELEVEL)


def test_ldaps_verifies_with_the_lab_ca(lab):
    conn = ldap.initialize(lab.ldaps_url())
    conn.set_option(ldap.OPT_X_TLS_CACERTFILE, str(lab.ca_cert))
    conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
    conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
    conn.simple_bind_s(LDAP_IDP_DN, pki.read_secret(slapd.paths(lab).idp_password))


# -- HAProxy configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize("stickiness", ["none", "session"])
def test_haproxy_accepts_the_rendered_config(tmp_path, stickiness):
    config = LabConfig(run_dir=tmp_path, stickiness=stickiness)
    path = haproxy.prepare(config)
    ok, output = haproxy.validate(lab_api.find_binaries()["haproxy"], path)
    assert ok, output
    text = path.read_text()
    assert ("stick match req.cook(JSESSIONID)" in text) == (stickiness == "session")
    assert text.count("option redispatch") == len(config.backends)
    assert "bind 0.0.0.0" not in text and "bind *" not in text


# -- the small lab: idempotence, fault injection, down ------------------------------------------------


def test_second_up_restarts_nothing(small_lab):
    before = pids(small_lab.run_dir)
    result = lab_api.up(small_lab)
    assert result["started"] == []
    assert pids(small_lab.run_dir) == before
    assert all(before.values())


def test_stop_and_start_an_idp_node(small_lab):
    old_pid = pids(small_lab.run_dir)["local/idp-a"]
    stopped = lab_api.stop_component(small_lab.run_dir, "idp-a")  # bare name: one cluster only
    assert stopped == {"name": "local/idp-a", "pid": old_pid, "was_running": True}
    row = {r["name"]: r for r in lab_api.status(small_lab.run_dir)}["local/idp-a"]
    assert row["pid"] is None and not row["healthy"]
    assert not processes.is_running(old_pid, "gunicorn")
    for _ in range(LB_TRIES):  # HAProxy retries on the other node while node A is down
        answer = requests.get(small_lab.lb_url("local") + "/idp/status", verify=str(small_lab.ca_cert), timeout=5)
        assert answer.status_code == 200
    started = lab_api.start_component(small_lab.run_dir, "local/idp-a")
    assert started["pid"] != old_pid
    row = {r["name"]: r for r in lab_api.status(small_lab.run_dir)}["local/idp-a"]
    assert row["healthy"] and row["pid"] == started["pid"]


def test_memcached_stop_start(small_lab):
    lab_api.stop_component(small_lab.run_dir, "memcached-b")
    assert not {r["name"]: r for r in lab_api.status(small_lab.run_dir)}["memcached-b"]["healthy"]
    assert lab_api.start_component(small_lab.run_dir, "memcached-b")["detail"].startswith("version")


def test_different_config_is_refused(small_lab):
    with pytest.raises(lab_api.LabError, match="authbench lab down") as error:
        lab_api.up(dataclasses.replace(small_lab, users=small_lab.users + 1))
    assert error.value.exit_code == 2
    result = cli("lab", "up", "--backend", "local,stateless", "--base-port", str(SMALL_BASE_PORT),
                 "--run-dir", str(small_lab.run_dir))
    assert_usage_error(result, "different configuration", "lab down")


def test_unknown_component_lists_the_valid_ones(small_lab):
    result = cli("lab", "stop", "nosuch", "--lab-dir", str(small_lab.run_dir))
    assert_usage_error(result, "nosuch", "local/idp-a", "redis-primary")


def test_nothing_secret_in_output_or_logs(small_lab):
    files = slapd.paths(small_lab)
    secrets = [pki.read_secret(files.idp_password), pki.read_secret(files.admin_password),
               pki.read_secret(small_lab.cluster_dir("local") / "sealer.key")]
    output = cli("lab", "status", "--json", "--lab-dir", str(small_lab.run_dir)).stdout
    logs = "".join(path.read_text(errors="replace") for path in small_lab.run_dir.rglob("*.log"))
    state = small_lab.state_file.read_text()
    for secret in secrets:
        assert secret not in output and secret not in logs and secret not in state
    assert oct(files.idp_password.stat().st_mode & 0o777) == "0o600"


def test_down_stops_everything_and_is_idempotent(small_lab):
    state = lab_api.read_state(small_lab.run_dir)
    running = {name: (entry["pid"], entry["fragment"]) for name, entry in state["components"].items()}
    result = lab_api.down(small_lab.run_dir)
    assert sorted(result["stopped"]) == sorted(running)
    assert not [name for name, (pid, fragment) in running.items() if processes.is_running(pid, fragment)]
    assert all(processes.port_is_free(port) for port in small_lab.all_ports().values())
    assert lab_api.down(small_lab.run_dir)["stopped"] == []
    again = cli("lab", "down", "--lab-dir", str(small_lab.run_dir))
    assert again.returncode == 0 and "nothing to stop" in again.stdout
    assert all(row["pid"] is None for row in lab_api.status(small_lab.run_dir))
    purged = cli("lab", "down", "--purge", "--lab-dir", str(small_lab.run_dir))
    assert purged.returncode == 0 and not small_lab.run_dir.exists()


def test_an_own_child_in_the_middle_of_exec_is_still_running(tmp_path, monkeypatch):
    """CI once saw a restarted PostgreSQL called "exited": while `unshare` execs `postgres` the command line
    reads empty. Our own unreaped child is judged by its exit status, a stranger's pid by its command line."""
    started = processes.start([sys.executable, "-c", "import time; time.sleep(30)"], log_path=tmp_path / "log",
                              pid_path=tmp_path / "pid", cwd=tmp_path)
    try:
        monkeypatch.setattr(processes, "_cmdline", lambda pid: None)  # the exec window
        assert processes.is_running(started.pid, "no such fragment")
        monkeypatch.undo()
        assert processes.stop(started.pid, "time.sleep(30)")
        assert not processes.is_running(started.pid, "time.sleep(30)")
    finally:
        processes.stop(started.pid, "time.sleep(30)")


# -- errors before anything starts ---------------------------------------------------------------------


def test_port_in_use_is_named(tmp_path):
    config = LabConfig(run_dir=tmp_path, base_port=IDLE_BASE_PORT, backends=["local"])
    busy = config.cluster_port("local", "idp-b")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT from earlier tests is fine
        sock.bind(("127.0.0.1", busy))
        sock.listen()
        result = cli("lab", "up", "--backend", "local", "--base-port", str(IDLE_BASE_PORT),
                     "--lab-dir", str(tmp_path))
    assert_usage_error(result, f"port {busy}", "local/idp-b", "--base-port")
    assert not config.state_file.exists()


def test_missing_packages_are_listed(tmp_path):
    result = cli("lab", "up", "--backend", "local", "--base-port", str(IDLE_BASE_PORT), "--lab-dir",
                 str(tmp_path / "run"), env={lab_api.PATH_ENV: str(tmp_path)})
    assert_usage_error(result, "slapd, slapadd, memcached, redis-server, haproxy", "make setup", "apt-get install")
    some = tmp_path / "some"
    some.mkdir()
    for name in ("slapd", "slapadd"):
        (some / name).symlink_to(lab_api.find_binaries()[name])
    with pytest.raises(lab_api.LabError, match="missing programs: memcached, redis-server, haproxy;"):
        lab_api.find_binaries(str(some))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--backend", "nope"], "unknown backend 'nope'"),
        (["--backend", "local,nope"], "unknown backend 'nope'"),
        (["--users", "0"], "--users must be between 1 and 100000"),
        (["--users", "100001"], "--users must be between 1 and 100000"),
        (["--base-port", "65500"], "--base-port"),
        (["--idp-cookie-path", "idp"], "--idp-cookie-path must be a URL path starting with /"),
        (["--idp-cookie-path", "/idp; Domain=x"], "--idp-cookie-path must be a URL path starting with /"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, fragment):
    result = cli("lab", "up", "--lab-dir", str(tmp_path), *args)
    assert_usage_error(result, fragment)
    assert not any(tmp_path.iterdir())


def test_argparse_errors_keep_exit_2(tmp_path):
    result = cli("lab", "up", "--stickiness", "sometimes", "--lab-dir", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_down_without_a_lab(tmp_path):
    result = cli("lab", "down", "--lab-dir", str(tmp_path / "none"))
    assert result.returncode == 0 and "no lab" in result.stdout
    assert lab_api.status(tmp_path / "none") == []
