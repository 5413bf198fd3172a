"""Virtual-SP mode: authbench itself is the service provider, so an IdP can be loaded without any SP.

It sends its own AuthnRequest (HTTP-Redirect binding) straight to the IdP's SSO URL, walks the IdP's
pages like any login, and instead of posting the auto-submit form to an ACS (which is never
contacted) consumes the Response in-process: status Success, audience is this SP, InResponseTo is
this request, and optionally the XML signature against the IdP's signing certificate (signxml).
The checks are deliberately few: this measures the IdP, it is not a hardened SP.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote
from xml.sax.saxutils import escape, quoteattr

from cryptography import x509
from lxml import etree
from signxml import XMLVerifier
from signxml.exceptions import SignXMLException

from .forms import PRESETS, LoginFields
from .saml import IDP_SSO, SAML_STATUS_NOT_SUCCESS, SAML_SUCCESS, SP_REFUSED, SSOClient, SSOOutcome, sso_login

DEFAULT_ENTITY_ID = "https://authbench.invalid/sp"
DEFAULT_ACS_URL = "https://authbench.invalid/acs"  # only named, never contacted
DEFAULT_RELAY_STATE = "authbench"
POST_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
NS = {
    "md": "urn:oasis:names:tc:SAML:2.0:metadata",
    "ds": "http://www.w3.org/2000/09/xmldsig#",
    "saml": "urn:oasis:names:tc:SAML:2.0:assertion",
    "samlp": "urn:oasis:names:tc:SAML:2.0:protocol",
}
_RESPONSE_TAG = f"{{{NS['samlp']}}}Response"
_ASSERTION_TAG = f"{{{NS['saml']}}}Assertion"
# No entities, no network: a SAML message is input from somebody else.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


def load_idp_certificate(path: str | Path, entity_id: str | None = None) -> x509.Certificate:
    """The IdP's signing certificate from a PEM file, or from IdP metadata (the first signing key)."""
    data = Path(path).read_bytes()
    if b"-----BEGIN CERTIFICATE-----" in data:
        return x509.load_pem_x509_certificate(data)
    root = etree.fromstring(data, _PARSER)
    for descriptor in root.iter(f"{{{NS['md']}}}IDPSSODescriptor"):
        entity = descriptor.getparent()
        if entity_id and entity is not None and entity.get("entityID") != entity_id:
            continue
        for key in descriptor.iterfind("md:KeyDescriptor", NS):
            text = key.findtext(".//ds:X509Certificate", namespaces=NS) if key.get("use") in (None, "signing") else None
            if text:
                return x509.load_der_x509_certificate(base64.b64decode("".join(text.split())))
    raise ValueError(f"no IdP signing certificate in {path}")


def _instant() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class VirtualSP:
    idp_sso_url: str  # the IdP's HTTP-Redirect SSO endpoint
    entity_id: str = DEFAULT_ENTITY_ID
    acs_url: str = DEFAULT_ACS_URL
    idp_certificate: str | None = None  # PEM file or IdP metadata; required with verify_signature
    verify_signature: bool = False
    relay_state: str = DEFAULT_RELAY_STATE
    _certificate: x509.Certificate | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.verify_signature:
            if not self.idp_certificate:
                raise ValueError("verify_signature needs idp_certificate (a PEM file or the IdP's metadata)")
            self._certificate = load_idp_certificate(self.idp_certificate)

    def sp_metadata(self) -> str:
        """SAML metadata to register this SP at the IdP (an HTTP-POST ACS, no keys)."""
        return f"""<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="{NS['md']}" entityID={quoteattr(self.entity_id)}>
  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat>
    <md:AssertionConsumerService Binding="{POST_BINDING}" Location={quoteattr(self.acs_url)} index="0"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>
"""

    def authn_request(self) -> tuple[str, str]:
        """(URL to send the browser to, the request's ID) — a fresh AuthnRequest by HTTP-Redirect."""
        request_id = "_" + os.urandom(16).hex()
        xml = (
            f'<samlp:AuthnRequest xmlns:samlp="{NS["samlp"]}" xmlns:saml="{NS["saml"]}" ID="{request_id}" '
            f'Version="2.0" IssueInstant="{_instant()}" Destination={quoteattr(self.idp_sso_url)} '
            f'AssertionConsumerServiceURL={quoteattr(self.acs_url)} ProtocolBinding="{POST_BINDING}">'
            f"<saml:Issuer>{escape(self.entity_id)}</saml:Issuer>"
            '<samlp:NameIDPolicy AllowCreate="true"/></samlp:AuthnRequest>'
        )
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)  # raw DEFLATE
        encoded = base64.b64encode(compressor.compress(xml.encode()) + compressor.flush()).decode()
        separator = "&" if "?" in self.idp_sso_url else "?"
        url = f"{self.idp_sso_url}{separator}SAMLRequest={quote(encoded, safe='')}"
        if self.relay_state:
            url += "&RelayState=" + quote(self.relay_state, safe="")
        return url, request_id

    def login(self, client: SSOClient, username: str, password: str, *,
              fields: LoginFields | Iterable[LoginFields] = PRESETS,
              before_credentials: Callable[[SSOClient], None] | None = None) -> SSOOutcome:
        """One complete login at the IdP, ending with this SP's checks of the Response."""
        url, request_id = self.authn_request()
        outcome = sso_login(client, url, username, password, fields=fields, before_credentials=before_credentials,
                            stop_at_response=True, start_step=IDP_SSO)
        if not outcome.ok or outcome.response_form is None:
            return outcome
        form = outcome.response_form
        refusal = None
        if form.action.split("?")[0] != self.acs_url:
            refusal = (SP_REFUSED, f"response posted to {form.action.split('?')[0]}, not this SP's ACS")
        refusal = refusal or self.check_response(form.fields["SAMLResponse"], request_id)
        if refusal is not None:
            outcome.ok, (outcome.reason, outcome.detail) = False, refusal
        return outcome

    def check_response(self, saml_response: str, request_id: str) -> tuple[str, str] | None:
        """None if this SP accepts the (base64) Response to `request_id`, else (reason, detail)."""
        try:
            xml = base64.b64decode(saml_response)
            root = etree.fromstring(xml, _PARSER)
        except (binascii.Error, ValueError, etree.XMLSyntaxError) as exc:
            return SP_REFUSED, f"undecodable response: {exc}"
        signed = root
        if self.verify_signature:
            try:
                signed = XMLVerifier().verify(xml, x509_cert=self._certificate, id_attribute="ID").signed_xml
            except (SignXMLException, etree.XMLSyntaxError) as exc:
                return SP_REFUSED, f"signature not valid: {str(exc).splitlines()[0] if str(exc) else exc!r}"
        # Read only what the signature covers: the Response, or just its Assertion.
        response = signed if signed.tag == _RESPONSE_TAG else root
        assertion = signed if signed.tag == _ASSERTION_TAG else signed.find("saml:Assertion", NS)
        if response.tag != _RESPONSE_TAG:
            return SP_REFUSED, f"not a SAML Response: {response.tag}"
        status = response.find("samlp:Status/samlp:StatusCode", NS)
        status_value = status.get("Value") if status is not None else "missing"
        if status_value != SAML_SUCCESS:
            return SAML_STATUS_NOT_SUCCESS, f"status {status_value}"
        if assertion is None:
            return SP_REFUSED, "no readable assertion (encrypted assertions are not supported)"
        audiences = [a.text for a in assertion.iterfind("saml:Conditions/saml:AudienceRestriction/saml:Audience", NS)]
        if self.entity_id not in audiences:
            return SP_REFUSED, f"audience {audiences} is not this SP ({self.entity_id})"
        if response.get("InResponseTo") != request_id:
            return SP_REFUSED, f"InResponseTo {response.get('InResponseTo')!r} is not this request ({request_id})"
        return None
