"""The 2012 report's functional cluster checks, run through the SP against any IdP cluster.

A node is reached by rerouting the browser's requests for the balancer's URL to that node's URL, so
the SP stays unchanged and still sends users to the balancer, as it would in production; the browser
keeps and sends its cookies for the balancer's URL all the same (journeys/fastbrowser.py), so moving
it to the other node is what the balancer does to a real browser. "A new SP session" forgets the
cookies the SP's origin set and keeps those the IdP's origins set (journeys/sp_session.py): no rule
about where one IdP product puts its cookies, so the verdict holds for any IdP.

- Test 1: each node authenticates, and the SP receives the result.
- Test 2: after SSO via node A, a new SP session via node B is not asked for a password.
- Test 3: the login form fetched via node A, the credentials posted via node B, succeeds.

The same checks judge an OpenID Provider cluster: `Cluster.login` is then the OIDC kind's code flow
(kinds/oidc/checks.py) and `sp_url` its virtual RP's redirect URI, whose origin holds no cookie.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..journeys.fastbrowser import FastBrowser
from ..journeys.saml import SSOClient, SSOOutcome, sso_login
from ..journeys.sp_session import Forgotten, forget_sp_session

PASS, FAIL = "○", "×"  # the report's marks


@dataclass(frozen=True)
class Account:
    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"Account({self.username!r})"


@dataclass(frozen=True)
class Cluster:
    sp_url: str  # the SP's protected URL
    lb_url: str  # base URL of the balancer, as the SP's redirects name it
    nodes: dict[str, str]  # node name → base URL of that node alone
    verify: bool | str = True  # TLS verification: True, False or a CA bundle path
    # How a browser logs in through the cluster: (browser, username, password, before_credentials) → an outcome
    # with ok, password_asked and pages. None: SAML SSO through the SP at sp_url.
    login: Callable[..., SSOOutcome] | None = None


@dataclass
class CheckResult:
    test: str
    passed: bool
    evidence: list[str] = field(default_factory=list)

    @property
    def mark(self) -> str:
        return PASS if self.passed else FAIL


def pinned_to(cluster: Cluster, node: str) -> Callable[[str], str]:
    """Route every URL of the cluster — the balancer's or any node's — to one node."""
    target = cluster.nodes[node].rstrip("/")
    prefixes = [url.rstrip("/") for url in (cluster.lb_url, *cluster.nodes.values())]

    def route(url: str) -> str:
        for prefix in prefixes:
            if url.startswith(prefix + "/") or url == prefix:
                return target + url[len(prefix):]
        return url

    return route


def _describe(name: str, outcome: SSOOutcome, browser: SSOClient) -> str:
    cookies = browser.cookie_names()
    asked = "password asked" if outcome.password_asked else "no password asked"
    return f"{name}: {outcome}; {asked}; pages {outcome.pages}; cookies {cookies}"


def login(cluster: Cluster, browser: FastBrowser, account: Account,
          before_credentials: Callable[[SSOClient], None] | None = None) -> SSOOutcome:
    """One login through the cluster as a browser makes it: SAML through the SP, or the cluster's own walk."""
    if cluster.login is not None:
        return cluster.login(browser, account.username, account.password, before_credentials)
    return sso_login(browser, cluster.sp_url, account.username, account.password,
                     before_credentials=before_credentials)


def new_sp_session(cluster: Cluster, browser: FastBrowser) -> Forgotten:
    """A new SP session for the same browser: drop the cookies the SP set, keep those of the whole IdP cluster."""
    return forget_sp_session(browser.cookies, cluster.sp_url, [cluster.lb_url, *cluster.nodes.values()])


def check_each_node(cluster: Cluster, account: Account) -> CheckResult:
    result = CheckResult("Test 1", passed=True)
    for name in cluster.nodes:
        with FastBrowser(verify=cluster.verify, route=pinned_to(cluster, name)) as browser:
            outcome = login(cluster, browser, account)
            result.passed &= outcome.ok
            result.evidence.append(_describe(f"via {name}", outcome, browser))
    return result


def check_sso_across_nodes(cluster: Cluster, account: Account) -> CheckResult:
    first, second = list(cluster.nodes)[:2]
    with FastBrowser(verify=cluster.verify, route=pinned_to(cluster, first)) as browser:
        first_login = login(cluster, browser, account)
        result = CheckResult("Test 2", passed=False, evidence=[_describe(f"login via {first}", first_login, browser)])
        if not first_login.ok:
            return result
        forgotten = new_sp_session(cluster, browser)
        result.evidence.append(f"new SP session: {forgotten}")
        browser.route = pinned_to(cluster, second)
        again = login(cluster, browser, account)
        result.passed = again.ok and not again.password_asked and not forgotten.undecided
        result.evidence.append(_describe(f"new SP session via {second}", again, browser))
    return result


def check_login_across_nodes(cluster: Cluster, account: Account) -> CheckResult:
    first, second = list(cluster.nodes)[:2]

    def switch(b: SSOClient) -> None:
        b.route = pinned_to(cluster, second)

    with FastBrowser(verify=cluster.verify, route=pinned_to(cluster, first)) as browser:
        outcome = login(cluster, browser, account, before_credentials=switch)
        description = _describe(f"form via {first}, credentials via {second}", outcome, browser)
    return CheckResult("Test 3", passed=outcome.ok, evidence=[description])


def run_checks(cluster: Cluster, account: Account) -> list[CheckResult]:
    return [check(cluster, account) for check in (check_each_node, check_sso_across_nodes, check_login_across_nodes)]


def format_table(results: dict[str, list[CheckResult]]) -> str:
    """The report's table: one row per cluster, ○/× per test."""
    tests = [result.test for result in next(iter(results.values()), [])]
    width = max([len("cluster"), *map(len, results)])
    lines = ["  ".join(["cluster".ljust(width), *tests])]
    for name, row in results.items():
        lines.append("  ".join([name.ljust(width), *(r.mark.center(len(r.test)) for r in row)]))
    return "\n".join(lines)
