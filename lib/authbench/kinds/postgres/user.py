"""The database-login Locust user: connect, authenticate (the server asks LDAP), `SELECT 1`, disconnect.

Percona's loop for MySQL's LDAP plugin, against PostgreSQL's `ldap` authentication: every iteration is
a new connection, so what is measured is the login, including the server's own bind to the directory.
A failed login is an error whose reason is the server's SQLSTATE (`invalid_authorization_specification
(28000)` for a refused password) or `connect error` when the database does not answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...accounts import AccountPicker
from ...results.failures import Evidence
from ...user import JourneyOutcome, JourneyUser
from .client import CONDITIONS, CONNECT_ERROR, QUERY, TIMEOUT, Endpoint, LoginFailure, login

# A preflight failing for one of these would fail every journey: the run does not start.
PREFLIGHT_FATAL = (CONNECT_ERROR, TIMEOUT, *(f"{name} ({code})" for code, name in CONDITIONS.items()))


@dataclass
class PostgresSettings:
    endpoint: Endpoint
    accounts: AccountPicker
    pace: float = 0.0  # --pace: seconds from one journey's start to the user's next (0: back to back)

    def describe(self) -> dict:
        """For the run's record: no passwords."""
        return {"url": self.endpoint.url, "database": self.endpoint.database, "query": QUERY,
                "timeout_s": self.endpoint.timeout, "new_connection": True}


def preflight(settings: PostgresSettings) -> str | None:
    """One login before any load: why the run cannot start, or None."""
    account = settings.accounts.pick()
    try:
        login(settings.endpoint, account.username, account.password)
    except LoginFailure as failure:
        if failure.reason in PREFLIGHT_FATAL:
            return f"{settings.endpoint.url}: {failure.reason} for account {account.username!r} ({failure.detail})"
    return None


class PostgresUser(JourneyUser):
    journey_name = "database login"
    request_type = "PGSQL"

    def journey(self) -> JourneyOutcome:
        settings: PostgresSettings = self.run_context.settings
        account = settings.accounts.pick()
        try:
            login(settings.endpoint, account.username, account.password)
        except LoginFailure as failure:
            evidence = None
            if self.run_context.failures.wants(failure.reason):
                evidence = Evidence(failure.reason, failure.detail, account.username, trail=[
                    f"connect to {settings.endpoint.url} as {account.username}, password sent (not kept), "
                    f"then {QUERY}", f"failed: {failure.reason}: {failure.detail}"])
            return JourneyOutcome(False, failure.reason, failure.detail, account.username, step="login",
                                  evidence=evidence)
        return JourneyOutcome(True, account=account.username)
