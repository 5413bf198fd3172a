"""Database logins, Percona's loop: connect, authenticate (the server asks LDAP), `SELECT 1`, disconnect.

Targets: postgresql://host:port/db, postgres://…, `lab:postgres`. Every journey is a new connection, so
the TIME_WAIT count towards the server is reported. The client is `client.py` (pg8000's wire protocol).
"""

from __future__ import annotations

from typing import Any

from ... import embedded_lab
from ...errors import AuthbenchError
from ..base import Capabilities, CommonOptions, Journey, Kind, NoOptions
from ..common import accounts, load_key
from ..preflight import OneJourneyCheck

SCHEMES = ("postgresql://", "postgres://")
LAB_TARGET = "lab:postgres"
LAB_SAMPLED = ("postgres", "ldap")  # the database (its per-login backends included) and the directory it binds to


def claims(target: str) -> bool:
    return target.startswith(SCHEMES) or target == LAB_TARGET


def prepare(common: CommonOptions, options: Any) -> Journey:
    from .client import Endpoint
    from .user import PostgresSettings, PostgresUser, preflight

    url, lab_defaults = common.target, None
    on_lab = url == LAB_TARGET
    if on_lab:
        config = embedded_lab.running(common.lab_dir)
        embedded_lab.require_extra(config, "postgres", "PostgreSQL")
        url, lab_defaults = config.postgres_url(), embedded_lab.account_defaults(config)
    try:
        endpoint = Endpoint.from_url(url, common.timeout)
    except ValueError as exc:
        raise AuthbenchError(f"--target: {exc}") from None
    picker, account_source = accounts(common.accounts, lab_defaults)
    settings = PostgresSettings(endpoint, picker, pace=common.pace)
    url = endpoint.url
    record = {"target": url, "journey": "database-login", "database": settings.describe(),
              "timeout_s": common.timeout, "accounts": account_source}
    return Journey(PostgresUser, settings, record, url, load_key(url, common.lab_dir, on_lab),
                   lambda: OneJourneyCheck(url, preflight(settings)), lab_dir=common.lab_dir if on_lab else "",
                   sampled=LAB_SAMPLED if on_lab else (), churn_port=endpoint.port,
                   summary_line=f"target {url}: login ok")


KIND = Kind("postgres", "database logins", "postgresql://host:port/db, lab:postgres", claims, NoOptions, prepare,
            Capabilities(), variants={"login": {}})
