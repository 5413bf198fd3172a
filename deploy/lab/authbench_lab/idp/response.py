"""The SAML 2.0 Response the IdP sends: one bearer assertion with a transient NameID and attributes.

Built from a string template (fast, and the shape is fixed), then signed in-process: the Response
is signed, as Shibboleth IdP signs responses by default.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from ..saml.signing import PLACEHOLDER, Signer
from ..saml.xml import NS, instant, new_id

ASSERTION_LIFETIME = 300  # seconds the assertion may be presented, as Shibboleth's default
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
PASSWORD_PROTECTED = "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
TRANSIENT = "urn:oasis:names:tc:SAML:2.0:nameid-format:transient"
URI_NAME_FORMAT = "urn:oasis:names:tc:SAML:2.0:attrname-format:uri"

# LDAP attribute → (SAML attribute name, friendly name), the usual eduPerson/inetOrgPerson OIDs.
RELEASED = {
    "uid": ("urn:oid:0.9.2342.19200300.100.1.1", "uid"),
    "mail": ("urn:oid:0.9.2342.19200300.100.1.3", "mail"),
    "displayName": ("urn:oid:2.16.840.1.113730.3.1.241", "displayName"),
    "givenName": ("urn:oid:2.5.4.42", "givenName"),
    "sn": ("urn:oid:2.5.4.4", "sn"),
}
EPPN = ("urn:oid:1.3.6.1.4.1.5923.1.1.1.6", "eduPersonPrincipalName")


@dataclass(frozen=True)
class Authentication:
    """What the SAML Response asserts about one login."""

    user: str
    attributes: dict[str, str]
    authn_instant: float
    session_index: str


def _attribute(name: str, friendly: str, value: str) -> str:
    return (
        f'<saml:Attribute Name="{name}" FriendlyName="{friendly}" NameFormat="{URI_NAME_FORMAT}">'
        f"<saml:AttributeValue>{escape(value)}</saml:AttributeValue></saml:Attribute>"
    )


def _attribute_statement(user: str, attributes: dict[str, str], scope: str) -> str:
    parts = [_attribute(*EPPN, f"{user}@{scope}")]
    parts += [_attribute(*RELEASED[key], value) for key, value in attributes.items() if key in RELEASED]
    return "<saml:AttributeStatement>" + "".join(parts) + "</saml:AttributeStatement>"


def build_response(
    signer: Signer,
    *,
    issuer: str,
    audience: str,
    acs_url: str,
    in_response_to: str,
    authentication: Authentication,
    scope: str,
) -> bytes:
    now = time.time()
    issued, expires = instant(now), instant(now + ASSERTION_LIFETIME)
    response_id, assertion_id = new_id(), new_id()
    name_id = new_id()
    irt = quoteattr(in_response_to)
    document = f"""<samlp:Response xmlns:samlp="{NS['samlp']}" xmlns:saml="{NS['saml']}" ID="{response_id}" Version="2.0" IssueInstant="{issued}" Destination={quoteattr(acs_url)} InResponseTo={irt}>\
<saml:Issuer>{escape(issuer)}</saml:Issuer>{PLACEHOLDER}\
<samlp:Status><samlp:StatusCode Value="{SUCCESS}"/></samlp:Status>\
<saml:Assertion ID="{assertion_id}" Version="2.0" IssueInstant="{issued}">\
<saml:Issuer>{escape(issuer)}</saml:Issuer>\
<saml:Subject><saml:NameID Format="{TRANSIENT}" NameQualifier={quoteattr(issuer)} SPNameQualifier={quoteattr(audience)}>{name_id}</saml:NameID>\
<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">\
<saml:SubjectConfirmationData Address="127.0.0.1" InResponseTo={irt} NotOnOrAfter="{expires}" Recipient={quoteattr(acs_url)}/>\
</saml:SubjectConfirmation></saml:Subject>\
<saml:Conditions NotBefore="{issued}" NotOnOrAfter="{expires}"><saml:AudienceRestriction><saml:Audience>{escape(audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>\
<saml:AuthnStatement AuthnInstant="{instant(authentication.authn_instant)}" SessionIndex="{authentication.session_index}">\
<saml:AuthnContext><saml:AuthnContextClassRef>{PASSWORD_PROTECTED}</saml:AuthnContextClassRef></saml:AuthnContext>\
</saml:AuthnStatement>\
{_attribute_statement(authentication.user, authentication.attributes, scope)}\
</saml:Assertion></samlp:Response>"""
    return signer.sign(document.encode(), response_id)
