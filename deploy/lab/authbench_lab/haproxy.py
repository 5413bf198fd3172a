"""HAProxy in front of every cluster: TLS termination, balancing over the two IdP nodes, node bypass.

One HAProxy serves all clusters. Per cluster it exposes the balanced IdP URL (`lb`), one URL per node
(for tests that must reach a given node) and the SP. Stickiness follows the lab config: `none` is the
plain round robin of the 2012 report's Apache balancer, `session` pins a browser to the node that
issued its `JSESSIONID` through a stick table, leaving the IdP's own cookie untouched.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import config as cfg
from . import pki

NBTHREAD = 2
MAXCONN = 4096
TIMEOUTS = {
    "connect": "2s",
    "client": "30s",
    "server": "30s",
    "http-request": "10s",
    "http-keep-alive": "10s",
    "queue": "5s",
    "check": "2s",
}
CHECK = "check"  # how often, and after how many checks a server is out and back: `default-server` in render
CHECK_FALL, CHECK_RISE = 2, 1
IDP_HEALTH_PATH = "/idp/status"
SP_HEALTH_PATH = "/Shibboleth.sso/Status"
MONITOR_URI = "/healthz"
STATS_URI = "/stats"
STICKY_COOKIE = "JSESSIONID"
KEYCLOAK_STICKY_COOKIE = "AUTH_SESSION_ID"
KEYCLOAK_HEALTH_PATH = "/health/ready"
STICK_TABLE = "type string len 128 size 200k expire 30m"  # conversations outlive no login by far
VALIDATE_TIMEOUT = 20.0
KEYCLOAK_BACKEND = "keycloak-idp"  # Keycloak's nodes: balanced in keycloak-idp, one each in keycloak-idp-a/-b
KEYCLOAK_SERVERS = {"keycloak-a": (KEYCLOAK_BACKEND, "keycloak-a"), "keycloak-b": (KEYCLOAK_BACKEND, "keycloak-b"),
                    "keycloak-sp": ("keycloak-sp", "sp")}


def servers_of(component: str) -> tuple[str, str] | None:
    """(backend name prefix, server name) under which this HAProxy sends to a lab component, or None when it sends
    to it nowhere: `local/idp-a` is server idp-a of the backends `local-…`, Keycloak's `keycloak-b` server
    keycloak-b of `keycloak-idp` and `keycloak-idp-b`."""
    cluster, sep, name = component.partition("/")
    if sep:
        return f"{cluster}-", name
    return KEYCLOAK_SERVERS.get(component)


def conf_path(config: cfg.LabConfig) -> Path:
    return config.component_dir("lb") / "haproxy.cfg"


def _frontend(name: str, address: str, pem: Path, backend: str) -> list[str]:
    return [
        f"frontend {name}",
        f"    bind {address} ssl crt {pem}",
        "    http-request set-header X-Forwarded-Proto https",
        f"    default_backend {backend}",
        "",
    ]


def _backend(name: str, health_path: str, servers: list[tuple[str, str]], extra: list[str],
             check_ports: dict[str, int] | None = None) -> list[str]:
    """`check_ports`: servers whose health answers on another port (Keycloak's management interface)."""
    lines = [
        f"backend {name}",
        "    balance roundrobin",
        f"    option httpchk GET {health_path}",
        "    http-check expect status 200",
        *extra,
    ]
    ports = check_ports or {}
    lines += [f"    server {server} {address} {CHECK}" + (f" port {ports[server]}" if server in ports else "")
              for server, address in servers]
    return [*lines, ""]


def _stickiness(stickiness: str, cookie: str = STICKY_COOKIE) -> list[str]:
    if stickiness == "none":
        return []
    return [
        f"    stick-table {STICK_TABLE}",
        f"    stick store-response res.cook({cookie})",
        f"    stick match req.cook({cookie})",
    ]


def _keycloak(config: cfg.LabConfig, pem: Path) -> list[str]:
    """Keycloak's cluster: balanced, per node and its SP, as for a lab backend; health on the management port.
    Stickiness follows Keycloak's own affinity cookie, AUTH_SESSION_ID, as Keycloak's guide advises."""
    def address(component: str, name: str) -> str:  # of a server behind the balancer (its own host in compose)
        return f"{config.address(component)}:{config.keycloak_port(name)}"

    def public(name: str) -> str:
        return f"{config.frontend_host}:{config.keycloak_port(name)}"

    servers = [(f"keycloak-{node}", address(f"keycloak-{node}", f"http-{node}")) for node in ("a", "b")]
    checks = {f"keycloak-{node}": config.keycloak_port(f"management-{node}") for node in ("a", "b")}
    lines = ["# --- Keycloak (lab up --with keycloak)", ""]
    lines += _frontend("keycloak-lb", public("lb"), pem, KEYCLOAK_BACKEND)
    lines += _backend(KEYCLOAK_BACKEND, KEYCLOAK_HEALTH_PATH, servers,
                      ["    option redispatch", *_stickiness(config.stickiness, KEYCLOAK_STICKY_COOKIE)], checks)
    for node, server in zip(("a", "b"), servers, strict=True):
        lines += _frontend(f"keycloak-node-{node}", public(f"node-{node}"), pem, f"{KEYCLOAK_BACKEND}-{node}")
        lines += _backend(f"{KEYCLOAK_BACKEND}-{node}", KEYCLOAK_HEALTH_PATH, [server], [], checks)
    lines += _frontend("keycloak-sp", public("sp"), pem, "keycloak-sp")
    lines += _backend("keycloak-sp", SP_HEALTH_PATH, [("sp", address("keycloak-sp", "sp-app"))], [])
    return lines


def _cluster(config: cfg.LabConfig, backend: str, pem: Path) -> list[str]:
    def address(name: str) -> str:  # of an app behind the balancer
        return f"{config.address(name)}:{config.cluster_port(backend, name)}"

    def public(name: str) -> str:  # of a frontend clients reach
        return f"{config.frontend_host}:{config.cluster_port(backend, name)}"

    node_a, node_b = ("idp-a", address("idp-a")), ("idp-b", address("idp-b"))
    lines = [f"# --- cluster {backend}", ""]
    lines += _frontend(f"{backend}-lb", public("lb"), pem, f"{backend}-idp")
    lines += _backend(
        f"{backend}-idp", IDP_HEALTH_PATH, [node_a, node_b],
        ["    option redispatch", *_stickiness(config.stickiness)],
    )
    for node, server in (("a", node_a), ("b", node_b)):
        lines += _frontend(f"{backend}-node-{node}", public(f"node-{node}"), pem, f"{backend}-idp-{node}")
        lines += _backend(f"{backend}-idp-{node}", IDP_HEALTH_PATH, [server], [])
    lines += _frontend(f"{backend}-sp", public("sp"), pem, f"{backend}-sp")
    lines += _backend(f"{backend}-sp", SP_HEALTH_PATH, [("sp", address("sp-app"))], [])
    return lines


def render(config: cfg.LabConfig, pem: Path) -> str:
    """The whole haproxy.cfg for the lab (HAProxy 2.6); no log target, so nothing is written to disk."""
    timeouts = [f"    timeout {name} {value}" for name, value in TIMEOUTS.items()]
    lines = [
        "# authbench lab HAProxy configuration (generated; edits are overwritten by `lab up`)",
        "global",
        f"    nbthread {NBTHREAD}",
        f"    maxconn {MAXCONN}",
        "    ssl-default-bind-options ssl-min-ver TLSv1.2",
        "",
        "defaults",
        "    mode http",
        # a server whose name does not resolve yet (a container still starting) is down, not an error
        f"    default-server init-addr last,libc,none inter {config.timing.check_interval_ms}ms fall {CHECK_FALL} "
        f"rise {CHECK_RISE}",
        "    option forwardfor",
        "    retries 2",
        *timeouts,
        "",
        "frontend lb-stats",
        f"    bind {config.host}:{config.shared_port('lb-stats')}",
        f"    monitor-uri {MONITOR_URI}",
        "    stats enable",
        f"    stats uri {STATS_URI}",
        "    stats refresh 5s",
        "",
    ]
    for backend in config.backends:
        lines += _cluster(config, backend, pem)
    if "keycloak" in config.extras:
        lines += _keycloak(config, pem)
    return "\n".join(lines)


def prepare(config: cfg.LabConfig) -> Path:
    _cert, _key, pem = pki.ensure_server_cert(config.pki_dir)
    path = conf_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(config, pem))
    return path


def command(config: cfg.LabConfig, haproxy: str) -> list[str]:
    return [haproxy, "-db", "-f", str(conf_path(config))]


def validate(haproxy: str, path: Path) -> tuple[bool, str]:
    """`haproxy -c`: whether HAProxy accepts the file, and what it said."""
    result = subprocess.run(
        [haproxy, "-c", "-f", str(path)], capture_output=True, text=True, timeout=VALIDATE_TIMEOUT, check=False
    )
    return result.returncode == 0, (result.stdout + result.stderr).strip()
