"""Keycloak's two-node cluster one component per container, for compose.yaml's `keycloak` profile.

The lab's own derivations (server.py: command lines, realm, the nodes' files; haproxy.py; postgres.py), given what
only a container knows: its own address on the internal network (JGroups binds and announces it) and that network
(HAProxy's headers are trusted from it). The volume's secrets are written by `keycloak-init` (the lab image); the
nodes run from the Keycloak image, which holds the builds install.py made at the image's build and nothing else.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import struct
from pathlib import Path

from .. import config as cfg
from .. import haproxy, postgres, shibsp
from . import install, server

SERVICES = {"keycloak-a": "a", "keycloak-b": "b"}  # compose service → node
# lab component → the compose service it runs as (the real Shibboleth SP is Keycloak's SP here)
HOSTS = {"postgres": "keycloak-db", "keycloak-a": "keycloak-a", "keycloak-b": "keycloak-b", "keycloak-sp": "sp"}
ROUTES = Path("/proc/net/route")
DESCRIPTOR_TIMEOUT = 60.0  # node A is healthy when this runs; its realm may take a moment more


def profile_config(config: cfg.LabConfig, design: str) -> cfg.LabConfig:
    """The reference profile's config turned into the Keycloak cluster's alone (no reference cluster behind the
    balancer), with PostgreSQL and the nodes reached by their service names."""
    if design not in cfg.KEYCLOAK_DESIGNS:
        raise ValueError(f"KEYCLOAK_DESIGN must be one of {', '.join(cfg.KEYCLOAK_DESIGNS)}, got {design!r}")
    return dataclasses.replace(config, backends=[], extras=["postgres", "keycloak"], keycloak_design=design,
                               hosts={**config.hosts, **HOSTS})


def prepare(config: cfg.LabConfig, binaries: dict[str, str]) -> None:
    """What keycloak-init writes before anything of the cluster starts: HAProxy's configuration, the nodes' files
    and node A's realm (secrets in 0600 files), PostgreSQL's data directory and Keycloak's database in it."""
    haproxy.prepare(config)
    realm_text = server.write_files(config)
    postgres.prepare(config, binaries)
    server.make_database(config, binaries, realm_text)


def own_network(address: str, routes: str) -> str:
    """The network (CIDR) `address` is on, from the kernel's routing table (the text of /proc/net/route)."""
    found = []
    for line in routes.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or fields[7] == "00000000":
            continue
        destination, mask = (socket.inet_ntoa(struct.pack("<I", int(field, 16))) for field in (fields[1], fields[7]))
        network = ipaddress.ip_network(f"{destination}/{mask}", strict=False)
        if ipaddress.ip_address(address) in network:
            found.append(network)
    if not found:
        raise OSError(f"no route names the network of {address}")
    return str(max(found, key=lambda network: network.prefixlen))


def where_am_i() -> tuple[str, str]:
    """This container's address (its host name's, as Docker writes /etc/hosts) and its network."""
    address = socket.gethostbyname(socket.gethostname())
    return address, own_network(address, ROUTES.read_text())


def node_command(config: cfg.LabConfig, node: str, address: str, network: str) -> list[str]:
    """The node's home (links to the image's build for the design) and the lab's command line for it."""
    built = install.find_built(install.cache_root(), server.build_options(config))
    if built is None:
        raise install.InstallError(f"this image has no Keycloak build for the design {config.keycloak_design}: "
                                   "rebuild it (Dockerfile target keycloak)")
    install.node_home(built, server.home(config, node))
    return server.command(config, node, bind=address, proxies=network)


def trust(config: cfg.LabConfig, timeout: float = DESCRIPTOR_TIMEOUT) -> str:
    """The SP's files trusting Keycloak as an operator does: from the SAML descriptor node A publishes (fetched
    from its own port, before the balancer exists); returns Keycloak's entity ID."""
    node_a = f"http://{config.address('keycloak-a')}:{config.keycloak_port('http-a')}"
    url = server.descriptor_url(node_a)
    metadata = server.fetch_descriptor(url, timeout=timeout)
    entity_id, _sso, _cert = server.read_descriptor(metadata, Path(url))
    shibsp.write_trusting(config, config.keycloak_cluster, server.sp_entity_id(config), entity_id, metadata)
    return entity_id
