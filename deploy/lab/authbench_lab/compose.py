"""The lab's components one per container, for compose.yaml.

    python -m authbench_lab.compose init            # keys, LDAP seed, HAProxy and app configs into the volume
    python -m authbench_lab.compose serve idp-a     # exec one component in the foreground
    python -m authbench_lab.compose health idp-a    # its health probe (a compose healthcheck)

The same derivations as `authbench lab up` (ports, commands, files) from one `LabConfig` whose `hosts`
name each component's container, so nothing here is a second copy of the lab. The real Shibboleth SP
takes the reference SP's place (shibsp.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import components, haproxy, lab, pki, processes, shibsp, slapd
from . import config as cfg

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
            "redis-replica": "redis-replica", "lb": "lb", "idp-a": "idp-a", "idp-b": "idp-b"}
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
    """The URLs authbench's master is given (sourced by its shell from targets.env)."""
    backend = config.backends[0]
    return {"AUTHBENCH_BACKEND": backend, "AUTHBENCH_SP_URL": f"{config.sp_url(backend)}{shibsp.PROTECTED_PATH}/",
            "AUTHBENCH_LB_URL": config.lb_url(backend), "AUTHBENCH_NODE_A_URL": config.node_url(backend, "a"),
            "AUTHBENCH_NODE_B_URL": config.node_url(backend, "b")}


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
    (config.run_dir / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2))
    (config.run_dir / IDP_ENV_FILE).write_text(_env_file(idp_env(config)))
    # read by the postgres image's entrypoint as its own user: readable inside the IdP side's volume only
    pki.ensure_secret(config.run_dir / POSTGRES_PASSWORD_FILE).chmod(0o644)
    public_dir.mkdir(parents=True, exist_ok=True)
    (public_dir / "ca.crt").write_bytes(config.ca_cert.read_bytes())
    (public_dir / TARGETS_FILE).write_text(_env_file(targets(config)))
    return seeded


def load(run_dir: Path = RUN_DIR) -> cfg.LabConfig:
    try:
        return cfg.LabConfig.from_dict(json.loads((run_dir / CONFIG_FILE).read_text()))
    except FileNotFoundError:
        raise ComposeError(f"{run_dir / CONFIG_FILE} is missing: the init service has not run") from None


def spec_of(config: cfg.LabConfig, service: str) -> components.Spec:
    if service not in SERVICES:
        raise ComposeError(f"unknown service {service!r}: choose from {', '.join(SERVICES)}")
    component = SERVICES[service]
    name = f"{config.backends[0]}/{component}" if component in PER_CLUSTER else component
    specs = {spec.name: spec for spec in components.build(config, lab.find_binaries())}
    return specs[name]


def serve(config: cfg.LabConfig, service: str) -> None:
    """Replace this process with the component's server, in the foreground, as compose expects."""
    spec = spec_of(config, service)
    directory = config.component_dir(spec.name)
    directory.mkdir(parents=True, exist_ok=True)
    os.chdir(directory)
    os.execve(spec.command[0], spec.command, {**os.environ, **spec.env})


def health(config: cfg.LabConfig, service: str) -> tuple[bool, str]:
    spec = spec_of(config, service)
    return processes.check(components.probe(config, spec.name, spec.port))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m authbench_lab.compose")
    parser.add_argument("action", choices=("init", "serve", "health"))
    parser.add_argument("service", nargs="?", default="")
    args = parser.parse_args(argv)
    try:
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


if __name__ == "__main__":
    sys.exit(main())
