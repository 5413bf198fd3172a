"""Keycloak as lab components: `keycloak-a` and `keycloak-b` (one Infinispan cluster) and `keycloak-sp`.

The nodes speak plain HTTP on loopback behind the lab's HAProxy, which terminates TLS with the lab's server
certificate exactly as for the reference IdP's nodes: the balancing, stickiness and node bypass a comparison
depends on are then the same HAProxy's for both IdPs, and Keycloak keeps no TLS key of its own. Keycloak is told
its public URL (`--hostname`) and trusts HAProxy's X-Forwarded-* headers, so the SAML issuer and every URL it
writes name the balanced endpoint. The nodes find each other through the lab's PostgreSQL (JGroups JDBC_PING2,
Keycloak's default `jdbc-ping` stack) and talk over TCP on loopback.

Secrets stay in 0600 files of the run directory: the database password (in each node's conf/keycloak.conf, not
on the command line), the LDAP bind password, the realm's SAML signing key and the OIDC client's secret (in node A's
realm import file; the secret also in its own file, for the OIDC kind).
"""

from __future__ import annotations

import hashlib
import os
import time
import urllib.request
from pathlib import Path

from lxml import etree

from .. import config as cfg
from .. import pki, postgres, processes, slapd
from ..saml.metadata import REDIRECT_BINDING, load_sp_registry, sp_metadata
from ..saml.xml import NS
from . import install, realm

NODES = ("a", "b")
COMPONENTS = ("keycloak-a", "keycloak-b", "keycloak-sp")
SP = "keycloak-sp"
DATABASE = "keycloak"  # its own database and role in the lab's PostgreSQL
DB_USER = "keycloak"
# Build options (`kc.sh build`), one set per design: install.py's (an image builds them with install.py alone).
BUILD_OPTIONS = install.BUILD_OPTIONS
PERSISTENT_BUILD_OPTIONS = install.PERSISTENT_BUILD_OPTIONS
# Run-time cache options per design, beyond `--cache=ispn --cache-stack=jdbc-ping`: owners1 loads a cache file
# (relative to conf/) that asks for one owner per session entry; Keycloak needs cache-config-mutate=true to accept
# changes to its default caches.
OWNERS1_FILE = "cache-ispn-owners1.xml"
DESIGN_OPTIONS = {"owners2": [], "owners1": [f"--cache-config-file={OWNERS1_FILE}", "--cache-config-mutate=true"],
                  "local": [],  # `--cache=local` instead of the cluster (cache_options)
                  "persistent": []}
# The session caches the owners1 file names: user and client sessions (online and offline) and the login
# conversation. Keycloak 26.7 keeps authenticationSessions, loginFailures and actionTokens at two owners or more
# whatever the file says, and raises sessions/clientSessions to two when persistent sessions are off.
OWNERS1_CACHES = ("sessions", "clientSessions", "offlineSessions", "offlineClientSessions", "authenticationSessions")
HEAP = "-Xms256m -Xmx512m"  # per JVM: two nodes and the lab share a small machine
HEALTH_PATH = "/health/ready"
HEALTH_TIMEOUT = 300.0  # a cold JVM on two busy cores, the database schema and the realm import on node A
DESCRIPTOR_TIMEOUT = 30.0  # HAProxy marks a node up within a check interval of its readiness
IMPORT_FILE = "authbench-realm.json"
LOCAL_USERS_IMPORT_FILE = "authbench-local-users-realm.json"  # Keycloak imports every file of data/import
PROBE_TIMEOUT = 5.0
SP_ACS_PATH = "/Shibboleth.sso/SAML2/POST"  # the lab SP's (sp/app.py ACS_PATH)


def root(config: cfg.LabConfig) -> Path:
    """The cluster's own files, beside the reference IdP clusters': signing pair, database password."""
    return config.cluster_dir(config.keycloak_cluster)


def db_password_file(config: cfg.LabConfig) -> Path:
    return root(config) / "db.password"


def oidc_secret_file(config: cfg.LabConfig) -> Path:
    """The confidential OIDC client's secret (0600): the OIDC kind reads it for a `lab:keycloak-…` target."""
    return root(config) / "oidc-client.secret"


def oidc_clients(config: cfg.LabConfig) -> dict[str, Path | None]:
    """The realm's OIDC RPs: client_id → the file holding its secret (None: a public client)."""
    return {realm.OIDC_CLIENT_ID: oidc_secret_file(config), realm.OIDC_PUBLIC_CLIENT_ID: None}


def home(config: cfg.LabConfig, node: str) -> Path:
    return config.component_dir(f"keycloak-{node}") / "home"


def lb_url(config: cfg.LabConfig) -> str:
    return config.lb_url(config.keycloak_cluster)


def realm_url(config: cfg.LabConfig, name: str = realm.REALM) -> str:
    return f"{lb_url(config)}/realms/{name}"


def sp_url(config: cfg.LabConfig) -> str:
    return config.sp_url(config.keycloak_cluster)


def sp_entity_id(config: cfg.LabConfig) -> str:
    return f"{sp_url(config)}/shibboleth"


def sp_metadata_file(config: cfg.LabConfig) -> Path:
    return config.component_dir(SP) / "metadata" / "sp.xml"


def idp_metadata_file(config: cfg.LabConfig) -> Path:
    return config.component_dir(SP) / "idp-metadata.xml"


def node_url(config: cfg.LabConfig, node: str) -> str:
    return config.node_url(config.keycloak_cluster, node)


def fragment(config: cfg.LabConfig, node: str) -> str:
    """In the command line of both kc.sh and the JVM it starts."""
    return f"--http-port={config.keycloak_port(f'http-{node}')}"


def command(config: cfg.LabConfig, node: str, bind: str = "", proxies: str = "") -> list[str]:
    """`kc.sh start --optimized` for one node; every option but the database password is visible here. `bind` is the
    address JGroups binds and announces, `proxies` the addresses HAProxy's headers are trusted from: the lab's host
    for both by default; in a container its own address and its network (compose)."""
    host = config.host
    options = [
        "start", "--optimized",
        "--http-enabled=true", f"--http-host={host}", fragment(config, node),
        f"--http-management-port={config.keycloak_port(f'management-{node}')}",
        f"--hostname={lb_url(config)}", "--proxy-headers=xforwarded", f"--proxy-trusted-addresses={proxies or host}",
        *cache_options(config, node, bind or host),
        f"--db-url-host={config.address('postgres')}", f"--db-url-port={config.extra_port('postgres')}",
        f"--db-url-database={DATABASE}", f"--db-username={DB_USER}",
    ]
    if node == "a":  # node A creates the realm on first start; B starts after A is ready and finds it
        options.append("--import-realm")
    return [str(home(config, node) / "bin" / "kc.sh"), *options]


def build_options(config: cfg.LabConfig) -> list[str]:
    return PERSISTENT_BUILD_OPTIONS if config.keycloak_design == "persistent" else BUILD_OPTIONS


def cache_options(config: cfg.LabConfig, node: str, bind: str) -> list[str]:
    """The design's caches: local ones per node (no JGroups at all), or one embedded Infinispan cluster on `bind`
    (loopback in the lab), discovered through the database, with the design's cache file if it has one."""
    if config.keycloak_design == "local":
        return ["--cache=local"]
    return ["--cache=ispn", "--cache-stack=jdbc-ping", *DESIGN_OPTIONS[config.keycloak_design],
            f"--cache-embedded-network-bind-address={bind}",
            f"--cache-embedded-network-bind-port={config.keycloak_port(f'jgroups-{node}')}",
            f"-Djgroups.fd.port-offset={cfg.KEYCLOAK_FD_OFFSET}"]


def environment() -> dict[str, str]:
    return {"JAVA_OPTS_KC_HEAP": HEAP}


def probe(config: cfg.LabConfig, name: str) -> processes.Probe:
    if name == SP:
        return processes.http_probe("/Shibboleth.sso/Status", config.keycloak_port("sp-app"))
    node = name.removeprefix("keycloak-")
    return processes.http_probe(HEALTH_PATH, config.keycloak_port(f"management-{node}"), timeout=PROBE_TIMEOUT)


def needs(name: str) -> tuple[str, ...]:
    """Components that must be healthy before `name` starts."""
    return {"keycloak-a": ("ldap", "postgres"), "keycloak-b": ("keycloak-a",), SP: ("lb", "keycloak-a")}[name]


# -- preparing ---------------------------------------------------------------------------------------


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def prepare(config: cfg.LabConfig, binaries: dict[str, str], database: bool) -> dict[str, float]:
    """The built distribution (fetched and built when missing), each node's home, node A's realm import, the SP's
    metadata, and with `database` (PostgreSQL is down) Keycloak's database, made afresh when the realm changed;
    returns what the install steps cost."""
    built, spent = install.ensure(build_options(config))
    realm_text = write_files(config)
    for node in NODES:
        install.node_home(built, home(config, node))
    if database:
        make_database(config, binaries, realm_text)
    return spent


def write_files(config: cfg.LabConfig) -> str:
    """What the nodes read that needs no distribution: the database password, the SP's metadata, each node's
    conf/ (keycloak.conf with the password, the owners1 cache file) and node A's realm import; returns the realm."""
    root(config).mkdir(parents=True, exist_ok=True)
    pki.ensure_secret(db_password_file(config))
    sp_metadata_file(config).parent.mkdir(parents=True, exist_ok=True)
    acs = f"{sp_url(config)}{SP_ACS_PATH}"
    sp_metadata_file(config).write_bytes(sp_metadata(sp_entity_id(config), acs))
    for node in NODES:
        conf = home(config, node) / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / OWNERS1_FILE).write_text(owners1_cache_file())
        _write_private(conf / "keycloak.conf",
                       f"# written by authbench lab\ndb-password={pki.read_secret(db_password_file(config))}\n")
    realm_text = realm_json(config)
    names = [cfg.username(i, config.users) for i in range(min(realm.LOCAL_USERS, config.users))]  # as in slapd
    local_users = realm.render_local_users(users=[(name, cfg.password_for(name)) for name in names],
                                           oidc_secret=pki.read_secret(oidc_secret_file(config)))
    _write_private(home(config, "a") / "data" / "import" / IMPORT_FILE, realm_text)
    _write_private(home(config, "a") / "data" / "import" / LOCAL_USERS_IMPORT_FILE, local_users)
    return realm_text + local_users


def make_database(config: cfg.LabConfig, binaries: dict[str, str], realm_text: str) -> bool:
    """Keycloak's database and role in the lab's PostgreSQL (which is down), made afresh when the realm changed."""
    return postgres.service_database(config, binaries, DATABASE, pki.read_secret(db_password_file(config)),
                                     hashlib.sha256(realm_text.encode()).hexdigest()[:16])


def owners1_cache_file() -> str:
    """Keycloak's default cache file (conf/cache-ispn.xml of the dist: the container and its transport) plus one
    distributed cache per session cache with owners="1"; Keycloak adds the rest of each cache's defaults."""
    caches = "".join(f'        <distributed-cache name="{name}" owners="1"/>\n' for name in OWNERS1_CACHES)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!-- written by authbench lab: the keycloak-owners1 design (docs/keycloak.md) -->\n'
            '<infinispan xmlns="urn:infinispan:config:16.0">\n'
            '    <cache-container name="keycloak">\n'
            '        <transport lock-timeout="60000"/>\n'
            f'{caches}'
            '    </cache-container>\n'
            '</infinispan>\n')


def realm_json(config: cfg.LabConfig) -> str:
    cert, key = pki.ensure_signing_pair(root(config), subject=f"{config.host}:{config.keycloak_port('lb')}")
    registry = load_sp_registry(sp_metadata_file(config).parent)  # read back as an operator imports it
    if len(registry) != 1:
        raise install.InstallError(f"{sp_metadata_file(config).parent} must describe exactly one SP")
    (sp_entity, acs_urls), = registry.items()
    return realm.render(
        ldap_url=config.ldap_url(), bind_dn=cfg.LDAP_IDP_DN,
        bind_password=pki.read_secret(slapd.paths(config).idp_password), users_dn=cfg.LDAP_PEOPLE,
        signing_key=key.read_text(), signing_cert=cert.read_text(), sp_entity_id=sp_entity, acs_urls=acs_urls,
        oidc_secret=pki.read_secret(pki.ensure_secret(oidc_secret_file(config))))


# -- the SP, once Keycloak answers ------------------------------------------------------------------------


def descriptor_url(base_url: str) -> str:
    """Where Keycloak publishes the realm's SAML IdP metadata, under a node's or the balancer's base URL."""
    return f"{base_url}/realms/{realm.REALM}/protocol/saml/descriptor"


def fetch_descriptor(url: str, ca_file: Path | None = None, timeout: float = DESCRIPTOR_TIMEOUT) -> bytes:
    """Keycloak's SAML IdP metadata as an operator downloads it (over https verified with `ca_file` when given)."""
    import ssl

    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
    deadline, last = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT, context=context) as answer:  # noqa: S310
                return answer.read()
        except OSError as exc:
            last = str(exc)
            time.sleep(processes.POLL_INTERVAL * 5)
    raise install.InstallError(f"Keycloak's metadata {url} did not answer in {timeout:g} s: {last}")


def read_descriptor(metadata: bytes, where: Path) -> tuple[str, str, str]:
    """(entity ID, HTTP-Redirect SSO URL, signing certificate as PEM) of the IdP the metadata at `where` describes."""
    entity = etree.fromstring(metadata)
    entity = next(entity.iter(f"{{{NS['md']}}}EntityDescriptor"), None)
    idp = entity.find("md:IDPSSODescriptor", NS) if entity is not None else None
    if idp is None:
        raise install.InstallError(f"{where} describes no SAML IdP")
    sso = next((el.get("Location") for el in idp.iterfind("md:SingleSignOnService", NS)
                if el.get("Binding") == REDIRECT_BINDING), None)
    body = next((el.findtext("ds:KeyInfo/ds:X509Data/ds:X509Certificate", namespaces=NS)
                 for el in idp.iterfind("md:KeyDescriptor", NS) if el.get("use") in (None, "signing")), None)
    if not sso or not body:
        raise install.InstallError(f"{where} lacks an HTTP-Redirect SSO URL or a signing key")
    lines = "".join(body.split())
    pem = "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines[i:i + 64] for i in range(0, len(lines), 64)) \
        + "\n-----END CERTIFICATE-----\n"
    return entity.get("entityID"), sso, pem


def configure_sp(config: cfg.LabConfig) -> None:
    """The SP trusts the IdP its metadata describes: entity ID, SSO URL (HTTP-Redirect) and signing certificate."""
    metadata = fetch_descriptor(descriptor_url(lb_url(config)), config.ca_cert)
    idp_metadata_file(config).write_bytes(metadata)
    entity_id, sso, pem = read_descriptor(metadata, idp_metadata_file(config))
    sp_dir = config.component_dir(SP)
    (sp_dir / "idp-signing.crt").write_text(pem)
    cfg.SPConfig(entity_id=sp_entity_id(config), base_url=sp_url(config), idp_entity_id=entity_id,
                 idp_sso_url=sso, idp_cert=str(sp_dir / "idp-signing.crt"),
                 cookie_key=str(pki.ensure_secret(sp_dir / "sp-cookie.key"))).save(sp_dir / "sp.json")


def balanced_checks(config: cfg.LabConfig) -> list[tuple[str, int, str]]:
    """(what, https port, path) HAProxy must answer once the cluster is up."""
    descriptor = descriptor_url("")
    return [("keycloak lb", config.keycloak_port("lb"), descriptor),
            ("keycloak node-a", config.keycloak_port("node-a"), descriptor),
            ("keycloak node-b", config.keycloak_port("node-b"), descriptor),
            ("keycloak sp", config.keycloak_port("sp"), "/Shibboleth.sso/Status")]
