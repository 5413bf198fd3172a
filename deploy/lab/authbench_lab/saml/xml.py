"""XML namespaces and small helpers shared by the lab's IdP and SP."""

from __future__ import annotations

import datetime
import os

NS = {
    "md": "urn:oasis:names:tc:SAML:2.0:metadata",
    "ds": "http://www.w3.org/2000/09/xmldsig#",
    "saml": "urn:oasis:names:tc:SAML:2.0:assertion",
    "samlp": "urn:oasis:names:tc:SAML:2.0:protocol",
}


def cert_body(pem: str) -> str:
    """The base64 body of a PEM certificate, as metadata and KeyInfo carry it."""
    lines = [line for line in pem.strip().splitlines() if not line.startswith("-----")]
    return "".join(lines)


def new_id() -> str:
    """SAML IDs must be xsd:ID (start with a letter or underscore)."""
    return "_" + os.urandom(16).hex()


def instant(timestamp: float) -> str:
    """xsd:dateTime in UTC with milliseconds, as Shibboleth writes it."""
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_instant(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
