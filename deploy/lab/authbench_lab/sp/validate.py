"""Checks an SP makes before it believes a SAML Response; every refusal names its reason.

Order matters: the signature first, and afterwards only the element the signature covers is read,
so a forged assertion wrapped around a signed one is never looked at.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from lxml import etree

from ..saml.signing import SignatureError, Verifier
from ..saml.xml import NS, parse_instant

CLOCK_SKEW = 180  # seconds of clock difference tolerated, Shibboleth SP's default
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
REMOTE_USER = "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"  # eduPersonPrincipalName


class SPRefusal(ValueError):
    """The SP will not accept this response; the message is the reason shown to the user."""


@dataclass(frozen=True)
class Expected:
    idp: str
    audience: str
    acs_url: str
    request_id: str


def _within(not_before: str | None, not_on_or_after: str | None, now: float, what: str) -> None:
    start, end = parse_instant(not_before), parse_instant(not_on_or_after)
    if start is not None and now + CLOCK_SKEW < start:
        raise SPRefusal(f"{what} is not yet valid")
    if end is not None and now - CLOCK_SKEW >= end:
        raise SPRefusal(f"{what} has expired")


def validate_response(xml: bytes, verifier: Verifier, expected: Expected,
                      now: float | None = None) -> tuple[str, dict[str, str]]:
    """(REMOTE_USER, attributes by friendly name) of a response that passes every check."""
    now = time.time() if now is None else now
    try:
        response = verifier.verify(xml)
    except SignatureError as exc:
        raise SPRefusal(f"signature not valid: {exc}") from exc
    if response.tag != f"{{{NS['samlp']}}}Response":
        raise SPRefusal("the signature does not cover the Response")
    status = response.find("samlp:Status/samlp:StatusCode", NS)
    if status is None or status.get("Value") != SUCCESS:
        raise SPRefusal(f"IdP status {status.get('Value') if status is not None else 'missing'}")
    if response.get("Destination") not in (None, expected.acs_url):
        raise SPRefusal("response destination is not this SP's ACS")
    if response.get("InResponseTo") != expected.request_id:
        raise SPRefusal("InResponseTo does not match the outstanding request")
    if (response.findtext("saml:Issuer", namespaces=NS) or "").strip() != expected.idp:
        raise SPRefusal("response issuer is not the trusted IdP")
    issued = parse_instant(response.get("IssueInstant"))
    if issued is None or abs(now - issued) > CLOCK_SKEW + 300:
        raise SPRefusal("response issue instant is outside the allowed window")
    assertions = response.findall("saml:Assertion", NS)
    if len(assertions) != 1:
        raise SPRefusal(f"expected one assertion, found {len(assertions)}")
    assertion = assertions[0]
    return _check_assertion(assertion, expected, now)


def _check_assertion(assertion: etree._Element, expected: Expected, now: float) -> tuple[str, dict[str, str]]:
    conditions = assertion.find("saml:Conditions", NS)
    if conditions is None:
        raise SPRefusal("assertion has no conditions")
    _within(conditions.get("NotBefore"), conditions.get("NotOnOrAfter"), now, "assertion")
    audiences = [a.text for a in conditions.iterfind("saml:AudienceRestriction/saml:Audience", NS)]
    if expected.audience not in audiences:
        raise SPRefusal("this SP is not in the assertion's audience")
    confirmations = [
        c.find("saml:SubjectConfirmationData", NS)
        for c in assertion.iterfind("saml:Subject/saml:SubjectConfirmation", NS)
        if c.get("Method") == BEARER
    ]
    data = next((d for d in confirmations if d is not None), None)
    if data is None:
        raise SPRefusal("assertion has no bearer subject confirmation")
    if data.get("Recipient") != expected.acs_url or data.get("InResponseTo") != expected.request_id:
        raise SPRefusal("subject confirmation is for another recipient or request")
    _within(None, data.get("NotOnOrAfter"), now, "subject confirmation")
    if assertion.find("saml:AuthnStatement", NS) is None:
        raise SPRefusal("assertion has no authentication statement")
    attributes = {
        (attr.get("FriendlyName") or attr.get("Name")): (attr.findtext("saml:AttributeValue", namespaces=NS) or "")
        for attr in assertion.iterfind("saml:AttributeStatement/saml:Attribute", NS)
    }
    user = next((attr.findtext("saml:AttributeValue", namespaces=NS)
                 for attr in assertion.iterfind("saml:AttributeStatement/saml:Attribute", NS)
                 if attr.get("Name") == REMOTE_USER), None)
    if not user:
        raise SPRefusal("no eduPersonPrincipalName for REMOTE_USER")
    return user, attributes
