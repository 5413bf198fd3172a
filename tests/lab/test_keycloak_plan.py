"""Keycloak's place in the lab without starting it (the real nodes are tests/keycloak's): ports, HAProxy,
PostgreSQL's access rule, the realm and the command lines."""

from __future__ import annotations

import json

import pytest

from authbench.kinds.oidc import DEFAULT_REDIRECT_URI
from authbench_lab import components, haproxy, pki, postgres
from authbench_lab import lab as lab_api
from authbench_lab.config import KEYCLOAK_CLUSTER, KEYCLOAK_FD_OFFSET, LabConfig
from authbench_lab.keycloak import realm, server


def keycloak_config(tmp_path) -> LabConfig:
    return LabConfig(run_dir=tmp_path, backends=["terracotta"], extras=["postgres", "keycloak"])


def test_keycloak_brings_postgres_and_refuses_to_run_without_it(tmp_path):
    assert lab_api.parse_extras("keycloak") == ["postgres", "keycloak"]
    with pytest.raises(lab_api.LabError, match="--with postgres,keycloak"):
        lab_api.validate(LabConfig(run_dir=tmp_path, extras=["keycloak"]))


def test_every_keycloak_port_is_distinct_and_owned(tmp_path):
    config = keycloak_config(tmp_path)
    ports = config.all_ports()
    assert len(set(ports.values())) == len(ports)
    owners = components.port_owners(config)
    assert {owners[name] for name in ports if name.startswith("keycloak/")} == {"lb", *server.COMPONENTS}
    for node in server.NODES:  # JGroups' failure detection listens at its port + the offset the command sets
        fd, bind = config.keycloak_port(f"jgroups-fd-{node}"), config.keycloak_port(f"jgroups-{node}")
        assert fd == bind + KEYCLOAK_FD_OFFSET
        assert f"-Djgroups.fd.port-offset={KEYCLOAK_FD_OFFSET}" in server.command(config, node)
    assert components.names(config)[-3:] == list(server.COMPONENTS)


def test_keycloak_is_a_cluster_a_load_test_can_target(tmp_path):
    config = keycloak_config(tmp_path)
    assert config.clusters() == ["terracotta", KEYCLOAK_CLUSTER]
    assert config.sp_url(KEYCLOAK_CLUSTER) == f"https://127.0.0.1:{config.keycloak_port('sp')}"
    assert [row["backend"] for row in components.endpoints(config)] == config.clusters()
    assert LabConfig(run_dir=tmp_path).clusters() == LabConfig(run_dir=tmp_path).backends


def test_haproxy_accepts_the_keycloak_frontends(tmp_path):
    config = keycloak_config(tmp_path)
    path = haproxy.prepare(config)
    ok, output = haproxy.validate(lab_api.find_binaries()["haproxy"], path)
    assert ok, output
    text = path.read_text()
    assert "stick match req.cook(AUTH_SESSION_ID)" in text
    assert f"port {config.keycloak_port('management-a')}" in text  # health from the management interface


def test_postgres_lets_keycloak_in_by_password_before_the_ldap_rule(tmp_path):
    lines = postgres.hba_text(keycloak_config(tmp_path)).splitlines()
    rules = [line for line in lines if line.startswith("host")]
    assert rules[0].split()[1:3] == ["keycloak", "keycloak"] and rules[0].endswith("scram-sha-256")
    assert " ldap " in rules[1]
    assert len([line for line in postgres.hba_text(LabConfig(run_dir=tmp_path)).splitlines()
                if line.startswith("host")]) == 1


def test_the_realm_federates_ldap_read_only_and_knows_the_sp_from_its_metadata():
    document = json.loads(realm.render(
        ldap_url="ldap://127.0.0.1:1", bind_dn="cn=idp", bind_password="secret", users_dn="ou=people",
        signing_key="KEY", signing_cert="CERT", sp_entity_id="https://sp/shibboleth", acs_urls=["https://sp/acs"],
        oidc_secret="oidc-secret"))
    ldap = document["components"]["org.keycloak.storage.UserStorageProvider"][0]["config"]
    assert ldap["editMode"] == ["READ_ONLY"] and ldap["usernameLDAPAttribute"] == ["uid"]
    client, confidential, public = document["clients"]
    assert client["clientId"] == "https://sp/shibboleth" and client["protocol"] == "saml"
    assert client["attributes"]["saml_assertion_consumer_url_post"] == "https://sp/acs"
    assert client["protocolMappers"][0]["config"]["attribute.name"] == realm.EPPN
    # the OIDC kind's RPs: code flow with PKCE S256, redirecting to its default virtual-RP URI
    assert (confidential["clientId"], public["clientId"]) == (realm.OIDC_CLIENT_ID, realm.OIDC_PUBLIC_CLIENT_ID)
    assert confidential["secret"] == "oidc-secret" and not confidential["publicClient"] and public["publicClient"]
    assert "secret" not in public
    for rp in (confidential, public):
        assert rp["protocol"] == "openid-connect" and rp["standardFlowEnabled"] and not rp["implicitFlowEnabled"]
        assert rp["redirectUris"] == [DEFAULT_REDIRECT_URI] == [realm.OIDC_REDIRECT_URI]
        assert rp["attributes"]["pkce.code.challenge.method"] == "S256"
    # introspection: Keycloak 26 answers active: false to a client not in the token's audience
    (audience,) = confidential["protocolMappers"]
    assert audience["protocolMapper"] == "oidc-audience-mapper"
    assert audience["config"]["included.client.audience"] == realm.OIDC_CLIENT_ID


def test_the_local_users_realm_holds_keycloak_hashed_users_and_the_confidential_rp():
    """The sizing guide's case: users in Keycloak's database, their passwords hashed by Keycloak (plaintext values
    in an import are hashed at import), the same confidential RP; no LDAP and no SAML SP."""
    document = json.loads(realm.render_local_users(users=[("user000", "pw-user000")], oidc_secret="oidc-secret"))
    assert document["realm"] == realm.LOCAL_USERS_REALM and "components" not in document
    (user,) = document["users"]
    assert user["username"] == "user000" and user["credentials"] == [
        {"type": "password", "value": "pw-user000", "temporary": False}]
    assert user["email"] and user["firstName"] and user["lastName"] and user["requiredActions"] == []
    (client,) = document["clients"]
    assert client["clientId"] == realm.OIDC_CLIENT_ID and client["secret"] == "oidc-secret"


def test_the_lab_offers_its_oidc_rps_secret_in_a_private_file_never_on_a_command_line(tmp_path):
    config = keycloak_config(tmp_path)
    secret_file = server.oidc_secret_file(config)
    pki.ensure_secret(secret_file)
    assert secret_file.stat().st_mode & 0o077 == 0
    assert server.oidc_clients(config) == {realm.OIDC_CLIENT_ID: secret_file, realm.OIDC_PUBLIC_CLIENT_ID: None}
    secret = secret_file.read_text().strip()
    assert secret and not [part for node in server.NODES for part in server.command(config, node) if secret in part]


def test_no_secret_goes_on_a_keycloak_command_line(tmp_path):
    config = keycloak_config(tmp_path)
    for node in server.NODES:
        command = " ".join(server.command(config, node))
        assert "password" not in command and "bindCredential" not in command
    assert "--import-realm" in server.command(config, "a") and "--import-realm" not in server.command(config, "b")


def test_the_design_names_the_cluster_and_owners1_loads_its_cache_file(tmp_path):
    """`--keycloak-design owners1` runs `lab:keycloak-owners1` on the same ports; only its run-time cache options
    differ (the build, and so the built dist, is the owners2 design's)."""
    owners2, owners1 = keycloak_config(tmp_path), keycloak_config(tmp_path)
    owners1.keycloak_design = "owners1"
    assert owners1.clusters() == ["terracotta", "keycloak-owners1"]
    assert owners1.lb_url("keycloak-owners1") == owners2.lb_url(KEYCLOAK_CLUSTER)
    assert server.lb_url(owners1) == server.lb_url(owners2) and server.root(owners1) != server.root(owners2)
    extra = [option for option in server.command(owners1, "a") if option not in server.command(owners2, "a")]
    assert extra == [f"--cache-config-file={server.OWNERS1_FILE}", "--cache-config-mutate=true"]
    assert LabConfig.from_dict(owners1.to_dict()).keycloak_cluster == "keycloak-owners1"  # kept in lab.json


def test_the_owners1_cache_file_asks_one_owner_for_every_session_cache():
    from lxml import etree

    document = etree.fromstring(server.owners1_cache_file().encode())
    ns = {"i": "urn:infinispan:config:16.0"}
    caches = {cache.get("name"): cache.get("owners")
              for cache in document.iterfind("i:cache-container/i:distributed-cache", ns)}
    assert caches == dict.fromkeys(server.OWNERS1_CACHES, "1")
    assert document.find("i:cache-container/i:transport", ns) is not None  # the dist's default file keeps it


def test_an_unknown_keycloak_design_is_refused(tmp_path):
    config = keycloak_config(tmp_path)
    config.keycloak_design = "owners3"
    with pytest.raises(lab_api.LabError, match="--keycloak-design must be one of owners2, owners1"):
        lab_api.validate(config)


def test_the_local_design_runs_each_node_unclustered(tmp_path):
    config = keycloak_config(tmp_path)
    config.keycloak_design = "local"
    assert config.clusters()[-1] == "keycloak-local"
    for node in server.NODES:
        command = server.command(config, node)
        assert "--cache=local" in command
        assert not [option for option in command if "jgroups" in option or option.startswith("--cache-")]


def test_the_persistent_design_has_a_build_of_its_own(tmp_path):
    """Persistent user sessions are a build-time feature: another option set, so another built tree in the cache,
    while owners2, owners1 and local share one."""
    from authbench_lab.keycloak import install

    keys = {}
    for design in ("owners2", "owners1", "local", "persistent"):
        config = keycloak_config(tmp_path)
        config.keycloak_design = design
        keys[design] = install.options_key(server.build_options(config))
    assert keys["owners2"] == keys["owners1"] == keys["local"] != keys["persistent"]
    config.keycloak_design = "persistent"
    assert not [option for option in server.build_options(config) if "persistent-user-sessions" in option]


def test_the_balancer_status_of_a_keycloak_node_is_found_in_haproxys_statistics(tmp_path):
    """Issue 27: a fault plan waits for HAProxy to send to a restarted node again. Keycloak's nodes are servers
    `keycloak-a`/`keycloak-b` of backend `keycloak-idp` (and `keycloak-idp-a`/`-b`), not `<cluster>/idp-a`: the
    statistics, laid out as the lab's own haproxy.cfg names its servers, give each node's rows and no other's."""
    import http.server
    import threading

    config = keycloak_config(tmp_path)
    text = haproxy.prepare(config).read_text()
    rows, proxy = [], None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["backend"]:
            proxy = words[1]
        elif words[:1] == ["server"]:
            rows.append((proxy, words[1], f"UP-{proxy}-{words[1]}"))
    stats = "# pxname,svname,status\n" + "".join(f"{p},{s},{st}\n" for p, s, st in [("keycloak-lb", "FRONTEND", "OPEN"),
                                                                                    *rows])

    class Stats(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(stats.encode())

        def log_message(self, *args):
            pass

    server_ = http.server.HTTPServer(("127.0.0.1", 0), Stats)
    threading.Thread(target=server_.serve_forever, daemon=True).start()
    try:
        (tmp_path / "lab.json").write_text(json.dumps({"components": {
            "lb": {"url": f"http://127.0.0.1:{server_.server_port}/stats"}}}))
        assert lab_api.balancer_statuses(tmp_path, "keycloak-b") == ["UP-keycloak-idp-keycloak-b",
                                                                     "UP-keycloak-idp-b-keycloak-b"]
        assert lab_api.balancer_statuses(tmp_path, "keycloak-sp") == ["UP-keycloak-sp-sp"]
        assert lab_api.balancer_statuses(tmp_path, "terracotta/idp-a") == ["UP-terracotta-idp-idp-a",
                                                                           "UP-terracotta-idp-a-idp-a"]
        assert lab_api.balancer_statuses(tmp_path, "postgres") == []  # behind no balancer
    finally:
        server_.shutdown()
        server_.server_close()


def test_a_keycloak_clusters_resources_are_its_jvms_and_the_servers_it_uses():
    """Server CPU per component: Keycloak's JVMs and SP count for its cluster only; the reference IdP's session
    stores (memcached, Redis) not for Keycloak's; slapd, HAProxy and PostgreSQL for both."""
    from authbench.cluster.resources import GENERATOR, lab_components

    names = ["ldap", "memcached-a", "redis-primary", "lb", "terracotta/idp-a", "terracotta/sp", "postgres",
             *server.COMPONENTS]
    state = {"components": {name: {"pid": 100 + i} for i, name in enumerate(names)}}
    keycloak = lab_components(state, KEYCLOAK_CLUSTER)
    reference = lab_components(state, "terracotta")
    assert keycloak.pop(GENERATOR) == reference.pop(GENERATOR)
    assert sorted(keycloak) == sorted(["ldap", "lb", "postgres", *server.COMPONENTS])
    assert sorted(reference) == sorted(["ldap", "memcached-a", "redis-primary", "lb", "idp-a", "sp", "postgres"])
