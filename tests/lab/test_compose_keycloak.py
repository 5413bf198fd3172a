"""compose.yaml's keycloak profile offline: what `init keycloak` writes into the volume (Keycloak's cluster alone
behind the balancer, reached by service names; PostgreSQL as the lab runs it; secrets 0600, none in what authbench
sees), the node's command line in a container, and the SP's files from a descriptor. No JVM and no container."""

from __future__ import annotations

import json
import stat

import pytest
from lxml import etree

from authbench_lab import compose, pki, postgres, shibsp
from authbench_lab import config as cfg
from authbench_lab.keycloak import containers, server
from authbench_lab.saml.metadata import idp_metadata

USERS = 20
# /proc/net/route of a container on one internal network 172.18.0.0/16 (no default route), loopback absent as there
ROUTES = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "eth0\t000012AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("compose-keycloak")
    compose.init(compose.make_config("stateless", "session", USERS, root / "lab"), root / "public")
    return compose.init_keycloak("owners2", root / "lab", root / "public"), root / "public"


def test_an_unknown_design_is_one_line_and_exit_2(made, monkeypatch, capsys):
    config, public = made
    with pytest.raises(compose.ComposeError, match="KEYCLOAK_DESIGN must be one of owners2, owners1, local"):
        compose.init_keycloak("owners3", config.run_dir, public)
    monkeypatch.setenv("KEYCLOAK_DESIGN", "owners3")
    assert compose.main(["init", "keycloak"]) == 2  # here /lab has no compose.json either
    assert compose.main(["trust", "idp-a"]) == 2
    assert capsys.readouterr().err.count("\n") == 2


def test_the_balancer_sends_to_keycloaks_nodes_and_the_real_sp_alone(made):
    config, _public = made
    assert config.clusters() == ["keycloak-owners2"] and config.extras == ["postgres", "keycloak"]
    text = (config.component_dir("lb") / "haproxy.cfg").read_text()
    servers = [line.split()[1:3] for line in text.splitlines() if line.strip().startswith("server ")]
    assert sorted(map(tuple, servers)) == sorted([
        ("keycloak-a", f"keycloak-a:{config.keycloak_port('http-a')}"),
        ("keycloak-a", f"keycloak-a:{config.keycloak_port('http-a')}"),
        ("keycloak-b", f"keycloak-b:{config.keycloak_port('http-b')}"),
        ("keycloak-b", f"keycloak-b:{config.keycloak_port('http-b')}"),
        ("sp", f"sp:{config.keycloak_port('sp-app')}")])
    assert "stick match req.cook(AUTH_SESSION_ID)" in text
    assert compose.load(config.run_dir) == config  # what every later container loads


def test_postgres_runs_as_the_lab_runs_it_and_takes_logins_from_the_network(made):
    config, _public = made
    spec = compose.spec_of(config, "keycloak-db")
    assert spec.name == "postgres" and "listen_addresses=0.0.0.0" in spec.command
    hba = postgres.paths(config).hba.read_text()
    assert "host    keycloak  keycloak  samenet  scram-sha-256" in hba
    assert f"ldapserver=ldap ldapport={config.shared_port('ldap')}" in hba
    assert (postgres.paths(config).root / "keycloak.database").is_file()  # made while PostgreSQL was down


def test_a_node_binds_jgroups_to_its_own_address_and_trusts_its_network(made):
    config, _public = made
    address = "172.18.0.5"
    network = containers.own_network(address, ROUTES)
    assert network == "172.18.0.0/16"
    command = server.command(config, "a", bind=address, proxies=network)
    assert f"--cache-embedded-network-bind-address={address}" in command
    assert f"--proxy-trusted-addresses={network}" in command
    assert "--db-url-host=keycloak-db" in command and f"--hostname=https://lb:{config.keycloak_port('lb')}" in command
    with pytest.raises(OSError, match="no route"):
        containers.own_network("10.1.2.3", ROUTES)


def test_secrets_are_private_files_of_the_volume_and_none_is_public(made):
    config, public = made
    secrets = [server.db_password_file(config), server.home(config, "a") / "conf" / "keycloak.conf",
               server.home(config, "a") / "data" / "import" / server.IMPORT_FILE,
               server.root(config) / "signing.key"]
    for path in secrets:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    realm = json.loads(secrets[2].read_text())
    ldap = realm["components"]["org.keycloak.storage.UserStorageProvider"][0]["config"]
    assert ldap["connectionUrl"] == [f"ldap://ldap:{config.shared_port('ldap')}"]
    assert realm["clients"][0]["clientId"] == server.sp_entity_id(config)
    assert sorted(path.name for path in public.iterdir()) == ["ca.crt", compose.TARGETS_FILE]
    targets = (public / compose.TARGETS_FILE).read_text()
    assert f"AUTHBENCH_SP_URL='https://lb:{config.keycloak_port('sp')}/secure/'" in targets
    assert pki.read_secret(server.db_password_file(config)) not in targets + (public / "ca.crt").read_text()


def test_the_real_sp_trusts_the_idp_its_descriptor_names(made):
    config, _public = made
    entity = server.realm_url(config)
    cert = (server.root(config) / "signing.crt").read_text()
    descriptor = idp_metadata(entity, f"{entity}/protocol/saml", cert, cfg.SCOPE_DOMAIN)
    assert server.read_descriptor(descriptor, config.run_dir)[:2] == (entity, f"{entity}/protocol/saml")
    directory = shibsp.write_trusting(config, config.keycloak_cluster, server.sp_entity_id(config), entity,
                                      descriptor)
    main = etree.parse(str(directory / "shibboleth2.xml")).getroot()
    ns = {"c": "urn:mace:shibboleth:3.0:native:sp:config"}
    assert main.find("c:ApplicationDefaults", ns).get("entityID") == server.sp_entity_id(config)
    assert main.find("c:ApplicationDefaults/c:Sessions/c:SSO", ns).get("entityID") == entity
    assert (directory / "idp-metadata.xml").read_bytes() == descriptor
    assert f"Listen {config.keycloak_port('sp-app')}" in (directory / "apache.conf").read_text()
