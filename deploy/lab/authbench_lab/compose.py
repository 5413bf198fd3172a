"""The lab's components one per container, for compose.yaml.

    python -m authbench_lab.compose init            # keys, LDAP seed, HAProxy and app configs into the volume
    python -m authbench_lab.compose serve idp-a     # exec one component in the foreground
    python -m authbench_lab.compose health idp-a    # its health probe (a compose healthcheck)
    python -m authbench_lab.compose init keycloak   # the keycloak profile (KEYCLOAK_DESIGN): its cluster alone
    python -m authbench_lab.compose trust keycloak  # the SP trusts Keycloak from node A's SAML descriptor

The same derivations as `authbench lab up` (ports, commands, files) from one `LabConfig` whose `hosts`
name each component's container, so nothing here is a second copy of the lab. The real Shibboleth SP
takes the reference SP's place (shibsp.py), and Keycloak's in the keycloak profile (keycloak/containers.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import components, haproxy, lab, pki, processes, shibsp, slapd
from . import config as cfg
from .keycloak import containers as keycloak

RUN_DIR = Path("/lab")  # the shared volume (keys and secrets: never mounted into authbench's own services)
PUBLIC_DIR = Path("/lab-public")  # what the load generator may read: the CA and the URLs, no secret
CONFIG_FILE = "compose.json"
TARGETS_FILE = "targets.env"
IDP_ENV_FILE = "idp.env"  # what another IdP software's nodes need (the shibboleth profile's entrypoint)
POSTGRES_URL = "jdbc:postgresql://postgres:5432/shibboleth"
POSTGRES_PASSWORD_FILE = "postgres.password"
PUBLIC_HOST = "lb"  # every HTTPS URL (IdP, nodes, SP) is HAProxy's, as the clients see it
ALL_ADDRESSES = lab.ALL_ADDRESSES  # inside each container's own network namespace, on an internal network
# compose service name -> host name the others reach it at (the service name), by lab component
HOSTS = {"ldap": "ldap", "memcached-a": "memcached-a", "memcached-b": "memcached-b", "redis-primary": "redis",
         "redis-replica": "redis-replica", "idp-a": "idp-a", "idp-b": "idp-b", "sp-app": "sp"}
SERVICES = {"ldap": "ldap", "memcached-a": "memcached-a", "memcached-b": "memcached-b", "redis": "redis-primary",
            "redis-replica": "redis-replica", "lb": "lb", "idp-a": "idp-a", "idp-b": "idp-b",
            "keycloak-db": "postgres"}
PER_CLUSTER = ("idp-a", "idp-b")


class ComposeError(Exception):
    """Bad settings (BACKEND, STICKINESS) or a volume without `init`: one line, exit 2."""


def make_config(backend: str, stickiness: str, users: int, run_dir: Path = RUN_DIR) -> cfg.LabConfig:
    if backend not in cfg.BACKENDS:
        raise ComposeError(f"BACKEND must name one backend of {', '.join(cfg.BACKENDS)}, got {backend!r}")
    if stickiness not in cfg.STICKINESS:
        raise ComposeError(f"STICKINESS must be one of {', '.join(cfg.STICKINESS)}, got {stickiness!r}")
    return cfg.LabConfig(run_dir=run_dir, backends=[backend], users=users, stickiness=stickiness,
                         host=ALL_ADDRESSES, listen=ALL_ADDRESSES, public_host=PUBLIC_HOST, hosts=dict(HOSTS))


def targets(config: cfg.LabConfig) -> dict[str, str]:
    """The URLs authbench's master is given (sourced by its shell from targets.env): the one cluster's."""
    cluster = config.clusters()[0]
    return {"AUTHBENCH_BACKEND": cluster, "AUTHBENCH_SP_URL": f"{config.sp_url(cluster)}{shibsp.PROTECTED_PATH}/",
            "AUTHBENCH_LB_URL": config.lb_url(cluster), "AUTHBENCH_NODE_A_URL": config.node_url(cluster, "a"),
            "AUTHBENCH_NODE_B_URL": config.node_url(cluster, "b")}


def idp_env(config: cfg.LabConfig) -> dict[str, str]:
    """The reference node's configuration, as shell variables for a Shibboleth IdP node in its place."""
    backend = config.backends[0]
    node = components.node_config(config, backend, "a")
    return {"IDP_A_PORT": str(config.cluster_port(backend, "idp-a")),
            "IDP_B_PORT": str(config.cluster_port(backend, "idp-b")),
            "ENTITY_ID": node.entity_id, "SCOPE": node.scope, "LDAP_URL": node.ldap_url, "LDAP_BASE": node.ldap_base,
            "LDAP_BIND_DN": node.ldap_bind_dn, "LDAP_PASSWORD_FILE": node.ldap_bind_password_file,
            "SIGNING_KEY": node.signing_key, "SIGNING_CERT": node.signing_cert,
            "SP_METADATA": str(config.metadata_dir / f"sp-{backend}.xml"), "MEMCACHED": " ".join(node.memcached),
            "POSTGRES_URL": POSTGRES_URL, "POSTGRES_PASSWORD_FILE": str(config.run_dir / POSTGRES_PASSWORD_FILE)}


def _env_file(values: dict[str, str]) -> str:
    return "".join(f"{key}='{value}'\n" for key, value in values.items())


def init(config: cfg.LabConfig, public_dir: Path = PUBLIC_DIR) -> dict:
    """Everything the components read, made idempotently: keys are kept across `up`s, configs rewritten."""
    binaries = lab.find_binaries()
    for name in ("ldap", "lb", *(f"{config.backends[0]}/{part}" for part in PER_CLUSTER)):
        config.component_dir(name).mkdir(parents=True, exist_ok=True)
    pki.ensure_server_cert(config.pki_dir, [PUBLIC_HOST])
    files = slapd.prepare(config)
    seeded = slapd.seed_info(files)
    if seeded is None or seeded["users"] != config.users:
        seeded = slapd.seed(files, binaries["slapadd"], config.users)
    haproxy.prepare(config)
    components.write_app_files(config)
    shibsp.write(config, config.backends[0])
    (config.run_dir / IDP_ENV_FILE).write_text(_env_file(idp_env(config)))
    # read by the postgres image's entrypoint as its own user: readable inside the IdP side's volume only
    pki.ensure_secret(config.run_dir / POSTGRES_PASSWORD_FILE).chmod(0o644)
    publish(config, public_dir)
    return seeded


def init_keycloak(design: str, run_dir: Path = RUN_DIR, public_dir: Path = PUBLIC_DIR) -> cfg.LabConfig:
    """The keycloak profile, after `init`: the volume's config turned into Keycloak's cluster alone, its files,
    realm and database (keycloak/containers.py), and the URLs of its SP for the master."""
    try:
        config = keycloak.profile_config(load(run_dir), design)
    except ValueError as exc:
        raise ComposeError(str(exc)) from None
    keycloak.prepare(config, lab.extra_binaries(config))
    publish(config, public_dir)
    return config


def publish(config: cfg.LabConfig, public_dir: Path) -> None:
    """The config every later container loads, and what authbench's own services may read (no secret)."""
    (config.run_dir / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2))
    public_dir.mkdir(parents=True, exist_ok=True)
    (public_dir / "ca.crt").write_bytes(config.ca_cert.read_bytes())
    (public_dir / TARGETS_FILE).write_text(_env_file(targets(config)))


def load(run_dir: Path = RUN_DIR) -> cfg.LabConfig:
    try:
        return cfg.LabConfig.from_dict(json.loads((run_dir / CONFIG_FILE).read_text()))
    except FileNotFoundError:
        raise ComposeError(f"{run_dir / CONFIG_FILE} is missing: the init service has not run") from None


def spec_of(config: cfg.LabConfig, service: str) -> components.Spec:
    if service not in SERVICES:
        choices = [*SERVICES, *keycloak.SERVICES]
        raise ComposeError(f"unknown service {service!r}: choose from {', '.join(choices)}")
    component = SERVICES[service]
    name = f"{config.backends[0]}/{component}" if component in PER_CLUSTER and config.backends else component
    binaries = {**lab.find_binaries(), **lab.extra_binaries(config)}
    specs = {spec.name: spec for spec in components.build(config, binaries)}
    if name not in specs:
        raise ComposeError(f"the volume's config has no {service!r}: run the init of its profile")
    return specs[name]


def serve(config: cfg.LabConfig, service: str) -> None:
    """Replace this process with the component's server, in the foreground, as compose expects."""
    if service in keycloak.SERVICES:  # the Keycloak image has Java and Keycloak, not the lab's other servers
        node = keycloak.SERVICES[service]
        name, command = service, keycloak.node_command(config, node, *keycloak.where_am_i())
        env = keycloak.server.environment()
    else:
        spec = spec_of(config, service)
        name, command, env = spec.name, spec.command, spec.env
    directory = config.component_dir(name)
    directory.mkdir(parents=True, exist_ok=True)
    os.chdir(directory)
    os.execve(command[0], command, {**os.environ, **env})


def health(config: cfg.LabConfig, service: str) -> tuple[bool, str]:
    if service in keycloak.SERVICES:
        return processes.check(keycloak.server.probe(config, service))
    spec = spec_of(config, service)
    return processes.check(components.probe(config, spec.name, spec.port))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m authbench_lab.compose")
    parser.add_argument("action", choices=("init", "serve", "health", "trust"))
    parser.add_argument("service", nargs="?", default="")
    args = parser.parse_args(argv)
    try:
        if args.action == "trust" or (args.action == "init" and args.service):
            return _keycloak_step(args.action, args.service)
        if args.action == "init":
            # the accounts user000..user999, as the master's and workers' template expects
            config = make_config(os.environ.get("BACKEND", "stateless"), os.environ.get("STICKINESS", "session"),
                                 cfg.DEFAULT_USERS)
            seeded = init(config)
            print(f"authbench compose init: {config.backends[0]}, {seeded['users']} LDAP accounts, "
                  f"stickiness {config.stickiness}")
            return 0
        config = load()
        if args.action == "serve":
            serve(config, args.service)
        ok, detail = health(config, args.service)
        print(detail)
        return 0 if ok else 1
    except (ComposeError, lab.LabError, RuntimeError, OSError) as exc:
        print(f"authbench compose: {exc}", file=sys.stderr)
    return 2


def _keycloak_step(action: str, service: str) -> int:
    """`init keycloak` and `trust keycloak`: the keycloak profile's one-shot steps."""
    if service != "keycloak":
        raise ComposeError(f"{action} takes one service, keycloak; got {service or 'none'!r}")
    if action == "init":
        config = init_keycloak(os.environ.get("KEYCLOAK_DESIGN", cfg.DEFAULT_KEYCLOAK_DESIGN))
        print(f"authbench compose init: {config.keycloak_cluster}, realm and database made, stickiness "
              f"{config.stickiness}")
    else:
        print(f"authbench compose trust: the SP trusts {keycloak.trust(load())} from its SAML descriptor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
