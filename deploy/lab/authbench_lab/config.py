"""The lab's shape: which clusters, which ports, where each component keeps its files.

Everything the supervisor starts and every app it launches is derived from one `LabConfig`, so the
port plan and file layout live here and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

BACKENDS = ("terracotta", "memcached", "repcached", "stateless", "local")
STICKINESS = ("none", "session")

# How each backend answers the 2012 report's cluster checks (Test 1, Test 2, Test 3): its table,
# extended with the unclustered baseline. `authbench lab check` compares what it sees with this.
EXPECTED_CLUSTER_CHECKS = {
    "terracotta": (True, True, True),
    "memcached": (True, True, False),
    "repcached": (True, True, False),
    "stateless": (True, True, False),
    "local": (True, False, False),
    # Real Keycloak (docs/keycloak.md): user sessions and login conversations sit in distributed caches that any
    # node reads ("Configuring distributed caches"), so both designs expect ○ ○ ○; measured so on 2026-11-25.
    "keycloak-owners2": (True, True, True),
    "keycloak-owners1": (True, True, True),
    "keycloak-local": (True, False, False),  # `--cache=local` "disables clustering": like the reference `local`
    "keycloak-persistent": (True, True, True),
}

DEFAULT_RUN_DIR = ".authbench/lab"
DEFAULT_BASE_PORT = 17000
DEFAULT_USERS = 1000
MAX_USERS = 100_000
DEFAULT_WORKERS = 2  # gunicorn worker processes per IdP node
DEFAULT_THREADS = 4  # threads per worker process
DEFAULT_IDP_COOKIE_PATH = "/idp"  # where Shibboleth IdP puts its cookies; other IdPs use /, /realms/…


@dataclass(frozen=True)
class Timings:
    """How quickly the lab notices a component's stop and return (`lab up --timings`, docs/lab.md)."""

    graceful_stop_s: int  # gunicorn's --graceful-timeout: how long a stopping IdP node or SP finishes its requests
    check_interval_ms: int  # HAProxy's health checks: a node is out after two failed ones, back after one good one
    memcached_dead_retry_s: float  # how long an IdP node leaves a memcached that failed out of its ring


# standard: what the measurements in docs/ were taken with. fast: the same behaviour in less wall time, for tests
# and quick rehearsals; its shorter retries make an outage look shorter, so it is no setting to measure failover with.
TIMINGS = {
    "standard": Timings(graceful_stop_s=3, check_interval_ms=1000, memcached_dead_retry_s=5.0),
    "fast": Timings(graceful_stop_s=1, check_interval_ms=200, memcached_dead_retry_s=1.0),
}
DEFAULT_TIMINGS = "standard"

# Shared services sit at base + offset; cluster k (in BACKENDS order) at base + 100 * (k + 1) + offset.
SHARED_PORT_OFFSETS = {
    "ldap": 1,
    "ldaps": 2,
    "memcached-a": 11,
    "memcached-b": 12,
    "redis-primary": 21,
    "redis-replica": 22,
    "lb-stats": 30,
}
# Optional servers (`lab up --with NAME`), also at base + offset, started only when asked for.
EXTRAS = ("postgres", "privacyidea", "keycloak")
EXTRA_PORT_OFFSETS = {
    "postgres": 40,  # database logins checked against slapd (LDAP simple bind)
    "privacyidea": 45,  # privacyIDEA's HTTP API (gunicorn), its realm resolving users in slapd
}
# Real Keycloak (`--with keycloak`): a two-node cluster behind HAProxy and an SP of its own, at base + offset.
# One Keycloak cluster runs at a time (`lab up --with keycloak --keycloak-design NAME`), named keycloak-NAME:
# owners2 = distributed caches, two owners per session; owners1 = a cache file asking for one owner (the 2012
# report's memcached without replication; Keycloak 26.7 raises it back to two, see docs/keycloak.md); local =
# no clustering (`--cache=local`), each node keeps its own sessions, HAProxy sticky on the session; persistent =
# persistent user sessions (Keycloak 26's default): every session in PostgreSQL, one owner in memory.
KEYCLOAK_DESIGNS = ("owners2", "owners1", "local", "persistent")
DEFAULT_KEYCLOAK_DESIGN = "owners2"
KEYCLOAK_CLUSTERS = tuple(f"keycloak-{design}" for design in KEYCLOAK_DESIGNS)
KEYCLOAK_CLUSTER = f"keycloak-{DEFAULT_KEYCLOAK_DESIGN}"  # the default design's cluster
KEYCLOAK_PORT_OFFSETS = {
    "lb": 50,  # https (HAProxy), balanced over both nodes
    "node-a": 51,  # https, node A only
    "node-b": 52,
    "sp": 53,  # https, the reference SP that trusts this cluster
    "http-a": 54,  # plain http of node A (behind HAProxy)
    "http-b": 55,
    "management-a": 56,  # node A's management interface (/health/ready)
    "management-b": 57,
    "jgroups-a": 58,  # JGroups TCP between the nodes
    "jgroups-b": 59,
    "jgroups-fd-a": 61,  # JGroups failure detection (FD_SOCK2): jgroups + KEYCLOAK_FD_OFFSET
    "jgroups-fd-b": 62,
    "sp-app": 60,  # plain http of the SP (behind HAProxy)
}
KEYCLOAK_FD_OFFSET = 3
CLUSTER_PORT_OFFSETS = {
    "lb": 0,  # https, balanced over both IdP nodes
    "node-a": 1,  # https, node A only (bypasses the balancing)
    "node-b": 2,  # https, node B only
    "sp": 3,  # https, the reference SP
    "idp-a": 10,  # plain http app port of IdP node A (behind HAProxy)
    "idp-b": 11,
    "sp-app": 12,
}

LDAP_SUFFIX = "dc=example,dc=org"
LDAP_PEOPLE = f"ou=people,{LDAP_SUFFIX}"
LDAP_ADMIN_DN = f"cn=admin,{LDAP_SUFFIX}"
LDAP_IDP_DN = f"cn=idp,ou=services,{LDAP_SUFFIX}"
SCOPE_DOMAIN = "example.org"

# Password rule for the seeded accounts, documented in docs/lab.md.
PASSWORD_PREFIX = "pw-"


def username(index: int, users: int) -> str:
    """user000 … user999 for the default 1000; wider numbers when there are more users."""
    width = max(3, len(str(users - 1)))
    return f"user{index:0{width}d}"


def password_for(user: str) -> str:
    return PASSWORD_PREFIX + user


@dataclass
class LabConfig:
    run_dir: Path = Path(DEFAULT_RUN_DIR)
    base_port: int = DEFAULT_BASE_PORT
    backends: list[str] = field(default_factory=lambda: list(BACKENDS))
    users: int = DEFAULT_USERS
    stickiness: str = "session"
    client_storage: bool = True
    workers: int = DEFAULT_WORKERS
    threads: int = DEFAULT_THREADS
    host: str = "127.0.0.1"  # where the servers bind and reach each other
    public_host: str = ""  # the name in URLs and SAML metadata, for clients elsewhere (default: host)
    listen: str = ""  # where the HTTPS frontends bind (default: host; 0.0.0.0 in a container)
    idp_cookie_path: str = DEFAULT_IDP_COOKIE_PATH  # the Path of the IdP nodes' JSESSIONID and session cookies
    extras: list[str] = field(default_factory=list)  # of EXTRAS, in that order
    privacyidea_cache: int = 0  # seconds privacyIDEA keeps resolved users (its UserCacheExpiration); 0 = off
    keycloak_design: str = DEFAULT_KEYCLOAK_DESIGN  # of KEYCLOAK_DESIGNS: the Keycloak cluster `--with keycloak` runs
    timings: str = DEFAULT_TIMINGS  # of TIMINGS: how quickly stops and returns are noticed
    # Where a component is reached when it runs on another host (one container each under compose):
    # component name (a SHARED_PORT_OFFSETS or CLUSTER_PORT_OFFSETS key) -> host name; default `host`.
    hosts: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir).resolve()

    @property
    def timing(self) -> Timings:
        return TIMINGS[self.timings]

    # -- ports ---------------------------------------------------------------------------------
    def shared_port(self, name: str) -> int:
        return self.base_port + SHARED_PORT_OFFSETS[name]

    def extra_port(self, name: str) -> int:
        return self.base_port + EXTRA_PORT_OFFSETS[name]

    def keycloak_port(self, name: str) -> int:
        return self.base_port + KEYCLOAK_PORT_OFFSETS[name]

    def cluster_port(self, backend: str, name: str) -> int:
        """A cluster's port; Keycloak's cluster (`--with keycloak`) answers to the same names (lb, node-a, sp)."""
        if backend == self.keycloak_cluster:
            return self.keycloak_port(name)
        return self.base_port + 100 * (BACKENDS.index(backend) + 1) + CLUSTER_PORT_OFFSETS[name]

    def all_ports(self) -> dict[str, int]:
        """Every port the lab binds, by component-ish name; used to detect clashes before starting."""
        ports = {name: self.shared_port(name) for name in SHARED_PORT_OFFSETS}
        ports.update({name: self.extra_port(name) for name in self.extras if name in EXTRA_PORT_OFFSETS})
        if "keycloak" in self.extras:
            ports.update({f"keycloak/{name}": self.keycloak_port(name) for name in KEYCLOAK_PORT_OFFSETS})
        for backend in self.backends:
            for name in CLUSTER_PORT_OFFSETS:
                ports[f"{backend}/{name}"] = self.cluster_port(backend, name)
        return ports

    def clusters(self) -> list[str]:
        """Every SAML cluster a load test may target: the backends, and Keycloak's when it runs."""
        return [*self.backends, *([self.keycloak_cluster] if "keycloak" in self.extras else [])]

    @property
    def keycloak_cluster(self) -> str:
        """The name of the Keycloak cluster this lab runs (`lab:keycloak-owners2`, …)."""
        return f"keycloak-{self.keycloak_design}"

    def address(self, component: str) -> str:
        """The host a component is reached at by the others."""
        return self.hosts.get(component, self.host)

    # -- URLs ----------------------------------------------------------------------------------
    @property
    def advertised_host(self) -> str:
        return self.public_host or self.host

    @property
    def frontend_host(self) -> str:
        return self.listen or self.host

    def https_url(self, port: int) -> str:
        return f"https://{self.advertised_host}:{port}"

    def lb_url(self, backend: str) -> str:
        return self.https_url(self.cluster_port(backend, "lb"))

    def node_url(self, backend: str, node: str) -> str:
        return self.https_url(self.cluster_port(backend, f"node-{node}"))

    def sp_url(self, backend: str) -> str:
        return self.https_url(self.cluster_port(backend, "sp"))

    def ldap_url(self) -> str:
        return f"ldap://{self.address('ldap')}:{self.shared_port('ldap')}"

    def ldaps_url(self) -> str:
        return f"ldaps://{self.address('ldap')}:{self.shared_port('ldaps')}"

    def privacyidea_url(self) -> str:
        return f"http://{self.host}:{self.extra_port('privacyidea')}"

    def postgres_url(self) -> str:
        return f"postgresql://{self.host}:{self.extra_port('postgres')}/postgres"

    # -- files ---------------------------------------------------------------------------------
    @property
    def pki_dir(self) -> Path:
        return self.run_dir / "pki"

    @property
    def ca_cert(self) -> Path:
        return self.pki_dir / "ca.crt"

    @property
    def state_file(self) -> Path:
        return self.run_dir / "lab.json"

    @property
    def metadata_dir(self) -> Path:
        """SAML metadata of every SP the lab IdPs trust (one file per SP, `*.xml`)."""
        return self.run_dir / "metadata"

    def component_dir(self, component: str) -> Path:
        return self.run_dir / component.replace("/", "-")

    def cluster_dir(self, backend: str) -> Path:
        return self.run_dir / "clusters" / backend

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = asdict(self)
        data["run_dir"] = str(self.run_dir)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> LabConfig:
        return cls(**data)


@dataclass
class NodeConfig:
    """What one IdP node needs to run; written as JSON by the supervisor, read by the app."""

    backend: str
    node: str  # "a" or "b"
    entity_id: str
    sso_url: str  # the balanced SSO endpoint advertised in metadata
    signing_key: str
    signing_cert: str
    sealer_key: str  # AES key shared by both nodes (stateless sessions)
    ldap_url: str
    ldap_bind_dn: str
    ldap_bind_password_file: str
    ldap_base: str
    scope: str
    metadata_dir: str  # trusted SP metadata
    local_store: str  # sqlite file: node-local memory (conversations, and sessions for `local`)
    redis_primary: str
    memcached: list[str]  # "host:port" of both memcached
    key_prefix: str  # namespaces keys in stores shared between clusters
    client_storage: bool = True
    session_lifetime: int = 3600
    cookie_path: str = DEFAULT_IDP_COOKIE_PATH
    memcached_dead_retry: float = TIMINGS[DEFAULT_TIMINGS].memcached_dead_retry_s

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: str | Path) -> NodeConfig:
        return cls(**json.loads(Path(path).read_text()))


@dataclass
class SPConfig:
    """What the reference SP needs: its own identity and the one IdP (cluster) it trusts."""

    entity_id: str
    base_url: str  # public https URL of the SP (through HAProxy)
    idp_entity_id: str
    idp_sso_url: str
    idp_cert: str  # path of the IdP signing certificate
    cookie_key: str  # path of the SP's AES key for its session and relay-state cookies

    @property
    def acs_url(self) -> str:
        return self.base_url + "/Shibboleth.sso/SAML2/POST"

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, path: str | Path) -> SPConfig:
        return cls(**json.loads(Path(path).read_text()))


NODE_CONFIG_ENV = "AUTHBENCH_LAB_NODE_CONFIG"
SP_CONFIG_ENV = "AUTHBENCH_LAB_SP_CONFIG"
