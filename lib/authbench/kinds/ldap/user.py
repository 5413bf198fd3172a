"""The LDAP bind Locust user: one authentication per iteration, simple bind or search-then-bind.

Its connection is `ldap.client.Connection`, which waits on its socket through gevent, so the users
of a worker overlap their binds. Kept open and re-bound by default (authrate's `-f`); with
`new_connection` every authentication connects, binds and disconnects (Percona's loop).
A failed bind is an error whose reason is the LDAP result code, e.g. `invalidCredentials (49)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...accounts import AccountPicker
from ...results.failures import Evidence
from ...user import JourneyOutcome, JourneyUser
from .client import Connection, Endpoint, LdapFailure

USER_FIELD = "{user}"  # where the account's name goes in the DN template and the search filter
EMPTY_PASSWORD = "empty password"  # RFC 4513 5.1.2: an unauthenticated bind, which servers answer with success


@dataclass(frozen=True)
class LDAPSearch:
    base: str
    scope: int
    filter: str  # with {user}
    identity: tuple[str, str] | None = field(default=None, repr=False)  # service account; None: anonymous


@dataclass
class LDAPSettings:
    endpoint: Endpoint
    accounts: AccountPicker
    dn_template: str = ""  # with {user}; unused when searching
    search: LDAPSearch | None = None
    new_connection: bool = False
    pace: float = 0.0  # --pace: seconds from one journey's start to the user's next (0: back to back)

    def describe(self) -> dict:
        """For the run's record: no passwords."""
        return {"url": self.endpoint.url, "start_tls": self.endpoint.start_tls, "tls_verify": self.endpoint.verify,
                "mode": "search-then-bind" if self.search else "bind", "dn_template": self.dn_template or None,
                "search": None if self.search is None else {
                    "base": self.search.base, "scope": self.search.scope, "filter": self.search.filter,
                    "as": self.search.identity[0] if self.search.identity else "anonymous"},
                "new_connection": self.new_connection}


def authenticate(settings: LDAPSettings, conn: Connection, searcher: Connection, user: str, password: str) -> None:
    """Raises LdapFailure when the authentication fails."""
    if not password:
        raise LdapFailure(EMPTY_PASSWORD, "it would be an unauthenticated bind, not a login")
    search = settings.search
    if search is None:
        dn = settings.dn_template.replace(USER_FIELD, user)
    else:
        if search.identity is not None:
            searcher.bind_once(*search.identity)
        dn = searcher.find_dn(search.base, search.scope, search.filter.replace(USER_FIELD, user))
    conn.bind(dn, password)


def preflight(settings: LDAPSettings) -> str | None:
    """One journey exactly as the run does it (search, then bind) before any load: why it fails, or None.

    Any failure stops the run: a bad search base or filter fails every journey the same way
    (noSuchObject, filterError), so measuring them would only measure the mistake.
    """
    account = settings.accounts.pick()
    conn, searcher = Connection(settings.endpoint), Connection(settings.endpoint)
    try:
        authenticate(settings, conn, searcher if settings.search and settings.search.identity else conn,
                     account.username, account.password)
    except LdapFailure as failure:
        how = "search-then-bind" if settings.search else "bind"
        hint = "; check --search-base, --search-filter and --search-scope" if settings.search else ""
        return (f"{settings.endpoint.url}: the test {how} for account {account.username!r} failed: "
                f"{failure.reason} ({failure.detail}){hint}")
    finally:
        conn.close()
        searcher.close()
    return None


def evidence(settings: LDAPSettings, user: str, failure: LdapFailure) -> Evidence:
    """What is kept of a failed authentication: what was asked and what the server answered, no password."""
    search = settings.search
    asked = (f"search {search.filter.replace(USER_FIELD, user)} under {search.base}, then bind as the DN found"
             if search else f"bind as {settings.dn_template.replace(USER_FIELD, user)}")
    return Evidence(failure.reason, failure.detail, user, trail=[
        f"{settings.endpoint.url}: {asked}, password sent (not kept)", f"failed: {failure.reason}: {failure.detail}"])


class LDAPUser(JourneyUser):
    journey_name = "LDAP bind"
    request_type = "LDAP"

    def on_start(self) -> None:
        super().on_start()
        settings: LDAPSettings = self.run_context.settings
        self.conn = Connection(settings.endpoint)
        separate = settings.search is not None and settings.search.identity is not None
        self.searcher = Connection(settings.endpoint) if separate else self.conn

    def on_stop(self) -> None:
        self.conn.close()
        self.searcher.close()

    def journey(self) -> JourneyOutcome:
        settings: LDAPSettings = self.run_context.settings
        account = settings.accounts.pick()
        try:
            authenticate(settings, self.conn, self.searcher, account.username, account.password)
            outcome = JourneyOutcome(True, account=account.username)
        except LdapFailure as failure:
            outcome = JourneyOutcome(False, failure.reason, failure.detail, account.username, step="bind")
            if self.run_context.failures.wants(failure.reason):
                outcome.evidence = evidence(settings, account.username, failure)
        if settings.new_connection:
            self.conn.close()
            self.searcher.close()
        return outcome
