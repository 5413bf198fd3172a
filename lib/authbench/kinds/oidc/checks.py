"""check-cluster for an OpenID Provider cluster: cluster/checks.py's Tests 1-3 with the code flow as the login.

The checks, their node routing and "a new RP session" are cluster/checks.py's; this module only gives them the
walk (`CodeFlowLogin`) and the cluster to walk it on. authbench is the virtual RP: its redirect URI is the "SP URL"
whose origin's cookies a new session drops (a virtual RP sets none, so every cookie kept is the provider's). The RP's
token request goes to the node the browser is on when the code comes, so "node X logs in" is node X's whole flow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ... import embedded_lab
from ...cluster.checks import Cluster
from ...errors import AuthbenchError
from ...journeys.fastbrowser import FastBrowser
from ...journeys.forms import LoginFields
from ...journeys.saml import SSOOutcome
from ...journeys.settings import login_fields
from ..common import tls_verify
from . import Options, client_of, resolve
from . import flow as oidc

JSON = "application/json"


@dataclass
class CodeFlowLogin:
    """One whole code flow (authorize, login, code, token) by a browser the checks route; discovery read once."""

    issuer: str
    client: oidc.Client
    fields: tuple[LoginFields, ...]
    verify: bool | str = True
    timeout: float = 10.0
    _provider: oidc.Provider | None = field(default=None, repr=False)

    def __call__(self, browser: FastBrowser, username: str, password: str,
                 before_credentials: Callable[[FastBrowser], None] | None = None) -> SSOOutcome:
        browser.catch = self.client.caught  # the redirect to the RP is caught, as in a run

        def route(url: str) -> str:  # the RP asks the node the browser is on
            return browser.route(url) if browser.route is not None else url

        flow = oidc.Flow()
        with FastBrowser(verify=self.verify, timeout=self.timeout, accept=JSON, route=route) as rp:
            try:
                if self._provider is None:
                    self._provider = oidc.discover(rp, self.issuer)
                oidc.run_flow(browser, rp, flow, self._provider, self.client, username, password, self.fields,
                              before_credentials=before_credentials)
            except oidc.FlowFailed as failed:
                return SSOOutcome(False, failed.reason, failed.detail, failed.page, flow.password_asked, flow.pages)
            except OSError as exc:  # discovery's connection or timeout (run_flow maps its own)
                return SSOOutcome(False, oidc.CONNECTION_ERROR, str(exc) or type(exc).__name__)
        return SSOOutcome(True, password_asked=flow.password_asked, pages=flow.pages)


def op_cluster(issuer: str, lb_url: str, nodes: dict[str, str], verify: bool | str, client: oidc.Client,
               fields: tuple[LoginFields, ...], timeout: float = 10.0) -> Cluster:
    """An OP cluster for cluster/checks.py: the balancer's and each node's base URL, the RP authbench plays."""
    return Cluster(sp_url=client.redirect_uri, lb_url=lb_url, nodes=nodes, verify=verify,
                   login=CodeFlowLogin(issuer, client, fields, verify, timeout))


def cluster_for(target: str, lab_dir: str, lb: str | None, nodes: list[str], options: Options,
                ca_bundle: str | None, insecure: bool, timeout: float) -> tuple[Cluster, dict | None]:
    """check-cluster's OP cluster from `oidc+https://ISSUER` with --lb and --node, or `oidc+lab:keycloak-…` (its
    balancer and nodes, CA and RP); and the lab's account defaults (None for a URL target)."""
    where = resolve(target, lab_dir)
    client = client_of(options, where)
    verify = tls_verify(ca_bundle, insecure, where.lab_ca)
    if where.backend is not None:
        if lb or nodes:
            raise AuthbenchError("--lb and --node are for URL targets; a lab: target brings its own balancer and nodes")
        lab = embedded_lab.cluster(embedded_lab.running(lab_dir), where.backend)
        lb, named = lab.lb_url, lab.nodes
    else:
        if not lb or not nodes:
            raise AuthbenchError("give --lb (the balancer's base URL, as the issuer's endpoints name it) and at least "
                                 "one --node, or an oidc+lab:keycloak-DESIGN target")
        named = {chr(ord("A") + i): url for i, url in enumerate(nodes)}
    return op_cluster(where.issuer, lb, named, verify, client, login_fields(), timeout), where.lab_accounts
