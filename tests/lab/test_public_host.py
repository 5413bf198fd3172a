"""`lab up --public-host NAME --listen ADDRESS`: the lab as clients on other machines or pods see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from cryptography import x509

from authbench.journeys.fastbrowser import FastBrowser
from authbench.journeys.saml import sso_login
from authbench_lab import components, haproxy, pki
from authbench_lab.config import TIMINGS, LabConfig, password_for, username

from ports import PUBLIC_HOST_LAB

CLI_TIMEOUT = 90
# Another name of this machine's loopback, so the SSO below walks the advertised URLs for real.
PUBLIC_NAME = "localhost"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "authbench", *args], capture_output=True, text=True,
                          timeout=CLI_TIMEOUT, env=os.environ, check=False)


@pytest.fixture(scope="module")
def public_lab(tmp_path_factory: pytest.TempPathFactory):
    run_dir = tmp_path_factory.mktemp("public-lab")
    try:
        result = cli("lab", "up", "--run-dir", str(run_dir), "--base-port", str(PUBLIC_HOST_LAB), "--backend", "local",
                     "--users", "5", "--workers", "1", "--threads", "2", "--public-host", PUBLIC_NAME)
        assert result.returncode == 0, result.stderr
        yield run_dir, result.stdout
    finally:
        cli("lab", "down", "--run-dir", str(run_dir))


def test_urls_and_metadata_name_the_public_host(public_lab):
    run_dir, output = public_lab
    sp_port = PUBLIC_HOST_LAB + 500 + 3
    assert f"sp https://{PUBLIC_NAME}:{sp_port}" in output
    endpoints = json.loads(cli("lab", "status", "--json", "--run-dir", str(run_dir)).stdout)["endpoints"]
    assert {urlsplit(endpoints[0][key]).hostname for key in ("lb", "node-a", "node-b", "sp")} == {PUBLIC_NAME}
    metadata = (run_dir / "metadata" / "sp-local.xml").read_text()
    assert f"https://{PUBLIC_NAME}:{sp_port}/" in metadata and "127.0.0.1" not in metadata


def test_sso_walks_the_advertised_urls(public_lab):
    run_dir, _ = public_lab
    hosts = []
    user = username(1, 5)
    with FastBrowser(verify=str(run_dir / "pki" / "ca.crt"),
                     on_request=lambda name, method, url, *rest: hosts.append(urlsplit(url).hostname)) as browser:
        outcome = sso_login(browser, f"https://{PUBLIC_NAME}:{PUBLIC_HOST_LAB + 503}/secure/", user, password_for(user))
    assert outcome.ok, outcome
    assert len(hosts) >= 8 and set(hosts) == {PUBLIC_NAME}  # the SP's and the IdP's redirects included


def test_server_certificate_names_the_public_host(tmp_path):
    _cert, _key, _pem = pki.ensure_server_cert(tmp_path)
    cert_path, _key, _pem = pki.ensure_server_cert(tmp_path, ["authbench-lab.bench.svc", "10.0.0.7"])
    san = x509.load_pem_x509_certificate(cert_path.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert "authbench-lab.bench.svc" in san.get_values_for_type(x509.DNSName)
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1", "10.0.0.7"}


def test_listen_moves_only_the_frontends(tmp_path):
    config = LabConfig(run_dir=tmp_path, backends=["local"], listen="0.0.0.0", public_host="lab.example")
    text = haproxy.prepare(config).read_text()
    lb = config.cluster_port("local", "lb")
    assert f"bind 0.0.0.0:{lb} ssl" in text
    assert f"server idp-a 127.0.0.1:{config.cluster_port('local', 'idp-a')}" in text  # apps stay on loopback
    assert f"bind 127.0.0.1:{config.shared_port('lb-stats')}" in text


def test_timings_reach_haproxy_the_nodes_and_gunicorn(tmp_path):
    """`lab up --timings`: HAProxy's check interval, each IdP node's memcached retry, the graceful stop."""
    for name, timing in TIMINGS.items():
        config = LabConfig(run_dir=tmp_path / name, backends=["memcached"], timings=name)
        text = haproxy.prepare(config).read_text()
        assert f"default-server init-addr last,libc,none inter {timing.check_interval_ms}ms fall 2 rise 1" in text
        node = components.node_config(config, "memcached", "a")
        assert node.memcached_dead_retry == timing.memcached_dead_retry_s
        binaries = {binary: binary for binary in components.BINARIES}
        idp = next(spec for spec in components.build(config, binaries) if spec.name == "memcached/idp-a")
        assert idp.command[idp.command.index("--graceful-timeout") + 1] == str(timing.graceful_stop_s)
    assert TIMINGS["fast"].check_interval_ms < TIMINGS["standard"].check_interval_ms


@pytest.mark.parametrize(("option", "value", "fragment"), [
    ("--listen", "10.1.2.3", "--listen must be 127.0.0.1 or 0.0.0.0"),
    ("--public-host", "bad host/", "--public-host 'bad host/' is not a host name"),
    ("--timings", "slow", "invalid choice: 'slow'"),
])
def test_bad_values_are_one_line_errors(tmp_path, option, value, fragment):
    result = cli("lab", "up", "--run-dir", str(tmp_path), "--base-port", str(PUBLIC_HOST_LAB), option, value)
    assert result.returncode == 2, result
    assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr
