"""The LDAP bind Locust user: one authentication per iteration, simple bind or search-then-bind.

Its connection is `ldap.client.Connection`, which waits on its socket through gevent, so the users
of a worker overlap their binds. Kept open and re-bound by default (authrate's `-f`); with
`new_connection` every authentication connects, binds and disconnects (Percona's loop).
A failed bind is an error whose reason is the LDAP result code, e.g. `invalidCredentials (49)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..accounts import AccountPicker
from ..ldap.client import Connection, Endpoint, LdapFailure
from .journey import JourneyOutcome, JourneyUser

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
            outcome = JourneyOutcome(False, failure.reason, failure.detail, account.username)
        if settings.new_connection:
            self.conn.close()
            self.searcher.close()
        return outcome


# -- plain `locust -f locustfiles/ldap_bind.py --host ldap://…` -------------------------------------


def add_locust_options(parser) -> None:
    group = parser.add_argument_group("authbench LDAP bind")
    group.add_argument("--bind-dn", default="uid={user},ou=people,dc=example,dc=org", help="DN template with {user}")
    group.add_argument("--ca-bundle", default="", help="CA certificates for LDAPS/StartTLS")
    group.add_argument("--start-tls", action="store_true", default=False)
    group.add_argument("--accounts-template", default="user{000..999}", help="e.g. user{000..999}")
    group.add_argument("--password-rule", default="pw-{user}", help="password of a template account")
    group.add_argument("--new-connection", action="store_true", default=False, help="connect per authentication")
    group.add_argument("--ldap-timeout", type=float, default=10.0, help="seconds per operation")


def context_from_locust_options(options, host: str | None):
    from ..accounts import AccountsError, from_template
    from .journey import RunContext

    if not host or not host.startswith(("ldap://", "ldaps://")):
        raise SystemExit("authbench: give the LDAP server as Locust's --host ldap://host:port or ldaps://host:port")
    if USER_FIELD not in options.bind_dn:
        raise SystemExit("authbench: --bind-dn needs {user}")
    try:
        accounts = from_template(options.accounts_template, options.password_rule)
    except AccountsError as exc:
        raise SystemExit(f"authbench: {exc}") from None
    endpoint = Endpoint(host, start_tls=options.start_tls, ca_file=options.ca_bundle or None,
                        timeout=options.ldap_timeout)
    return RunContext(settings=LDAPSettings(endpoint, AccountPicker(accounts), options.bind_dn,
                                            new_connection=options.new_connection))
