"""The framework's one door to the embedded lab: what a running lab offers, read from its state.

Everything outside `cli/lab.py` (which starts and stops the lab) asks the lab through this module, never
through its constants or files, so the lab could be replaced by a real cluster without the framework
noticing. The lab's own package is imported lazily: a run against a real target never loads it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import AuthbenchError

if TYPE_CHECKING:
    from authbench_lab.config import LabConfig

    from .cluster.checks import Cluster

PREFIX = "lab:"  # a target naming a part of the running lab: lab:BACKEND, lab:ldap, lab:postgres, …
PROTECTED_PATH = "/secure/"  # the lab SP's protected page
SSO_PATH = "/idp/profile/SAML2/Redirect/SSO"  # the lab IdP's SSO endpoint (for a virtual SP)
EXTRAS_HINT = "start it with 'authbench lab up --with {name}'"


def state(run_dir: str | Path) -> dict[str, Any] | None:
    """The lab's lab.json (config, components and their pids), or None when no lab was started there."""
    from authbench_lab import lab

    return lab.read_state(run_dir)


def running(run_dir: str | Path) -> LabConfig:
    """The configuration of the lab running in `run_dir`, or an error saying how to start one."""
    from authbench_lab import lab
    from authbench_lab.config import LabConfig

    found = lab.read_state(run_dir)
    if not found or not any(row["healthy"] for row in lab.status(run_dir)):
        where = os.path.abspath(run_dir)
        raise AuthbenchError(f"no lab running in {where}; start it with 'authbench lab up --lab-dir {where}', or "
                             "point --lab-dir (or $AUTHBENCH_LAB_DIR) at the folder of the lab that runs")
    return LabConfig.from_dict(found["config"])


def require_extra(config: LabConfig, name: str, title: str) -> None:
    if name not in config.extras:
        raise AuthbenchError(f"the running lab has no {title}; {EXTRAS_HINT.format(name=name)}")


def offered_targets(run_dir: str | Path | None) -> list[str]:
    """The `lab:NAME` targets a lab in `run_dir` offers: its clusters, its directory, its optional servers."""
    from authbench_lab.config import LabConfig

    if not run_dir:
        return []
    try:
        found = state(run_dir)
        config = LabConfig.from_dict(found["config"]) if found else None
    except Exception:  # a broken or foreign lab.json: no lab to offer, the URL field still works
        return []
    if not config:
        return []
    extras = [name for name in config.extras if name != "keycloak"]  # Keycloak is offered as its cluster
    return [*config.clusters(), "ldap", "ldaps", *extras]


def serves(run_dir: str | Path, url: str) -> bool:
    """Whether the lab running in `run_dir` answers at `url`'s host and port (its SP named by URL is still the
    lab: its servers share the machine, so a load on it must take the lab's lock)."""
    from authbench_lab.config import LabConfig

    parts = urlsplit(url)
    try:
        found = state(run_dir)
        config = LabConfig.from_dict(found["config"]) if found else None
        port = parts.port
    except Exception:  # a broken lab.json, or a URL without a usable port: not the lab's
        return False
    return config is not None and parts.hostname in (config.host, config.public_host or config.host) \
        and port in set(config.all_ports().values())


def check_backend(config: LabConfig, name: str) -> str:
    """A cluster of the running lab: a reference IdP backend, or Keycloak's when the lab runs it."""
    if name not in config.clusters():
        raise AuthbenchError(f"the lab has no {name!r} cluster; it has {', '.join(config.clusters())}")
    return name


def is_keycloak(name: str) -> bool:
    """Whether a lab cluster is real Keycloak (its SP knows only its own clients; no virtual SP is registered)."""
    from authbench_lab.config import KEYCLOAK_CLUSTERS

    return name in KEYCLOAK_CLUSTERS


def oidc_provider(config: LabConfig, name: str) -> dict[str, Any]:
    """The OpenID Provider of a lab cluster (real Keycloak's realm): its issuer, the lab CA, and its registered RPs
    as client_id → the 0600 file of its secret (None: a public client); the first is the default RP."""
    from authbench_lab.keycloak import server

    check_backend(config, name)
    if not is_keycloak(name):
        raise AuthbenchError(f"lab:{name} is the reference SAML IdP, no OpenID Provider; the lab's is Keycloak: "
                             f"lab:{config.keycloak_cluster} (start it with 'authbench lab up --with keycloak')")
    return {"issuer": server.realm_url(config), "ca": str(config.ca_cert), "clients": server.oidc_clients(config)}


def serves_cluster(component: str, cluster: str) -> bool:
    """Whether a lab component takes part in `cluster`'s logins ("" for none: the lab's shared servers), so that
    its CPU and memory count among the cluster's: Keycloak's JVMs for a Keycloak cluster only, and so on."""
    from authbench_lab.components import serves

    return serves(component, cluster)


def node_component(cluster: str, name: str) -> str | None:
    """The component that is node A or B of a lab `cluster` when `name` names a node as either IdP does (`idp-a`,
    `keycloak-a`): `keycloak-a` for a Keycloak cluster, `<cluster>/idp-a` for the reference IdP's; else None."""
    for node in ("a", "b"):
        if name in (f"idp-{node}", f"keycloak-{node}"):
            return f"keycloak-{node}" if is_keycloak(cluster) else f"{cluster}/idp-{node}"
    return None


def account_defaults(config: LabConfig) -> dict[str, str]:
    """The lab's accounts as a template and password rule (user0000..userNNNN, pw-<user>)."""
    from authbench_lab.config import PASSWORD_PREFIX, username

    last = username(config.users - 1, config.users)
    return {"template": "user{" + "0" * (len(last) - 4) + ".." + last[4:] + "}",
            "password_rule": PASSWORD_PREFIX + "{user}"}


def people_dn_template() -> str:
    """The DN of a lab account, with {user}."""
    from authbench_lab.config import LDAP_PEOPLE

    return f"uid={{user}},{LDAP_PEOPLE}"


def privacyidea(config: LabConfig) -> dict[str, Any]:
    """Where the lab's privacyIDEA answers and what it was enrolled with (realm, tokens, HOTP counters)."""
    from authbench_lab.privacyidea import server

    require_extra(config, "privacyidea", "privacyIDEA")
    return {"url": config.privacyidea_url(), "realm": server.REALM, "tokens": server.tokens_file(config),
            "counters": server.root(config) / "hotp-counters.sqlite"}


def cluster(config: LabConfig, backend: str) -> Cluster:
    """Balancer and node URLs of one of the lab's clusters, for the cluster checks."""
    from .cluster.checks import Cluster

    return Cluster(sp_url=config.sp_url(backend) + PROTECTED_PATH, lb_url=config.lb_url(backend),
                   nodes={"A": config.node_url(backend, "a"), "B": config.node_url(backend, "b")},
                   verify=str(config.ca_cert))


def expected_cluster_checks(backend: str) -> tuple[bool, ...] | None:
    """What the 2012 design table expects of a lab backend's Tests 1-3, or None when it says nothing."""
    from authbench_lab.config import EXPECTED_CLUSTER_CHECKS

    return EXPECTED_CLUSTER_CHECKS.get(backend)


def stop_component(run_dir: str | Path, name: str) -> dict[str, Any]:
    """Stop one component; {was_running, pid}. AuthbenchError when the lab cannot."""
    from authbench_lab import lab

    try:
        return lab.stop_component(run_dir, name)
    except lab.LabError as exc:
        raise AuthbenchError(str(exc).splitlines()[0]) from None


def start_component(run_dir: str | Path, name: str) -> dict[str, Any]:
    """Start one component again; {already_running, pid}. AuthbenchError when the lab cannot."""
    from authbench_lab import lab

    try:
        return lab.start_component(run_dir, name)
    except lab.LabError as exc:
        raise AuthbenchError(str(exc).splitlines()[0]) from None


def balancer_statuses(run_dir: str | Path, component: str) -> list[str] | None:
    """The lab balancer's status ("UP", "DOWN 1/2", …) of each server that is `component`; [] for a component
    behind no balancer, None when the balancer cannot be asked."""
    from authbench_lab import lab

    return lab.balancer_statuses(run_dir, component)


def component_pids(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Each component's recorded pid and whether that process runs ({pid, running}), from lab.json and the process
    table only (no health probe: cheap enough to ask every second while a run measures). pid None: the lab stopped it.
    AuthbenchError when lab.json cannot be read."""
    from authbench_lab import lab, processes

    try:
        found = lab.read_state(run_dir) or {}
    except lab.LabError as exc:
        raise AuthbenchError(str(exc).splitlines()[0]) from None
    return {name: {"pid": entry.get("pid"), "running": processes.is_running(entry.get("pid"), entry["fragment"])}
            for name, entry in found.get("components", {}).items()}
