"""The lab's compose entry (authbench_lab.compose): one component per container, reached by host name,
with the real Shibboleth SP's files beside the lab's own; no secret in what authbench's services mount."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lxml import etree

from authbench_lab import compose, haproxy, shibsp
from authbench_lab import config as cfg

USERS = 20


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("compose")
    config = compose.make_config("memcached", "session", USERS, root / "lab")
    compose.init(config, root / "public")
    return config, root / "public"


def test_bad_settings_are_one_line_errors_with_exit_2(monkeypatch, capsys):
    with pytest.raises(compose.ComposeError, match="BACKEND must name one backend of terracotta"):
        compose.make_config("memcached,local", "session", USERS)
    with pytest.raises(compose.ComposeError, match="STICKINESS must be one of none, session"):
        compose.make_config("local", "always", USERS)
    monkeypatch.setenv("BACKEND", "shibboleth")
    assert compose.main(["init"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_components_reach_each_other_by_service_name(made):
    config, _public = made
    node = json.loads((config.component_dir("memcached/idp-a") / "node.json").read_text())
    assert node["ldap_url"] == f"ldap://ldap:{config.shared_port('ldap')}"
    assert node["memcached"] == [f"memcached-a:{config.shared_port('memcached-a')}",
                                 f"memcached-b:{config.shared_port('memcached-b')}"]
    assert node["redis_primary"].startswith("redis://redis:")
    assert node["entity_id"] == f"https://lb:{config.cluster_port('memcached', 'lb')}/idp/shibboleth"
    haproxy = (config.component_dir("lb") / "haproxy.cfg").read_text()
    for host, port in (("idp-a", "idp-a"), ("idp-b", "idp-b"), ("sp", "sp-app")):
        assert f" {host}:{config.cluster_port('memcached', port)} check" in haproxy
    assert "stick match req.cook(JSESSIONID)" in haproxy
    replica = compose.spec_of(config, "redis-replica").command
    assert replica[-3:] == ["--replicaof", "redis", str(config.shared_port("redis-primary"))]
    assert compose.spec_of(config, "idp-b").name == "memcached/idp-b"
    with pytest.raises(compose.ComposeError, match="unknown service 'sp'"):
        compose.spec_of(config, "sp")  # the real SP is no lab component


def test_the_real_sp_files_name_the_lab_sp_url_and_the_cluster_idp(made):
    config, _public = made
    directory = shibsp.sp_dir(config)
    main = etree.parse(str(directory / "shibboleth2.xml")).getroot()
    ns = {"c": "urn:mace:shibboleth:3.0:native:sp:config"}
    sp_url = config.sp_url("memcached")
    assert main.find("c:ApplicationDefaults", ns).get("entityID") == f"{sp_url}/shibboleth"
    assert main.find("c:ApplicationDefaults/c:Sessions/c:SSO", ns).get("entityID") == \
        f"{config.lb_url('memcached')}/idp/shibboleth"
    metadata = etree.parse(str(directory / "idp-metadata.xml")).getroot()
    cert = (config.cluster_dir("memcached") / "signing.crt").read_text().splitlines()[1]
    assert cert in etree.tostring(metadata).decode()
    apache = (directory / "apache.conf").read_text()
    assert f"ServerName {sp_url}\n" in apache and f"Listen {config.cluster_port('memcached', 'sp-app')}" in apache
    registered = (config.metadata_dir / "sp-memcached.xml").read_text()  # what the IdP nodes trust
    assert f'Location="{sp_url}/Shibboleth.sso/SAML2/POST"' in registered


def test_other_idp_software_gets_the_cluster_settings_and_haproxy_accepts_the_balancer(made):
    config, _public = made
    lines = (config.run_dir / compose.IDP_ENV_FILE).read_text().splitlines()
    env = {key: value.strip("'") for key, value in (line.split("=", 1) for line in lines)}
    assert env["IDP_A_PORT"] == str(config.cluster_port("memcached", "idp-a"))
    assert env["ENTITY_ID"] == f"{config.lb_url('memcached')}/idp/shibboleth"
    assert env["SIGNING_CERT"] == str(config.cluster_dir("memcached") / "signing.crt")
    assert env["MEMCACHED"] == f"memcached-a:{config.shared_port('memcached-a')} memcached-b:" \
        f"{config.shared_port('memcached-b')}"
    assert Path(env["LDAP_PASSWORD_FILE"]).exists() and Path(env["POSTGRES_PASSWORD_FILE"]).exists()
    haproxy_bin = shutil.which("haproxy") or "/usr/sbin/haproxy"
    ok, said = haproxy.validate(haproxy_bin, haproxy.conf_path(config))  # `haproxy -c`, names unresolved
    assert ok, said


def test_the_public_volume_holds_the_ca_and_urls_only(made):
    config, public = made
    assert sorted(path.name for path in public.iterdir()) == ["ca.crt", compose.TARGETS_FILE]
    assert all("PRIVATE KEY" not in path.read_text() for path in public.iterdir())
    lines = (public / compose.TARGETS_FILE).read_text().splitlines()
    targets = {key: value.strip("'") for key, value in (line.split("=", 1) for line in lines)}
    assert targets["AUTHBENCH_SP_URL"] == f"{config.sp_url('memcached')}/secure/"
    assert targets["AUTHBENCH_NODE_B_URL"] == config.node_url("memcached", "b")


def test_a_second_init_keeps_keys_and_the_ldap_seed(made, tmp_path):
    """On a copy of the module's folders: the other tests keep them as the first init made them."""
    first, first_public = made
    shutil.copytree(first.run_dir, tmp_path / "lab", symlinks=True)
    public = shutil.copytree(first_public, tmp_path / "public", symlinks=True)
    config = compose.make_config("memcached", "session", USERS, tmp_path / "lab")
    sealer = (config.cluster_dir("memcached") / "sealer.key").read_bytes()
    sp_key = (shibsp.sp_dir(config) / "signing.key").read_bytes()
    seeded = compose.init(compose.make_config("memcached", "none", USERS, config.run_dir), public)
    assert seeded["users"] == USERS
    assert (config.cluster_dir("memcached") / "sealer.key").read_bytes() == sealer
    assert (shibsp.sp_dir(config) / "signing.key").read_bytes() == sp_key
    reloaded = compose.load(config.run_dir)
    assert reloaded.stickiness == "none" and reloaded.hosts == compose.HOSTS
    assert reloaded.backends == ["memcached"] and cfg.LabConfig.from_dict(reloaded.to_dict()) == reloaded
