"""What each lab component is: its command line, environment, ports, URL and health probe.

Pure derivations from a `LabConfig` (plus where the binaries live), so that `up`, `status` and the
fault-injection commands all agree on them. Writing the app config files is here too, because the
commands point at them.
"""

from __future__ import annotations

import os
import pwd
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import config as cfg
from . import haproxy, pki, postgres, processes, slapd
from .keycloak import server as keycloak
from .privacyidea import server as privacyidea
from .saml.metadata import sp_metadata

SHARED = ("ldap", "memcached-a", "memcached-b", "redis-primary", "redis-replica", "lb")
PER_CLUSTER = ("idp-a", "idp-b", "sp")
SESSION_STORES = ("memcached-a", "memcached-b", "redis-primary", "redis-replica")  # the reference IdP's
BINARIES = ("slapd", "slapadd", "memcached", "redis-server", "haproxy")

MEMCACHED_MEMORY_MB = 64
MEMCACHED_THREADS = 2
SP_WORKERS = 1
IDP_APP = "authbench_lab.idp.app:create_app()"
SP_APP = "authbench_lab.sp.app:create_app()"
IDP_HEALTH = "/idp/status"
SP_HEALTH = "/Shibboleth.sso/Status"
NODE_CONFIG_FILE = "node.json"
SP_CONFIG_FILE = "sp.json"

# Which process binds each port of `LabConfig.all_ports()`; per-cluster names are prefixed "<backend>/".
SHARED_PORT_OWNER = {
    "ldap": "ldap", "ldaps": "ldap", "memcached-a": "memcached-a", "memcached-b": "memcached-b",
    "redis-primary": "redis-primary", "redis-replica": "redis-replica", "lb-stats": "lb",
}
CLUSTER_PORT_OWNER = {
    "lb": "lb", "node-a": "lb", "node-b": "lb", "sp": "lb",
    "idp-a": "idp-a", "idp-b": "idp-b", "sp-app": "sp",
}


@dataclass(frozen=True)
class Spec:
    """One supervised process as the lab starts it."""

    name: str
    command: list[str]
    fragment: str  # must appear in /proc/<pid>/cmdline for the pid to count as this component
    url: str
    port: int  # the port its health probe talks to
    env: dict[str, str] = field(default_factory=dict)


def extra_components(extra: str) -> tuple[str, ...]:
    """The components an optional server (`--with NAME`) runs as."""
    return keycloak.COMPONENTS if extra == "keycloak" else (extra,)


def names(config: cfg.LabConfig) -> list[str]:
    """Every component in start order (shared services, the balancer, then the apps)."""
    apps = [f"{backend}/{part}" for backend in config.backends for part in PER_CLUSTER]
    return [*SHARED, *apps, *(name for extra in config.extras for name in extra_components(extra))]


def serves(component: str, cluster: str) -> bool:
    """Whether a component takes part in a cluster's logins (its CPU and memory belong to that cluster's figures):
    a cluster's own apps, Keycloak's nodes and SP for a Keycloak cluster only, the reference IdP's session stores
    (memcached, Redis) for its clusters only, and the rest (slapd, HAProxy, PostgreSQL, …) for every cluster."""
    owner, sep, _ = component.partition("/")
    if sep:
        return owner == cluster
    if component in keycloak.COMPONENTS:
        return cluster in cfg.KEYCLOAK_CLUSTERS
    if component in SESSION_STORES:
        return cluster not in cfg.KEYCLOAK_CLUSTERS
    return True


def health_timeout(name: str) -> float:
    """Seconds a component may take to become healthy after its start."""
    return keycloak.HEALTH_TIMEOUT if name in keycloak.COMPONENTS else processes.HEALTH_TIMEOUT


def _keycloak_port_owner(port_name: str) -> str:
    if port_name in ("lb", "node-a", "node-b", "sp"):
        return "lb"
    return keycloak.SP if port_name == "sp-app" else f"keycloak-{port_name[-1]}"


def port_owners(config: cfg.LabConfig) -> dict[str, str]:
    """Port name (as in `all_ports`) → the component that binds it."""
    owners = {**SHARED_PORT_OWNER, **{name: name for name in config.extras if name in cfg.EXTRA_PORT_OFFSETS}}
    if "keycloak" in config.extras:
        owners.update({f"keycloak/{name}": _keycloak_port_owner(name) for name in cfg.KEYCLOAK_PORT_OFFSETS})
    for backend in config.backends:
        for port_name, owner in CLUSTER_PORT_OWNER.items():
            owners[f"{backend}/{port_name}"] = owner if owner == "lb" else f"{backend}/{owner}"
    return owners


def _run_as() -> list[str]:
    """memcached refuses to run as root unless told which user to be."""
    return ["-u", pwd.getpwuid(os.geteuid()).pw_name] if os.geteuid() == 0 else []


def _gunicorn(config: cfg.LabConfig, name: str, port: int, workers: int, app: str) -> list[str]:
    return [
        sys.executable, "-m", "gunicorn",
        "--bind", f"{config.host}:{port}",
        "--workers", str(workers),
        "--threads", str(config.threads),
        "--worker-class", "gthread",
        "--preload",
        "--graceful-timeout", str(config.timing.graceful_stop_s),
        # gunicorn >= 25 opens a control socket in ~/.gunicorn shared by every instance; the lab's
        # nodes are managed by the supervisor, so none is needed.
        "--no-control-socket",
        # A stable name keeps the cmdline check valid even if setproctitle rewrites the title.
        "--name", _proc_name(name, port),
        app,
    ]


def _proc_name(name: str, port: int) -> str:
    return f"authbench-{name.replace('/', '-')}-{port}"


def build(config: cfg.LabConfig, binaries: dict[str, str]) -> list[Spec]:
    host = config.host
    specs = [
        Spec("ldap", slapd.command(config, slapd.paths(config), binaries["slapd"]),
             f"-f {slapd.paths(config).conf}", config.ldap_url(), config.shared_port("ldap")),
    ]
    for name in ("memcached-a", "memcached-b"):
        port = config.shared_port(name)
        command = [binaries["memcached"], "-l", host, "-p", str(port), "-m", str(MEMCACHED_MEMORY_MB),
                   "-t", str(MEMCACHED_THREADS), "-U", "0", *_run_as()]
        specs.append(Spec(name, command, f"memcached -l {host} -p {port} ", f"memcached://{host}:{port}", port))
    primary = config.shared_port("redis-primary")
    for name in ("redis-primary", "redis-replica"):
        port = config.shared_port(name)
        command = [binaries["redis-server"], "--bind", host, "--port", str(port),
                   "--dir", str(config.component_dir(name)), "--save", "", "--appendonly", "no",
                   # keep argv as started, so the supervisor recognises the process by its cmdline
                   "--set-proc-title", "no"]
        if name == "redis-replica":
            command += ["--replicaof", config.address("redis-primary"), str(primary)]
        specs.append(Spec(name, command, f"redis-server --bind {host} --port {port} ",
                          f"redis://{host}:{port}/0", port))
    stats = config.shared_port("lb-stats")
    specs.append(Spec("lb", haproxy.command(config, binaries["haproxy"]), f"-f {haproxy.conf_path(config)}",
                      f"http://{host}:{stats}{haproxy.STATS_URI}", stats))
    for backend in config.backends:
        for node in ("a", "b"):
            name, port = f"{backend}/idp-{node}", config.cluster_port(backend, f"idp-{node}")
            env = {cfg.NODE_CONFIG_ENV: str(config.component_dir(name) / NODE_CONFIG_FILE)}
            command = _gunicorn(config, name, port, config.workers, IDP_APP)
            specs.append(Spec(name, command, _proc_name(name, port), config.node_url(backend, node), port, env))
        name, port = f"{backend}/sp", config.cluster_port(backend, "sp-app")
        env = {cfg.SP_CONFIG_ENV: str(config.component_dir(name) / SP_CONFIG_FILE)}
        command = _gunicorn(config, name, port, SP_WORKERS, SP_APP)
        specs.append(Spec(name, command, _proc_name(name, port), config.sp_url(backend), port, env))
    if "postgres" in config.extras:
        specs.append(Spec("postgres", postgres.command(config, binaries), postgres.fragment(config),
                          config.postgres_url(), config.extra_port("postgres")))
    if "privacyidea" in config.extras:
        specs.append(Spec("privacyidea", privacyidea.command(config), privacyidea.fragment(config),
                          config.privacyidea_url(), config.extra_port("privacyidea"), privacyidea.environment(config)))
    if "keycloak" in config.extras:
        for node in keycloak.NODES:
            specs.append(Spec(f"keycloak-{node}", keycloak.command(config, node), keycloak.fragment(config, node),
                              keycloak.node_url(config, node), config.keycloak_port(f"management-{node}"),
                              keycloak.environment()))
        port = config.keycloak_port("sp-app")
        env = {cfg.SP_CONFIG_ENV: str(config.component_dir(keycloak.SP) / SP_CONFIG_FILE)}
        specs.append(Spec(keycloak.SP, _gunicorn(config, keycloak.SP, port, SP_WORKERS, SP_APP),
                          _proc_name(keycloak.SP, port), keycloak.sp_url(config), port, env))
    return specs


def probe(config: cfg.LabConfig, name: str, port: int) -> processes.Probe:
    if "/" in name:  # a cluster's app; "memcached/idp-a" is an IdP node, not a memcached
        return processes.http_probe(SP_HEALTH if name.endswith("/sp") else IDP_HEALTH, port)
    if name == "ldap":
        return slapd.bind_probe(config)
    if name.startswith("memcached"):
        return processes.memcached_probe(port)
    if name.startswith("redis"):
        return processes.redis_probe(port)
    if name == "lb":
        return processes.http_probe(haproxy.MONITOR_URI, port)
    if name == "postgres":
        return postgres.startup_probe(config)
    if name == "privacyidea":
        return privacyidea.probe(config)
    if name in keycloak.COMPONENTS:
        return keycloak.probe(config, name)
    raise ValueError(f"no probe for component {name!r}")


def endpoints(config: cfg.LabConfig) -> list[dict]:
    """The URLs a load test uses, per cluster (Keycloak's included)."""
    return [
        {"backend": backend, "lb": config.lb_url(backend), "node-a": config.node_url(backend, "a"),
         "node-b": config.node_url(backend, "b"), "sp": config.sp_url(backend)}
        for backend in config.clusters()
    ]


def _kind(name: str) -> str:
    return "apps" if "/" in name else name.split("-")[0]  # memcached-a → memcached, lb → lb


def stop_tiers(order: list[str]) -> list[list[str]]:
    """Runs of consecutive components of one kind (all apps, both memcached, …) in stop order."""
    tiers: list[list[str]] = []
    for name in order:
        if tiers and _kind(tiers[-1][0]) == _kind(name):
            tiers[-1].append(name)
        else:
            tiers.append([name])
    return tiers


# -- files the apps read -------------------------------------------------------------------------------


def idp_entity_id(config: cfg.LabConfig, backend: str) -> str:
    return f"{config.lb_url(backend)}/idp/shibboleth"


def idp_sso_url(config: cfg.LabConfig, backend: str) -> str:
    return f"{config.lb_url(backend)}/idp/profile/SAML2/Redirect/SSO"


def node_config(config: cfg.LabConfig, backend: str, node: str) -> cfg.NodeConfig:
    cluster = config.cluster_dir(backend)
    lb = f"{config.host}:{config.cluster_port(backend, 'lb')}"
    cert, key = pki.ensure_signing_pair(cluster, subject=lb)
    memcached = [f"{config.address(name)}:{config.shared_port(name)}" for name in ("memcached-a", "memcached-b")]
    return cfg.NodeConfig(
        backend=backend,
        node=node,
        entity_id=idp_entity_id(config, backend),
        sso_url=idp_sso_url(config, backend),
        signing_key=str(key),
        signing_cert=str(cert),
        sealer_key=str(pki.ensure_secret(cluster / "sealer.key")),
        ldap_url=config.ldap_url(),
        ldap_bind_dn=cfg.LDAP_IDP_DN,
        ldap_bind_password_file=str(slapd.paths(config).idp_password),
        ldap_base=cfg.LDAP_PEOPLE,
        scope=cfg.SCOPE_DOMAIN,
        metadata_dir=str(config.metadata_dir),
        local_store=str(config.component_dir(f"{backend}/idp-{node}") / "local.sqlite"),
        redis_primary=f"redis://{config.address('redis-primary')}:{config.shared_port('redis-primary')}/0",
        memcached=memcached,
        key_prefix=f"{backend}:",
        client_storage=config.client_storage,
        cookie_path=config.idp_cookie_path,
        memcached_dead_retry=config.timing.memcached_dead_retry_s,
    )


def sp_config(config: cfg.LabConfig, backend: str) -> cfg.SPConfig:
    cluster = config.cluster_dir(backend)
    cert, _key = pki.ensure_signing_pair(cluster, subject=f"{config.host}:{config.cluster_port(backend, 'lb')}")
    return cfg.SPConfig(
        entity_id=f"{config.sp_url(backend)}/shibboleth",
        base_url=config.sp_url(backend),
        idp_entity_id=idp_entity_id(config, backend),
        idp_sso_url=idp_sso_url(config, backend),
        idp_cert=str(cert),
        cookie_key=str(pki.ensure_secret(cluster / "sp-cookie.key")),
    )


def write_app_files(config: cfg.LabConfig) -> None:
    """Per cluster: SP config and metadata first (the IdPs load trusted SPs at start), then the nodes'."""
    config.metadata_dir.mkdir(parents=True, exist_ok=True)
    for backend in config.backends:
        config.cluster_dir(backend).mkdir(parents=True, exist_ok=True)
        sp = sp_config(config, backend)
        sp_dir = config.component_dir(f"{backend}/sp")
        sp_dir.mkdir(parents=True, exist_ok=True)
        sp.save(sp_dir / SP_CONFIG_FILE)
        (config.metadata_dir / f"sp-{backend}.xml").write_bytes(sp_metadata(sp.entity_id, sp.acs_url))
        for node in ("a", "b"):
            node_dir = config.component_dir(f"{backend}/idp-{node}")
            node_dir.mkdir(parents=True, exist_ok=True)
            node_config(config, backend, node).save(node_dir / NODE_CONFIG_FILE)


def component_dirs(config: cfg.LabConfig) -> list[Path]:
    return [config.component_dir(name) for name in names(config)]
